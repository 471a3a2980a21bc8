/* failing_malloc.so: an LD_PRELOAD shim that makes allocations fail, to test
 * that running out of memory is reported as such and never changes an
 * answer. Two modes:
 *
 *   size  every malloc() (not calloc or realloc) of FAIL_MALLOC_MIN bytes or more (default 1 MiB)
 *         returns NULL (running out of memory on a large allocation):
 *             LD_PRELOAD=./libfailing_malloc.so prog ...
 *
 *   nth   FAIL_MALLOC_NTH=N: the Nth allocation (malloc, calloc or realloc,
 *         counted from 1 once the program's constructors run, whatever its
 *         size) returns NULL, and only that one; N=0 fails none. Large
 *         allocations then succeed unless FAIL_MALLOC_MIN is also given.
 *         When FAIL_MALLOC_COUNT names a file, the number of allocations
 *         counted is written to it at exit, so that a sweep knows how many
 *         there are to fail (tests/bad_input/oom_sweep.sh):
 *             FAIL_MALLOC_NTH=0 FAIL_MALLOC_COUNT=n LD_PRELOAD=... prog ...
 *             FAIL_MALLOC_NTH=17 LD_PRELOAD=... prog ...
 *
 * When FAIL_IO_LOG names a file, the first refusal appends "malloc ENOMEM"
 * to it, so that a test can tell the shim took effect. It forwards to
 * glibc's own allocator, so it is for unsanitized programs only (a
 * sanitizer's free() would not know the blocks); it is kept apart from
 * failing_io.so, which sanitized programs preload. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static size_t min_size = SIZE_MAX;    /* size mode: refuse this many bytes or more */
static unsigned long long fail_nth;   /* nth mode: refuse this allocation (0: none) */
static unsigned long long n_counted;  /* allocations counted so far */
static int counting;                  /* set once the constructor has run */

/* Called at every refusal: a breakpoint for a debugger, e.g.
 *   gdb -ex 'set startup-with-shell off' -ex 'set breakpoint pending on'
 *       -ex 'set environment LD_PRELOAD=...' -ex 'set environment FAIL_MALLOC_NTH=17'
 *       -ex 'break failing_malloc_refused' -ex run -ex bt --args prog ... */
__attribute__((noinline, visibility("default"))) void failing_malloc_refused(void);
void failing_malloc_refused(void)
{
    __asm__ volatile("");
}

static void note_refusal(void)
{
    failing_malloc_refused();
    static int noted;
    const char *path = getenv("FAIL_IO_LOG");
    if (noted || !path || !*path)
        return;
    noted = 1;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, "malloc ENOMEM\n", 14);
        close(fd);
    }
}

__attribute__((constructor)) static void shim_init(void)
{
    const char *nth = getenv("FAIL_MALLOC_NTH");
    const char *m = getenv("FAIL_MALLOC_MIN");
    if (nth && *nth)
        fail_nth = strtoull(nth, NULL, 10);
    if (m && *m)
        min_size = (size_t)strtoull(m, NULL, 10);
    else if (!(nth && *nth))
        min_size = (size_t)1 << 20;
    counting = nth && *nth;
}

__attribute__((destructor)) static void shim_fini(void)
{
    const char *path = getenv("FAIL_MALLOC_COUNT");
    if (!counting || !path || !*path)
        return;
    counting = 0;
    char line[32];
    int len = snprintf(line, sizeof line, "%llu\n", __atomic_load_n(&n_counted, __ATOMIC_SEQ_CST));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, line, (size_t)len);
        close(fd);
    }
}

/* Whether this allocation of `n` bytes is refused (by size: malloc only,
 * as the size mode always was). */
static int refuse(size_t n, int by_size)
{
    if (counting && __atomic_add_fetch(&n_counted, 1, __ATOMIC_SEQ_CST) == fail_nth) {
        note_refusal();
        return 1;
    }
    if (by_size && n >= min_size) {
        note_refusal();
        return 1;
    }
    return 0;
}

void *malloc(size_t n)
{
    return refuse(n, 1) ? NULL : __libc_malloc(n);
}

void *calloc(size_t count, size_t size)
{
    return refuse(0, 0) ? NULL : __libc_calloc(count, size);
}

void *realloc(void *p, size_t n)
{
    return refuse(n, 0) ? NULL : __libc_realloc(p, n);
}
