/* dir_create DIR FILES THREADS BYTES: creates FILES files of BYTES bytes in
 * DIR (made if missing) the way rnnstate-rewrite saves a new output (an unnamed O_TMPFILE file
 * written, then linked to its name), shared between THREADS threads, with
 * no model work. bench/run.sh times it with 1 and 2 threads beside the batch
 * of small models: what a batch spends creating its outputs in one
 * directory, and how much of that two workers can overlap. */
#define _GNU_SOURCE /* O_TMPFILE, AT_EMPTY_PATH */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir;
static long files, threads;
static size_t bytes;
static char *data;

static atomic_bool empty_path_refused;

/* As the tool's link_unnamed(): linkat(AT_EMPTY_PATH); where that is refused
 * (ENOENT before Linux 6.10 without CAP_DAC_READ_SEARCH), through /proc, from
 * then on. 0, or -1 with errno. */
static int link_open_file(int fd, const char *to)
{
    bool refused = false;
    if (!atomic_load_explicit(&empty_path_refused, memory_order_relaxed)) {
        if (linkat(fd, "", AT_FDCWD, to, AT_EMPTY_PATH) == 0)
            return 0;
        if (errno != ENOENT && errno != EPERM && errno != EINVAL)
            return -1;
        refused = true;
    }
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc_path, AT_FDCWD, to, AT_SYMLINK_FOLLOW) != 0)
        return -1;
    if (refused)
        atomic_store_explicit(&empty_path_refused, true, memory_order_relaxed);
    return 0;
}

static void *create_share(void *arg)
{
    long first = (long)arg;
    char path[4096];
    for (long i = first; i < files; i += threads) {
        snprintf(path, sizeof path, "%s/f%06ld.onnx", dir, i);
        int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
        ssize_t wrote = fd < 0 ? -1 : write(fd, data, bytes);
        if (fd < 0 || wrote < 0 || link_open_file(fd, path) != 0) {
            fprintf(stderr, "dir_create: %s: %s\n", path, strerror(errno));
            exit(1);
        }
        if ((size_t)wrote != bytes) { /* a regular file's write is not short but on a full disk */
            fprintf(stderr, "dir_create: %s: short write (%zd of %zu bytes)\n", path, wrote, bytes);
            exit(1);
        }
        close(fd);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: dir_create DIR FILES THREADS BYTES\n");
        return 2;
    }
    dir = argv[1];
    files = atol(argv[2]);
    threads = atol(argv[3]);
    bytes = (size_t)atol(argv[4]);
    if (files < 1 || threads < 1 || threads > 64 || !(data = calloc(1, bytes ? bytes : 1))) {
        fprintf(stderr, "dir_create: bad arguments\n");
        return 2;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dir_create: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    pthread_t ids[64];
    for (long t = 1; t < threads; t++)
        if (pthread_create(&ids[t], NULL, create_share, (void *)t) != 0) {
            fprintf(stderr, "dir_create: cannot start a thread\n");
            return 1;
        }
    create_share((void *)0);
    for (long t = 1; t < threads; t++)
        pthread_join(ids[t], NULL);
    free(data);
    return 0;
}
