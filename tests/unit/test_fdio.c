/* fdio (src/model/fdio.c): the one EINTR and short-I/O policy. A signal
 * that interrupts a blocked call is retried, unless the caller's cancel
 * flag is set, which fails the call with ECANCELED; short counts go on
 * where they stopped; end of file ends a read early; write() errors are
 * reported with their errno. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/fdio.h"

static volatile sig_atomic_t signals_seen;
static volatile sig_atomic_t cancel_flag;
static volatile sig_atomic_t cancel_on_signal; /* the handler sets cancel_flag */

static void on_signal(int sig)
{
    (void)sig;
    signals_seen++;
    if (cancel_on_signal)
        cancel_flag = 1;
}

/* SIGUSR1 without SA_RESTART, as the command line's handlers: a blocked
 * call returns EINTR. */
static int setup(void **state)
{
    (void)state;
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    signals_seen = 0;
    cancel_flag = 0;
    cancel_on_signal = 0;
    return 0;
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A thread that signals the test's thread while it is blocked, then
 * (unless asked not to) writes `bytes` into the pipe in small pieces. */
typedef struct helper {
    pthread_t target;
    int fd;
    const char *bytes;
} helper;

static void *signal_then_write(void *arg)
{
    helper *h = arg;
    pause_ms(100);
    pthread_kill(h->target, SIGUSR1);
    pause_ms(100);
    for (size_t i = 0; h->bytes && h->bytes[i]; i++) {
        if (write(h->fd, &h->bytes[i], 1) != 1)
            break;
        pause_ms(5);
    }
    return NULL;
}

/* A read interrupted by a signal goes on (the cancel flag is not set), and
 * bytes arriving one at a time are gathered into one full read. */
static void test_read_in_full_retries_eintr_and_short_reads(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    helper h = { pthread_self(), p[1], "abcdef" };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, signal_then_write, &h), 0);
    char buf[7] = { 0 };
    assert_int_equal(read_in_full(p[0], buf, 6, &cancel_flag), 6);
    pthread_join(t, NULL);
    assert_string_equal(buf, "abcdef");
    assert_true(signals_seen >= 1);
    close(p[0]);
    close(p[1]);
}

/* A pipe filled to the brim, so that the next write() blocks before it
 * writes anything: a signal then makes it fail with EINTR. */
static void fill_pipe(int fd)
{
    char chunk[4096] = { 0 };
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    while (write(fd, chunk, sizeof chunk) > 0)
        ;
    while (write(fd, chunk, 1) > 0)
        ;
    fcntl(fd, F_SETFL, flags);
}

/* Signals the target every 20 ms until *done: a signal that lands between
 * the flag's check and the write() that blocks (the race every
 * check-then-block has; wide under valgrind) is followed by another. */
typedef struct signaller {
    pthread_t target;
    atomic_bool done;
} signaller;

static void *keep_signalling(void *arg)
{
    signaller *g = arg;
    while (!atomic_load(&g->done)) {
        pause_ms(20);
        pthread_kill(g->target, SIGUSR1);
    }
    return NULL;
}

/* A blocked write interrupted by a signal that asks to stop fails at once
 * with ECANCELED: a save asked to stop does not wait for its reader. */
static void test_write_in_full_stops_when_cancelled(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    cancel_on_signal = 1;
    fill_pipe(p[1]);
    signaller g = { .target = pthread_self() };
    atomic_init(&g.done, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, keep_signalling, &g), 0);
    size_t size = (size_t)4 << 20; /* more than a pipe holds: the write blocks */
    char *big = calloc(1, size);
    assert_non_null(big);
    errno = 0;
    ssize_t written = write_in_full(p[1], big, size, &cancel_flag);
    int error = errno;
    atomic_store(&g.done, true);
    pthread_join(t, NULL);
    assert_int_equal(written, -1);
    assert_int_equal(error, ECANCELED);
    free(big);
    close(p[0]);
    close(p[1]);
}

/* A flag set before the call is not missed: nothing is written. */
static void test_write_in_full_sees_a_flag_set_before_it(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    cancel_flag = 1;
    errno = 0;
    assert_int_equal(write_in_full(p[1], "x", 1, &cancel_flag), -1);
    assert_int_equal(errno, ECANCELED);
    int queued = -1;
    ioctl(p[0], FIONREAD, &queued);
    assert_int_equal(queued, 0);
    close(p[0]);
    close(p[1]);
}

/* Without a cancel flag, the same interrupted write goes on to the end. */
static void *drain(void *arg)
{
    int fd = *(int *)arg;
    char buf[65536];
    size_t total = 0;
    ssize_t n;
    pause_ms(300); /* after the signal */
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += (size_t)n;
    return (void *)(uintptr_t)total;
}

static void test_write_in_full_retries_eintr(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    fill_pipe(p[1]);
    int filled = 0;
    ioctl(p[1], FIONREAD, &filled);
    helper h = { pthread_self(), p[1], NULL };
    pthread_t t, d;
    assert_int_equal(pthread_create(&t, NULL, signal_then_write, &h), 0);
    assert_int_equal(pthread_create(&d, NULL, drain, &p[0]), 0);
    size_t size = (size_t)4 << 20;
    char *big = calloc(1, size);
    assert_non_null(big);
    assert_int_equal(write_in_full(p[1], big, size, NULL), (ssize_t)size);
    close(p[1]);
    void *drained;
    pthread_join(t, NULL);
    pthread_join(d, &drained);
    assert_int_equal((uintptr_t)drained, size + (size_t)filled);
    assert_true(signals_seen >= 1);
    free(big);
    close(p[0]);
}

/* End of file ends a read early: the bytes there are, then 0. */
static void test_pread_in_full_stops_at_end_of_file(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    int fd = fileno(f);
    assert_int_equal(write_in_full(fd, "0123456789", 10, NULL), 10);
    char buf[16] = { 0 };
    assert_int_equal(pread_in_full(fd, buf, sizeof buf, 4, NULL), 6);
    assert_memory_equal(buf, "456789", 6);
    assert_int_equal(pread_in_full(fd, buf, sizeof buf, 10, NULL), 0);
    assert_int_equal(pread_in_full(fd, buf, 3, 2, NULL), 3);
    assert_memory_equal(buf, "234", 3);
    fclose(f);
}

/* A write that fails says why: ENOSPC on a full disk, EBADF on a read-only
 * descriptor. */
static void test_write_errors_keep_their_errno(void **state)
{
    (void)state;
    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        errno = 0;
        assert_int_equal(write_in_full(full, "x", 1, NULL), -1);
        assert_int_equal(errno, ENOSPC);
        close(full);
    }
    int ro = open("/dev/null", O_RDONLY);
    assert_true(ro >= 0);
    errno = 0;
    assert_int_equal(write_in_full(ro, "x", 1, NULL), -1);
    assert_int_equal(errno, EBADF);
    char c;
    assert_int_equal(read_some(ro, &c, 1, NULL), 0); /* end of file */
    close(ro);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_read_in_full_retries_eintr_and_short_reads, setup),
        cmocka_unit_test_setup(test_write_in_full_stops_when_cancelled, setup),
        cmocka_unit_test_setup(test_write_in_full_sees_a_flag_set_before_it, setup),
        cmocka_unit_test_setup(test_write_in_full_retries_eintr, setup),
        cmocka_unit_test_setup(test_pread_in_full_stops_at_end_of_file, setup),
        cmocka_unit_test_setup(test_write_errors_keep_their_errno, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
