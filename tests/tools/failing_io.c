/* failing_io.so: an LD_PRELOAD shim that makes file-system calls fail on
 * demand, to test that a failed write never leaves a damaged or temporary
 * file behind.
 *
 *     FAIL_IO="CALL:WHAT[:SKIP][,CALL:WHAT[:SKIP]...]" LD_PRELOAD=./libfailing_io.so prog ...
 *
 * CALL is one of
 *     write     write() and pwrite() on a descriptor above 2 (stdio's own
 *               writes to stdout and stderr go through libc internals and are
 *               never affected)
 *     diskwrite write() and pwrite() on a descriptor above 2 that is not a
 *               memory file (memfd): a full disk under $TMPDIR while memory
 *               still takes the bytes (a rule of its own, counted apart
 *               from `write`)
 *     fsync     fsync() and fdatasync()
 *     close     close() of a descriptor above 2 (the descriptor is closed all
 *               the same, as Linux does)
 *     rename    rename(), renameat(), renameat2()
 *     linkat    linkat() and link()
 *     flink     linkat() with AT_EMPTY_PATH (naming an open file) alone,
 *               e.g. refused with ENOENT as kernels before 6.10 refuse it to
 *               users without CAP_DAC_READ_SEARCH; such a call that passes
 *               this rule is still subject to the linkat one
 *     tmpfile   open()/openat() with O_TMPFILE
 *     create    open()/openat() with O_CREAT (not O_TMPFILE)
 *     mkstemp   mkstemp(), mkostemp(), mkstemps(), mkostemps()
 *     fchmod    fchmod()
 *     fsetxattr fsetxattr() (keeping a replaced file's extended attributes)
 * WHAT is an errno name (ENOSPC, EIO, EACCES, EROFS, EDQUOT, EXDEV, EPERM,
 * EOPNOTSUPP, EINVAL, ENOENT, EISDIR, EEXIST, EINTR, EFBIG, EMFILE) or number, or
 *     sleep     the call first sleeps FAIL_IO_SLEEP seconds (default 3600),
 *               then proceeds: a window in which to kill the process
 *     short     write() writes at most half of what it is asked (at least 1
 *               byte): correct code loops
 * SKIP lets that many matching calls succeed first (default 0); after the
 * first injected failure every further matching call fails too, except
 * EINTR, which is injected once.
 *
 * FAIL_IO_SHORT_WRITES=1 makes every write() above fd 2 short (as `short`)
 * in addition to the rules, e.g. FAIL_IO=write:ENOSPC:3 then fails the
 * fourth write of a file already partly written.
 *
 * FAIL_IO_REALLOC_STATS=FILE makes realloc() always move the block (as ASan,
 * musl and many allocators do; glibc often grows large blocks in place with
 * mremap) and, at exit, appends "realloc_bytes_copied N" to FILE: arrays
 * grown one element at a time then cost quadratic copying, which a test can
 * measure at two sizes.
 *
 * When FAIL_IO_LOG names a file, every injected failure appends a line to it
 * ("write ENOSPC"), so a test can tell that the shim did take effect (it
 * cannot when the program is linked statically or carries its own
 * interceptors, e.g. clang's static ASan runtime).
 *
 * The shim is built without sanitizers. Under a gcc ASan build, run with
 * ASAN_OPTIONS=verify_asan_link_order=0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* dlsym's object pointer as a function pointer, converted the way ISO C
 * allows (-Wpedantic): copied into a generic function pointer, which the
 * caller casts to the real type. */
typedef void (*any_fn)(void);
static any_fn next_fn(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    any_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

enum call { C_WRITE, C_FSYNC, C_CLOSE, C_RENAME, C_LINKAT, C_FLINK, C_TMPFILE, C_CREATE,
            C_MKSTEMP, C_FCHMOD, C_DISKWRITE, C_FSETXATTR, C_COUNT };
static const char *const call_names[C_COUNT] = { "write",   "fsync",   "close",  "rename",
                                                 "linkat",  "flink",   "tmpfile", "create",
                                                 "mkstemp", "fchmod",  "diskwrite", "fsetxattr" };

enum mode { M_NONE, M_ERRNO, M_SLEEP, M_SHORT };

typedef struct rule {
    enum mode mode;
    int err;
    long skip;
    long seen;
    int fired;
} rule;

static rule rules[C_COUNT];
static int configured, short_writes;

static const struct {
    const char *name;
    int value;
} errno_names[] = {
    { "ENOSPC", ENOSPC }, { "EIO", EIO },       { "EACCES", EACCES },   { "EROFS", EROFS },
    { "EDQUOT", EDQUOT }, { "EXDEV", EXDEV },   { "EPERM", EPERM },     { "EOPNOTSUPP", EOPNOTSUPP },
    { "EINVAL", EINVAL }, { "ENOENT", ENOENT }, { "EISDIR", EISDIR },   { "EEXIST", EEXIST },
    { "EINTR", EINTR },   { "EFBIG", EFBIG },   { "EMFILE", EMFILE },   { "ENOMEM", ENOMEM },
};

static void shim_log(const char *call, const char *what)
{
    const char *path = getenv("FAIL_IO_LOG");
    if (!path || !*path)
        return;
    /* raw syscalls through the real functions: this must not recurse */
    static int (*real_open)(const char *, int, ...);
    static ssize_t (*real_write)(int, const void *, size_t);
    static int (*real_close)(int);
    if (!real_open) {
        real_open = (int (*)(const char *, int, ...))next_fn("open");
        real_write = (ssize_t(*)(int, const void *, size_t))next_fn("write");
        real_close = (int (*)(int))next_fn("close");
    }
    int fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s\n", call, what);
    if (n > 0)
        (void)real_write(fd, line, (size_t)n);
    real_close(fd);
}

static void configure(void)
{
    if (configured)
        return;
    configured = 1;
    const char *sw = getenv("FAIL_IO_SHORT_WRITES");
    short_writes = sw && *sw && strcmp(sw, "0") != 0;
    const char *spec = getenv("FAIL_IO");
    if (!spec || !*spec)
        return;
    char *copy = strdup(spec), *save = NULL;
    if (!copy)
        return;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *what = strchr(item, ':');
        if (!what)
            continue;
        *what++ = '\0';
        char *skip = strchr(what, ':');
        if (skip)
            *skip++ = '\0';
        int c;
        for (c = 0; c < C_COUNT && strcmp(call_names[c], item) != 0; c++)
            ;
        if (c == C_COUNT) {
            fprintf(stderr, "failing_io: unknown call '%s' in FAIL_IO\n", item);
            abort();
        }
        rule *r = &rules[c];
        r->skip = skip ? strtol(skip, NULL, 10) : 0;
        if (!strcmp(what, "sleep")) {
            r->mode = M_SLEEP;
        } else if (!strcmp(what, "short")) {
            r->mode = M_SHORT;
        } else {
            r->mode = M_ERRNO;
            r->err = 0;
            for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
                if (!strcmp(errno_names[i].name, what))
                    r->err = errno_names[i].value;
            if (!r->err)
                r->err = atoi(what);
            if (r->err <= 0) {
                fprintf(stderr, "failing_io: unknown errno '%s' in FAIL_IO\n", what);
                abort();
            }
        }
    }
    free(copy);
}

static const char *errno_name(int e)
{
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (errno_names[i].value == e)
            return errno_names[i].name;
    return "errno";
}

/* Decides what to do with this call: M_NONE (proceed), or the rule's mode.
 * For M_ERRNO, errno is set. */
static enum mode decide(enum call c)
{
    configure();
    rule *r = &rules[c];
    if (r->mode == M_NONE)
        return M_NONE;
    if (r->seen++ < r->skip)
        return M_NONE;
    if (r->mode == M_ERRNO && r->err == EINTR && r->fired)
        return M_NONE;
    r->fired = 1;
    switch (r->mode) {
    case M_ERRNO:
        shim_log(call_names[c], errno_name(r->err));
        errno = r->err;
        return M_ERRNO;
    case M_SLEEP: {
        shim_log(call_names[c], "sleep");
        const char *s = getenv("FAIL_IO_SLEEP");
        long secs = s ? strtol(s, NULL, 10) : 3600;
        struct timespec ts = { secs, 0 };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        return M_NONE;
    }
    case M_SHORT:
        shim_log(call_names[c], "short");
        return M_SHORT;
    default:
        return M_NONE;
    }
}

#define REAL(name)                                     \
    static __typeof__(name) *real_##name;              \
    if (!real_##name)                                  \
        real_##name = (__typeof__(name) *)next_fn(#name)

/* True when fd is a memory file (memfd_create), which no disk fills. */
static int is_memory_file(int fd)
{
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    return n >= 7 && !strncmp(target, "/memfd:", 7);
}

/* The diskwrite rule: true when this write to fd fails (errno set). */
static int disk_write_fails(int fd)
{
    configure();
    return rules[C_DISKWRITE].mode != M_NONE && !is_memory_file(fd) &&
           decide(C_DISKWRITE) == M_ERRNO;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write);
    if (fd > 2) {
        if (disk_write_fails(fd))
            return -1;
        enum mode m = decide(C_WRITE);
        if (m == M_ERRNO)
            return -1;
        if ((m == M_SHORT || short_writes) && n > 1)
            n /= 2;
    }
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite);
    if (fd > 2) {
        if (disk_write_fails(fd))
            return -1;
        enum mode m = decide(C_WRITE);
        if (m == M_ERRNO)
            return -1;
        if ((m == M_SHORT || short_writes) && n > 1)
            n /= 2;
    }
    return real_pwrite(fd, buf, n, off);
}

int fsync(int fd)
{
    REAL(fsync);
    if (decide(C_FSYNC) == M_ERRNO)
        return -1;
    return real_fsync(fd);
}

int fdatasync(int fd)
{
    REAL(fdatasync);
    if (decide(C_FSYNC) == M_ERRNO)
        return -1;
    return real_fdatasync(fd);
}

int close(int fd)
{
    REAL(close);
    if (fd > 2 && decide(C_CLOSE) == M_ERRNO) {
        int e = errno;
        real_close(fd);
        errno = e;
        return -1;
    }
    return real_close(fd);
}

int rename(const char *from, const char *to)
{
    REAL(rename);
    if (decide(C_RENAME) == M_ERRNO)
        return -1;
    return real_rename(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
    REAL(renameat);
    if (decide(C_RENAME) == M_ERRNO)
        return -1;
    return real_renameat(fd1, from, fd2, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned flags)
{
    REAL(renameat2);
    if (decide(C_RENAME) == M_ERRNO)
        return -1;
    return real_renameat2(fd1, from, fd2, to, flags);
}

int linkat(int fd1, const char *from, int fd2, const char *to, int flags)
{
    REAL(linkat);
    if ((flags & AT_EMPTY_PATH) && decide(C_FLINK) == M_ERRNO)
        return -1;
    if (decide(C_LINKAT) == M_ERRNO)
        return -1;
    return real_linkat(fd1, from, fd2, to, flags);
}

int link(const char *from, const char *to)
{
    REAL(link);
    if (decide(C_LINKAT) == M_ERRNO)
        return -1;
    return real_link(from, to);
}

static int open_rule(int flags)
{
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return decide(C_TMPFILE) == M_ERRNO;
    if (flags & O_CREAT)
        return decide(C_CREATE) == M_ERRNO;
    return 0;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    REAL(open);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (open_rule(flags))
        return -1;
    return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    REAL(open64);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (open_rule(flags))
        return -1;
    return real_open64(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    REAL(openat);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (open_rule(flags))
        return -1;
    return real_openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    REAL(openat64);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (open_rule(flags))
        return -1;
    return real_openat64(dirfd, path, flags, mode);
}

int mkstemp(char *tmpl)
{
    REAL(mkstemp);
    if (decide(C_MKSTEMP) == M_ERRNO)
        return -1;
    return real_mkstemp(tmpl);
}

int mkstemp64(char *tmpl)
{
    REAL(mkstemp64);
    if (decide(C_MKSTEMP) == M_ERRNO)
        return -1;
    return real_mkstemp64(tmpl);
}

int mkostemp(char *tmpl, int flags)
{
    REAL(mkostemp);
    if (decide(C_MKSTEMP) == M_ERRNO)
        return -1;
    return real_mkostemp(tmpl, flags);
}

int mkstemps(char *tmpl, int suffixlen)
{
    REAL(mkstemps);
    if (decide(C_MKSTEMP) == M_ERRNO)
        return -1;
    return real_mkstemps(tmpl, suffixlen);
}

int mkostemps(char *tmpl, int suffixlen, int flags)
{
    REAL(mkostemps);
    if (decide(C_MKSTEMP) == M_ERRNO)
        return -1;
    return real_mkostemps(tmpl, suffixlen, flags);
}

int fchmod(int fd, mode_t mode)
{
    REAL(fchmod);
    if (decide(C_FCHMOD) == M_ERRNO)
        return -1;
    return real_fchmod(fd, mode);
}

/* ---- realloc statistics ------------------------------------------------- */

static unsigned long long realloc_bytes_copied;
static int realloc_stats = -1;

void *realloc(void *p, size_t n)
{
    REAL(realloc);
    if (realloc_stats < 0) {
        const char *f = getenv("FAIL_IO_REALLOC_STATS");
        realloc_stats = f && *f;
    }
    if (!realloc_stats || !p || n == 0)
        return real_realloc(p, n);
    size_t old = malloc_usable_size(p);
    void *q = malloc(n);
    if (!q)
        return NULL;
    size_t keep = old < n ? old : n;
    memcpy(q, p, keep);
    realloc_bytes_copied += keep;
    free(p);
    return q;
}

__attribute__((destructor)) static void realloc_report(void)
{
    if (realloc_stats <= 0)
        return;
    const char *path = getenv("FAIL_IO_REALLOC_STATS");
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "realloc_bytes_copied %llu\n", realloc_bytes_copied);
    fclose(f);
}

int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags)
{
    REAL(fsetxattr);
    if (decide(C_FSETXATTR) == M_ERRNO)
        return -1;
    return real_fsetxattr(fd, name, value, size, flags);
}
