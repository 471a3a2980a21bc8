#define _GNU_SOURCE /* copy_file_range */
#include "model/fdio.h"

#include <errno.h>
#include <unistd.h>

/* True when the caller asked to stop; errno is then ECANCELED. */
static int cancelled(fdio_cancel cancel)
{
    if (!cancel || !*cancel)
        return 0;
    errno = ECANCELED;
    return 1;
}

/* After a call failed: true when it is to be made again (EINTR, and the
 * caller has not asked to stop); errno is ECANCELED when it has. */
static int retry(fdio_cancel cancel)
{
    return errno == EINTR && !cancelled(cancel);
}

ssize_t read_some(int fd, void *buf, size_t count, fdio_cancel cancel)
{
    for (;;) {
        ssize_t n = read(fd, buf, count);
        if (n >= 0 || !retry(cancel))
            return n;
    }
}

static ssize_t pread_some(int fd, void *buf, size_t count, uint64_t offset, fdio_cancel cancel)
{
    for (;;) {
        ssize_t n = pread(fd, buf, count, (off_t)offset);
        if (n >= 0 || !retry(cancel))
            return n;
    }
}

ssize_t read_in_full(int fd, void *buf, size_t count, fdio_cancel cancel)
{
    unsigned char *p = buf;
    size_t total = 0;
    while (total < count) {
        if (cancelled(cancel))
            return -1;
        ssize_t n = read_some(fd, p + total, count - total, cancel);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        total += (size_t)n;
    }
    return (ssize_t)total;
}

ssize_t pread_in_full(int fd, void *buf, size_t count, uint64_t offset, fdio_cancel cancel)
{
    unsigned char *p = buf;
    size_t total = 0;
    while (total < count) {
        if (cancelled(cancel))
            return -1;
        ssize_t n = pread_some(fd, p + total, count - total, offset + total, cancel);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        total += (size_t)n;
    }
    return (ssize_t)total;
}

ssize_t write_in_full(int fd, const void *buf, size_t count, fdio_cancel cancel)
{
    const unsigned char *p = buf;
    size_t total = 0;
    while (total < count) {
        if (cancelled(cancel))
            return -1; /* also after a short count: a signal after some bytes is no EINTR */
        ssize_t n = write(fd, p + total, count - total);
        if (n < 0 && retry(cancel))
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO; /* no progress and no reason: do not spin */
            return -1;
        }
        total += (size_t)n;
    }
    return (ssize_t)total;
}

ssize_t copy_range_some(int in_fd, uint64_t *in_offset, int out_fd, size_t count,
                        fdio_cancel cancel)
{
    loff_t in = (loff_t)*in_offset;
    for (;;) {
        ssize_t n = copy_file_range(in_fd, &in, out_fd, NULL, count, 0);
        if (n >= 0 || !retry(cancel)) {
            *in_offset = (uint64_t)in;
            return n;
        }
    }
}
