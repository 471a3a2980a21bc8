/* The signal policy: the command line's, not the library's. Ctrl-C, kill or
 * a closed terminal during a save asks the save to stop and remove its
 * temporary file, then takes effect. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

/* A termination signal outside a save takes effect at once (nothing is left
 * to clean up); during a save it is held in stop_signal, the save stops and
 * removes its temporary file (rnnstate_save_options.cancel), and then it
 * takes effect. */
static volatile sig_atomic_t stop_signal;
/* saves in progress (several with -j): a lock-free atomic, safe in a handler */
static atomic_int saving;
static const int termination_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void on_termination(int sig)
{
    if (!saving) {
        signal(sig, SIG_DFL);
        raise(sig); /* delivered when the handler returns */
        return;
    }
    stop_signal = sig;
}

/* Signals the caller ignores (nohup, a background job's SIGINT) stay ignored.
 * No SA_RESTART: a blocked write returns, so that a save notices soon. */
static void handle_termination_signals(void)
{
    for (size_t i = 0; i < sizeof termination_signals / sizeof termination_signals[0]; i++) {
        struct sigaction old, sa = { .sa_handler = on_termination };
        sigemptyset(&sa.sa_mask);
        if (sigaction(termination_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(termination_signals[i], &sa, NULL);
    }
}

/* A reader that stops early (`| head`) must not end the run between two
 * models, or in the middle of a save: a write to a closed pipe fails with
 * EPIPE instead, every model is still processed, and the report that could
 * not be delivered is then an error like any other (report_delivered()). */
static void ignore_broken_pipes(void)
{
    signal(SIGPIPE, SIG_IGN);
}

/* A file-size limit (ulimit -f, systemd's LimitFSIZE) smaller than an output
 * must not end the run at the first large model: with SIGXFSZ ignored, the
 * write fails with EFBIG instead, like a full disk, and that model fails
 * (no temporary file left), the others go on. */
static void ignore_file_size_limit_signal(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

void begin_save(void)
{
    atomic_fetch_add(&saving, 1);
}

/* The last save to end lets a held signal take effect; the others, told to
 * stop by the same signal, have removed their temporary files by then. */
void end_save(void)
{
    if (atomic_fetch_sub(&saving, 1) == 1 && stop_signal) {
        signal(stop_signal, SIG_DFL);
        raise(stop_signal);
    }
}

/* A standard descriptor the caller closed is held by /dev/null opened the
 * wrong way round, so that no file this program opens takes its number (a
 * report printed into a model) and reading or writing it still fails with
 * EBADF, as on the closed descriptor. */
static void hold_closed_standard_descriptors(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
            open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY) < 0)
            exit(EXIT_MODEL_FAILED);
}

const volatile sig_atomic_t *save_cancel_flag(void)
{
    return &stop_signal;
}

void signals_init(void)
{
    hold_closed_standard_descriptors();
    handle_termination_signals();
    ignore_broken_pipes();
    ignore_file_size_limit_signal();
}
