#define _GNU_SOURCE /* O_TMPFILE, linkat */
/* Atomic files: rnnstate_model_save_file() and what killed runs left.
 *
 * Saving to a file is atomic. The model is written to an unnamed file
 * (O_TMPFILE) in the target directory and, when nothing is at the target,
 * linked there in one step: a process killed at any moment leaves nothing
 * behind. Replacing a file takes a temporary name and a rename(); a process
 * killed between the two leaves that name, which the next run into the
 * directory removes (rnnstate_remove_stale_temp_files). Where O_TMPFILE is
 * not supported, a named temporary file is used and removed on failure. A
 * file is not "written" until its directory entry is synced too (with
 * rnnstate_save_options.sync). The library changes no process-wide state:
 * no umask(), no signal mask; the caller may ask a save to stop through
 * rnnstate_save_options.cancel. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "model/atomic_file.h"
#include "model/external_data.h"
#include "model/external_files.h"
#include "model/model_write.h"
#include "options.h"

/* Temporary files are named TEMP_PREFIX "PID-RANDOM": short whatever the
 * target's name (a target name of NAME_MAX bytes still works), and telling
 * a later run which process made them (rnnstate_remove_stale_temp_files). */
#define TEMP_PREFIX ".rnnstate.tmp-"

char *directory_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    char *dir = strdup(dirname(copy));
    free(copy);
    return dir;
}

/* A fresh temporary name in dir (the target's directory, so that rename()
 * stays within one file system and is atomic). */
char *temp_name_in(const char *dir)
{
    unsigned char random_bytes[6];
    if (getrandom(random_bytes, sizeof random_bytes, GRND_NONBLOCK) != sizeof random_bytes) {
        /* no entropy yet (early boot): a clock is enough, EEXIST retries */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t mix = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)now.tv_sec;
        memcpy(random_bytes, &mix, sizeof random_bytes);
    }
    size_t need = strlen(dir) + sizeof TEMP_PREFIX + 48;
    char *tmp = malloc(need);
    if (tmp)
        snprintf(tmp, need, "%s/" TEMP_PREFIX "%ld-%02x%02x%02x%02x%02x%02x", dir, (long)getpid(),
                 random_bytes[0], random_bytes[1], random_bytes[2], random_bytes[3],
                 random_bytes[4], random_bytes[5]);
    return tmp;
}

/* What is at the target path now. */
typedef struct target {
    bool replaced;  /* a regular file (or a symbolic link to one) is replaced */
    struct stat st; /* its mode and owner, kept */
} target;

/* The replaced file's owner (where this process may set it: root, or a
 * group it belongs to) and mode go to the new file, so that a private model
 * stays private. chown() first: it clears set-user-ID bits. */
static int keep_owner_and_mode(int fd, const struct stat *was)
{
    struct stat now;
    if (fstat(fd, &now) == 0 && (now.st_uid != was->st_uid || now.st_gid != was->st_gid) &&
        fchown(fd, was->st_uid, was->st_gid) != 0 && now.st_gid != was->st_gid &&
        fchown(fd, (uid_t)-1, was->st_gid) != 0) {
        /* not permitted: the file keeps this process's owner, and the mode below */
    }
    return fchmod(fd, was->st_mode & 07777) == 0 ? 0 : errno;
}

/* The names of the extended attributes of `path` (a NUL-separated list of
 * *size bytes, malloc'd; NULL with *size 0 when it has none or its file
 * system keeps none); false with errno on failure. */
static bool list_xattrs(const char *path, char **names, ssize_t *size)
{
    *names = NULL;
    *size = 0;
    for (int attempt = 0; attempt < 8; attempt++) { /* the list may grow meanwhile */
        ssize_t n = listxattr(path, NULL, 0);
        if (n < 0)
            return errno == ENOTSUP;
        if (n == 0)
            return true;
        char *buf = malloc((size_t)n);
        if (!buf) {
            errno = ENOMEM;
            return false;
        }
        ssize_t got = listxattr(path, buf, (size_t)n);
        if (got >= 0) {
            *names = buf;
            *size = got;
            return true;
        }
        free(buf);
        if (errno != ERANGE)
            return false;
    }
    errno = ERANGE;
    return false;
}

/* Gives the new file the value of the replaced file's attribute `name`;
 * 0 or an errno. A value the new file already has (an SELinux label the
 * policy gave it) counts as kept. */
static int keep_xattr(int fd, const char *path, const char *name)
{
    ssize_t n = getxattr(path, name, NULL, 0);
    if (n < 0)
        return errno == ENODATA ? 0 : errno; /* removed meanwhile */
    char *value = malloc(n ? (size_t)n : 1), *now = malloc(n ? (size_t)n : 1);
    int e = 0;
    if (!value || !now)
        e = ENOMEM;
    else if ((n = getxattr(path, name, value, (size_t)n)) < 0)
        e = errno;
    else if (fsetxattr(fd, name, value, (size_t)n, 0) != 0) {
        e = errno;
        if (fgetxattr(fd, name, now, (size_t)n) == n && !memcmp(now, value, (size_t)n))
            e = 0;
    }
    free(value);
    free(now);
    return e;
}

/* The replaced file's extended attributes go to the new file, POSIX ACLs
 * (system.posix_acl_access) among them: without its ACL a file whose
 * owning group had no access would give that group the ACL's mask, and
 * named users would lose theirs. Called after the mode is set (setting the
 * ACL sets the group bits to its mask, as they were). Where one cannot be
 * kept, the replace is refused (-1, job->status) with a message naming it. */
static int keep_xattrs(model_write_job *job, int fd)
{
    char *names;
    ssize_t size;
    if (!list_xattrs(job->path, &names, &size))
        return errno;
    int e = 0;
    const char *failed = NULL;
    for (const char *name = names; !e && names && name < names + size; name += strlen(name) + 1)
        if ((e = keep_xattr(fd, job->path, name)) != 0)
            failed = name;
    if (failed) {
        job->status = set_error(job->err, RNNSTATE_ERR_IO,
                                "%s: not replaced: its extended attribute '%s' cannot be kept "
                                "(%s); the file is as it was",
                                job->path, failed, strerror(e));
        e = -1;
    }
    free(names);
    return e;
}

/* A complete temporary file is made ready to take the target's place: the
 * replaced file's owner, mode and extended attributes (ACLs), fsync() when
 * asked, the caller's verification. Returns an errno, or -1 with
 * job->status. */
static int finish_file(model_write_job *job, int fd, const target *t)
{
    const rnnstate_save_options *o = job->options;
    int e = t->replaced ? keep_owner_and_mode(fd, &t->st) : 0;
    if (!e && t->replaced)
        e = keep_xattrs(job, fd);
    if (!e && o->sync && fsync(fd) != 0)
        e = errno;
    if (!e && o->verify) {
        if (lseek(fd, 0, SEEK_SET) != 0)
            return errno;
        job->status = o->verify(fd, job->path, o->verify_arg, job->err);
        if (job->status != RNNSTATE_OK)
            return -1;
    }
    if (!e && o->cancel && *o->cancel)
        e = ECANCELED;
    return e;
}

/* With --sync (options->sync), the name linkat() or rename() just made is
 * made durable too: until the directory is fsync()ed, a crash of the
 * machine may lose a new file's name (ext4 and others), or keep the old
 * file under a replaced one. A file system that cannot fsync a directory
 * (fsync() fails with EINVAL: some FUSE and network file systems) makes
 * the name as durable as it makes it; that is not an error. Returns 0 or
 * an errno. */
static int sync_directory(const rnnstate_save_options *o, const char *dir)
{
    if (!o->sync)
        return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    close(fd);
    return e;
}

/* Set once linkat(AT_EMPTY_PATH) was refused and /proc served instead. */
static atomic_bool empty_path_refused;

/* Names the unnamed file fd at `to` (never replacing anything there); 0 or
 * an errno. linkat(AT_EMPTY_PATH) names the open file itself, without the
 * walk through /proc that /proc/self/fd/N costs each time; kernels before
 * 6.10 allow it only with CAP_DAC_READ_SEARCH and refuse others with ENOENT.
 * Then the file is named through /proc, from then on. */
static int link_unnamed(int fd, const char *to)
{
    int refused = 0;
    if (!atomic_load_explicit(&empty_path_refused, memory_order_relaxed)) {
        if (linkat(fd, "", AT_FDCWD, to, AT_EMPTY_PATH) == 0)
            return 0;
        refused = errno;
        if (refused != ENOENT && refused != EPERM && refused != EINVAL)
            return refused;
    }
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc_path, AT_FDCWD, to, AT_SYMLINK_FOLLOW) != 0)
        return errno;
    if (refused)
        atomic_store_explicit(&empty_path_refused, true, memory_order_relaxed);
    return 0;
}

/* Gives the complete unnamed file a temporary name, then renames it over the
 * target. A process killed between the two leaves the temporary name. The
 * file is locked first (nobody else can open it yet), so that while this
 * process holds it its temporary name is never taken for a stale one. */
static int link_and_rename(int fd, const char *dir, const char *path,
                           const rnnstate_save_options *o, bool *unsupported)
{
    (void)flock(fd, LOCK_EX | LOCK_NB);
    for (int attempt = 0; attempt < 64; attempt++) {
        char *tmp = temp_name_in(dir);
        if (!tmp)
            return ENOMEM;
        int e = link_unnamed(fd, tmp);
        if (!e && rename(tmp, path) != 0) {
            e = errno;
            unlink(tmp);
        }
        free(tmp);
        if (e != EEXIST) {
            *unsupported = e == ENOENT || e == EPERM; /* neither AT_EMPTY_PATH nor /proc */
            return e ? e : sync_directory(o, dir);
        }
    }
    return EEXIST;
}

/* Preferred route: an unnamed file (O_TMPFILE) in the target directory, which
 * disappears with the process until it is linked. A new output is linked
 * straight to the target (linkat() fails rather than replace anything); a
 * replaced one goes through link_and_rename(). */
static int write_via_unnamed_file(const char *path, model_write_job *job, const target *t,
                                  bool *unsupported)
{
    *unsupported = false;
    char *dir = directory_of(path);
    int e = 0, fd = -1;
    if (!dir) {
        e = ENOMEM;
        goto done;
    }
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, t->replaced ? 0600 : 0666);
    if (fd < 0) {
        e = errno;
        *unsupported = e == EOPNOTSUPP || e == EISDIR || e == EINVAL;
        goto done;
    }
    if ((e = model_write_to_fd(job, fd)) != 0 || (e = finish_file(job, fd, t)) != 0)
        goto done;
    if (!t->replaced) {
        if ((e = link_unnamed(fd, path)) == 0) {
            if ((e = sync_directory(job->options, dir)) != 0)
                unlink(path); /* a failed save leaves no new file */
            goto done;
        }
        if (e != EEXIST) {
            *unsupported = e == ENOENT || e == EPERM; /* neither AT_EMPTY_PATH nor /proc */
            goto done;
        }
        /* something was created at the target meanwhile: replace it */
    }
    e = link_and_rename(fd, dir, path, job->options, unsupported);
done:
    if (fd >= 0)
        close(fd);
    free(dir);
    return e;
}

/* Creates and locks a new temporary file in dir; *tmp gets its name. */
static int create_named_temp(const char *dir, const target *t, char **tmp, int *fd)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        if (!(*tmp = temp_name_in(dir)))
            return ENOMEM;
        *fd = open(*tmp, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
                   t->replaced ? 0600 : 0666);
        int e = *fd < 0 ? errno : 0;
        struct stat st;
        /* another run may take a file it finds unlocked for a stale one
         * before this one locks it: then start again */
        if (!e && flock(*fd, LOCK_EX | LOCK_NB) == 0 && fstat(*fd, &st) == 0 && st.st_nlink > 0)
            return 0;
        if (*fd >= 0)
            close(*fd);
        free(*tmp);
        *tmp = NULL;
        if (e && e != EEXIST)
            return e;
    }
    return EEXIST;
}

/* Fallback route (no O_TMPFILE): a named temporary file from the start,
 * removed on any failure, and after a request to stop. It stays locked
 * until it is renamed: a duplicate of its descriptor holds the lock (flock
 * locks belong to the open file, not the descriptor) across the close()
 * whose error tells of a failed write on NFS, so that no other run (in
 * another PID namespace, say) takes it for a stale file meanwhile. */
static int write_via_named_file(const char *path, model_write_job *job, const target *t)
{
    char *dir = directory_of(path), *tmp = NULL;
    int fd = -1;
    int e = dir ? create_named_temp(dir, t, &tmp, &fd) : ENOMEM;
    if (e) {
        free(dir);
        return e;
    }
    e = model_write_to_fd(job, fd);
    if (!e)
        e = finish_file(job, fd, t);
    int lock_fd = e ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (!e && lock_fd < 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (lock_fd >= 0)
        close(lock_fd);
    if (e)
        unlink(tmp);
    else if ((e = sync_directory(job->options, dir)) != 0 && !t->replaced)
        unlink(path); /* a failed save leaves no new file */
    free(tmp);
    free(dir);
    return e;
}

/* A device or FIFO (/dev/null, a named pipe) cannot be replaced by a
 * rename: it is written in place. Never through a symbolic link. */
static int write_to_special_file(const char *path, model_write_job *job)
{
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    struct stat st;
    int e = fstat(fd, &st) != 0   ? errno
            : S_ISREG(st.st_mode) ? EAGAIN
                                  : model_write_to_fd(job, fd);
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

static rnnstate_status write_error(const char *path, int e, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: %s", path, strerror(e));
}

/* Decides the route from what is at the target: a directory or a symbolic
 * link to anything but a regular file is refused, a device or FIFO written in
 * place, a regular file (or a link to one, replaced like mv does) replaced
 * keeping its mode, an absent target created. */
static rnnstate_status write_atomically(const char *path, model_write_job *job,
                                        rnnstate_error *err)
{
    struct stat lst;
    target t = { .replaced = false };
    bool unsupported = false;
    int e;
    if (lstat(path, &lst) == 0) {
        bool symlink = S_ISLNK(lst.st_mode);
        bool resolves = symlink ? stat(path, &t.st) == 0 : (t.st = lst, true);
        if (resolves && S_ISDIR(t.st.st_mode))
            return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: is a directory", path);
        if (resolves && symlink && !S_ISREG(t.st.st_mode))
            return set_error(err, RNNSTATE_ERR_IO,
                             "%s: cannot write output: a symbolic link to a device, FIFO or "
                             "socket is not followed (name the device itself)",
                             path);
        if (resolves && !S_ISREG(t.st.st_mode)) {
            e = write_to_special_file(path, job);
            if (e != EAGAIN)
                goto written;
            /* replaced by a regular file meanwhile */
            if (stat(path, &t.st) != 0)
                return write_error(path, errno, err);
        }
        t.replaced = resolves;
    }
    e = write_via_unnamed_file(path, job, &t, &unsupported);
    if (unsupported)
        e = write_via_named_file(path, job, &t);
written:
    if (e < 0)
        return job->status;
    return e ? write_error(path, e, err) : RNNSTATE_OK;
}

void rnnstate_save_options_init(rnnstate_save_options *options)
{
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
    options->sync = false; /* like cp: see rnnstate.h */
}

rnnstate_status rnnstate_model_save_file(const rnnstate_model *model, const char *path,
                                         const rnnstate_save_options *options,
                                         rnnstate_error *err)
{
    rnnstate_save_options o;
    rnnstate_save_options_init(&o);
    rnnstate_status st = options_read(&o, sizeof o, options, "rnnstate_save_options", err);
    if (st != RNNSTATE_OK)
        return st;
    if ((unsigned)o.external_data > RNNSTATE_EXTERNAL_DATA_REFERENCE)
        return set_error(err, RNNSTATE_ERR_ARGUMENT,
                         "rnnstate_save_options: external_data %d is not a mode",
                         (int)o.external_data);
    bool reference = o.external_data == RNNSTATE_EXTERNAL_DATA_REFERENCE;
    relocations r = { 0 };
    if (reference)
        st = relocate_external_data(model, path, &r, err);
    model_write_job job = { .model = model, .proto = relocated_model(model, &r), .options = &o,
                            .path = path, .err = err, .status = RNNSTATE_OK };
    if (st == RNNSTATE_OK) /* after relocating: locations change sizes */
        st = model_write_check(model, job.proto, &job.sizes, err);
    /* the files before the model: a reader that finds the model finds them */
    placed_files placed = { 0 };
    if (st == RNNSTATE_OK && !reference)
        st = place_external_files(model, path, &o, &placed, err);
    if (st == RNNSTATE_OK)
        st = write_atomically(path, &job, err);
    if (st != RNNSTATE_OK)
        unplace_external_files(&placed);
    release_placed_files(&placed);
    model_write_sizes_free(&job.sizes);
    release_relocations(&r);
    return st;
}

/* ---- what killed runs left ------------------------------------------------- */

/* True when `name` is one of our temporary files' names: TEMP_PREFIX, a
 * process id, "-". */
static bool is_temp_name(const char *name)
{
    if (strncmp(name, TEMP_PREFIX, strlen(TEMP_PREFIX)) != 0)
        return false;
    char *end;
    long pid = strtol(name + strlen(TEMP_PREFIX), &end, 10);
    return pid > 0 && *end == '-';
}

/* A temporary file is stale when nothing holds its lock: a save locks its
 * file before it has a name and holds the lock until the file is renamed
 * (both routes). The process id in the name is not asked: a process in
 * another PID namespace (a container) may have a live save under an id
 * that is nobody here, and a run killed as a container's PID 1 leaves a
 * file whose id is always taken. */
size_t rnnstate_remove_stale_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_temp_name(e->d_name))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
            continue;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
        close(fd);
    }
    closedir(d);
    return removed;
}
