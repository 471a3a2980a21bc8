/* cli.h: what the command line's files share. The command line sits on the
 * public API (rnnstate.h) only: it parses options (options.c), turns the
 * arguments into jobs and names their outputs (jobs.c, job_paths.c), keeps
 * a run from replacing its own inputs (protect.c), loads, checks and saves
 * each model (save.c) under the signal policy (signals.c), and runs the
 * jobs one at a time or on a pool of workers that prints in input order
 * (run.c, pool.c). main.c parses, calls run() and exits with its status.
 *
 * Ownership: a string_list owns its strings; a job owns its input and
 * output paths; everything a function here returns is the caller's unless
 * it says otherwise. Out of memory ends the program (die_oom()): a
 * command-line run has nothing better to do with it. */
#ifndef RNNSTATE_CLI_H
#define RNNSTATE_CLI_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cli/job_paths.h"
#include "cli/patterns.h"
#include "rnnstate.h"

enum exit_code {
    EXIT_OK = 0,           /* every model was processed */
    EXIT_MODEL_FAILED = 1, /* at least one model could not be read, rewritten or written */
    EXIT_USAGE = 2,        /* bad command line */
    EXIT_SKIPPED = 3,      /* --fail-on-skip, and some recurrent node was skipped */
    EXIT_NO_MATCH = 4      /* an --include or --exclude pattern matched no node */
};

typedef struct string_list {
    char **items;
    size_t n;
} string_list;

typedef struct cli {
    string_list models;
    const char *output;
    const char *output_dir;
    bool recursive, dry_run, check, json, quiet, verbose, fail_on_skip, sync;
    rnnstate_external_data external_data; /* --external-data: copy (default), link, reference */
    long jobs; /* models processed at a time; 0: one per CPU */
    string_list include, exclude;
    string_list time_names;          /* the INPUT parts of --time, owned */
    rnnstate_time_axis *time_axes;   /* --time, in order; names from time_names */
    size_t n_time_axes;
    rnnstate_options options;
    rnnstate_limits limits;
} cli;

typedef struct run_totals {
    size_t rewritten, annotated, unchanged, failed, skipped_nodes;
} run_totals;

/* ---- common.c: memory, lists, messages ---------------------------------------- */

/* Prints "out of memory" and exits with EXIT_MODEL_FAILED. */
_Noreturn void die_oom(void);
char *xstrdup(const char *s);
/* Appends `item` (the list takes it). */
void list_push(string_list *l, char *item);
void list_free(string_list *l);
/* `text` (a path, an argument) escaped as the reports print names; the
 * caller frees it with rnnstate_string_free(). */
char *shown(const char *text);
/* Prints "rnnstate-rewrite: " + fmt (whose one %s is `arg`, escaped) and the
 * hint to --help on stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, const char *arg);
/* Fills *err with `status` and the formatted one-line message (the
 * command line's own failures of a job, like the library's); returns
 * `status`. */
rnnstate_status job_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- options.c ------------------------------------------------------------------ */

/* Parses argv into *c (zeroed by the caller); returns -1 to go on, or an
 * exit status (--help, --version, a usage error). */
int parse_args(int argc, char **argv, cli *c);
/* Frees what parse_args() allocated in *c. */
void cli_free(cli *c);

/* ---- jobs.c ------------------------------------------------------------------------ */

/* Turns the MODEL arguments into jobs (*jobs grows; the caller frees it
 * with jobs_free() whatever the result); *empty_dirs counts the directories
 * without models. Returns -1, or a usage exit status. */
int make_jobs(const cli *c, job **jobs, size_t *n_jobs, size_t *empty_dirs);
void jobs_free(job *jobs, size_t n_jobs);

/* ---- signals.c ---------------------------------------------------------------------- */

/* The process-wide policy, set once at start: closed standard descriptors
 * held, termination signals held during saves, SIGPIPE and SIGXFSZ
 * ignored. */
void signals_init(void);
/* Set by a termination signal during a save: the save's cancel flag. */
const volatile sig_atomic_t *save_cancel_flag(void);
/* Around every save: a held signal takes effect when the last save ends. */
void begin_save(void);
void end_save(void);

/* ---- what a run shares between its jobs (run.c) ------------------------------------- */

/* The directories a run made for its outputs, in the order made, so that
 * those left empty (every output into them failed) can go at the end. */
typedef struct made_dirs {
    string_list made;
    pthread_mutex_t *lock; /* guards `made` when models are processed in parallel */
} made_dirs;

typedef struct input_file {
    dev_t dev;
    ino_t ino;
    const char *path;
} input_file;

typedef struct run_state {
    const job *jobs;
    size_t n_jobs;
    bool inputs_noted;  /* inputs is filled: the first time an output was already there */
    input_file *inputs; /* every input of the run that is a file */
    size_t n_inputs;
    string_list cleaned_dirs; /* directories cleared of stale temporary files, sorted */
    made_dirs made;           /* directories made for outputs (-d) */
    pthread_mutex_t lock; /* guards the above when models are processed in parallel */
} run_state;

/* ---- protect.c: inputs never replaced by accident ------------------------------------ */

/* What is at a job's output path, looked up once: whether the output is an
 * input of the run, and whether it is written in place, both ask. In a
 * batch each lookup of a name not yet there is a directory operation that
 * the other workers' file creations wait for. */
typedef struct output_target {
    bool exists;
    struct stat st; /* lstat(): a symbolic link is not followed */
} output_target;

output_target look_at_output(const char *output);
/* RNNSTATE_ERR_ARGUMENT (*err says why) when the job's output is an input
 * of the run and was not named with -o. */
rnnstate_status refuse_replacing_an_input(const cli *c, const job *j, const output_target *at,
                                          run_state *rs, rnnstate_error *err);

/* ---- save.c: loading, checking and saving one model ----------------------------------- */

rnnstate_status load_model(const cli *c, const job *j, rnnstate_model **model,
                           rnnstate_error *err);
/* Writes the model to the job's output (with --check, verified first). */
rnnstate_status save_model(const cli *c, const job *j, const output_target *at,
                           const rnnstate_model *model, const rnnstate_report *report,
                           run_state *rs, rnnstate_error *err);
/* At the end of a run: removes the directories it made that stayed empty. */
void remove_empty_made_dirs(made_dirs *md);

/* ---- run.c: one model, and a run's results --------------------------------------------- */

/* What the JSON report needs of a job until its entry is written: its
 * report, or why it failed. */
typedef struct kept_job {
    rnnstate_report *report;
    char *error;
} kept_job;

/* What a run keeps of its jobs: their counts, and with --json the document
 * being written, an entry per job in input order as soon as the jobs
 * before it are done. A report is freed once it is counted (without
 * --json) or written (with it), so that a batch's memory does not grow
 * with its number of models. */
typedef struct run_results {
    size_t n_jobs;
    rnnstate_json_stream *json; /* with --json, else NULL */
    run_totals totals;
    pattern_hits *hits;
} run_results;

/* Where one job's messages go: the report text, and errors (stderr, or a
 * buffer when models are processed in parallel). */
typedef struct job_streams {
    FILE *text, *errors;
} job_streams;

/* Processes one job; *report is NULL when it failed (err then says why).
 * `last`: the run's last job, whose model is left for the exit. */
void process(const cli *c, const job *j, run_state *rs, job_streams out, bool last,
             rnnstate_report **report, rnnstate_error *err);
/* A job is done: its counts go to *totals. Returns what its JSON entry
 * needs (nothing without --json). */
kept_job finish_job(const run_results *r, rnnstate_report *report, const rnnstate_error *err,
                    run_totals *totals);
/* The job's turn has come, in input order: its JSON entry is written (with
 * --json), and what was kept for it released. */
void write_kept(const run_results *r, const job *j, kept_job *k);
void add_totals(run_totals *to, const run_totals *from);
/* Processes every job and prints the reports; returns the exit status. */
int run(const cli *c, job *jobs, size_t n_jobs);

/* ---- pool.c: many models at a time ------------------------------------------------------- */

/* -j, or one thread per CPU online; never more than jobs; 1 when a model
 * goes to standard output. */
size_t thread_count(const cli *c, const job *jobs, size_t n_jobs);
/* Runs the jobs on `threads` threads, printing each job's messages and
 * JSON entry in input order. */
void run_parallel(const cli *c, job *jobs, size_t n_jobs, run_state *rs, FILE *text,
                  run_results *results, size_t threads);

#endif
