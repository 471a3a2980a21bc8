/* failing_malloc.so: an LD_PRELOAD shim that makes every malloc() of
 * FAIL_MALLOC_MIN bytes or more (default 1 MiB) return NULL, to test that
 * running out of memory on a large allocation is reported as such.
 *
 *     FAIL_MALLOC_MIN=1048576 LD_PRELOAD=./libfailing_malloc.so prog ...
 *
 * When FAIL_IO_LOG names a file, the first refusal appends "malloc ENOMEM"
 * to it, so that a test can tell the shim took effect. It forwards to
 * glibc's own allocator, so it is for unsanitized programs only (a
 * sanitizer's free() would not know the blocks); it is kept apart from
 * failing_io.so, which sanitized programs preload. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);

static void note_refusal(void)
{
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

void *malloc(size_t n)
{
    static size_t min_size;
    if (!min_size) {
        const char *m = getenv("FAIL_MALLOC_MIN");
        min_size = m && *m ? (size_t)strtoull(m, NULL, 10) : (size_t)1 << 20;
    }
    if (n >= min_size) {
        note_refusal();
        return NULL;
    }
    return __libc_malloc(n);
}
