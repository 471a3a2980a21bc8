/* fdio: reading and writing file descriptors in full, in the manner of
 * git's wrapper.c (read_in_full, pread_in_full, write_in_full). Every
 * read(), pread(), write() and copy_file_range() of the library goes through
 * here, so that one policy covers the ways a system call stops short:
 *
 *  - EINTR (a signal arrived; the command line installs its handlers without
 *    SA_RESTART, so that a blocked write returns) is retried, unless the
 *    caller's `cancel` flag (NULL: none) is set by then: the call fails with
 *    errno ECANCELED, so that a save asked to stop stops soon. The *_in_full
 *    functions also look at the flag before each system call (a flag set
 *    before the call, or between two pieces, is not missed).
 *  - A short count (a pipe, a signal after some bytes) goes on from where it
 *    stopped, unless the cancel flag is set (ECANCELED, as above: a signal
 *    that arrives after some bytes gives a short count, not EINTR), except
 *    in the *_some functions, which return what one call moved (a stream
 *    read without waiting for more).
 *  - End of file ends a read early: the *_in_full reads return fewer bytes
 *    than asked (0 at the end). write() returning 0 is an error, EIO.
 *
 * Each returns the bytes moved, or -1 with errno set (bytes moved before the
 * failure are not reported: the callers give up on the whole transfer). */
#ifndef RNNSTATE_MODEL_FDIO_H
#define RNNSTATE_MODEL_FDIO_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The caller's request to stop (rnnstate_save_options.cancel), or NULL. */
typedef const volatile sig_atomic_t *fdio_cancel;

ssize_t read_in_full(int fd, void *buf, size_t count, fdio_cancel cancel);
ssize_t pread_in_full(int fd, void *buf, size_t count, uint64_t offset, fdio_cancel cancel);
ssize_t write_in_full(int fd, const void *buf, size_t count, fdio_cancel cancel);

/* One read(): what has arrived, up to `count` bytes (0 at the end). */
ssize_t read_some(int fd, void *buf, size_t count, fdio_cancel cancel);
/* One copy_file_range() of up to `count` bytes from in_fd at *in_offset
 * (advanced) to out_fd's offset (0 at the end of the input). */
ssize_t copy_range_some(int in_fd, uint64_t *in_offset, int out_fd, size_t count,
                        fdio_cancel cancel);

#endif
