/* Which file a job's path names, whatever way it is spelled: the command
 * line's one-output-per-model check and the order -j keeps between jobs
 * that hand a file to one another. A path is reduced to a key: the device
 * and inode of the deepest directory of it that exists (symbolic links and
 * ".." resolved by the kernel), then the rest of the path, which does not
 * exist yet and so holds no link, with "." and ".." applied as text. Two
 * paths with the same key name the same directory entry: "a.onnx" and
 * "./a.onnx", "out/link/m.onnx" and "out/sub/m.onnx" when out/link points
 * to out/sub. */
#ifndef RNNSTATE_CLI_JOB_PATHS_H
#define RNNSTATE_CLI_JOB_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* One model of a run: what it reads and what it writes. */
typedef struct job {
    char *input;  /* a path, or "-" */
    char *output; /* a path, "-", or NULL for --dry-run */
} job;

/* Looks for two jobs whose outputs ("-" and NULL aside) name one directory
 * entry. Returns false when memory runs out; otherwise *found tells, and
 * *first < *second are the earliest such pair's job indexes (the earliest
 * job that has a later twin, and that twin). */
bool find_shared_output(const job *jobs, size_t n_jobs, bool *found, size_t *first,
                        size_t *second);

/* For each job, how many jobs (the first wait_for[i] in order) must be done
 * before it starts, so that models processed at once see the files a
 * serial run sees: a job that reads what an earlier job writes waits for
 * it, and a job that writes what earlier jobs read (a symbolic link at its
 * output is read, to tell whether it leads to an input) waits for them.
 * 0: it may start at once. Returns false when memory runs out. */
bool find_job_order(const job *jobs, size_t n_jobs, size_t *wait_for);

#endif
