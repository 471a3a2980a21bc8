/* Many models at a time (-j N): workers take the jobs in input order, and
 * each job's messages and JSON entry are printed in input order as soon as
 * the jobs before it are done, so that a run's output is that of -j 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* What one job printed, held until the jobs before it have been printed. */
typedef struct job_output {
    char *text, *errors;
    size_t text_len, errors_len;
    kept_job kept; /* for its JSON entry */
    bool done;
} job_output;

typedef struct pool {
    const cli *c;
    job *jobs;
    size_t n_jobs;
    run_state *rs;
    FILE *text;
    run_results *results;
    job_output *outputs;
    size_t *wait_for; /* per job: how many jobs must be done before it starts */
    size_t next;      /* the next job to start */
    size_t done;      /* the jobs before it are done */
    size_t printed;   /* the jobs before it have been printed */
    bool printing;    /* a worker is printing (one at a time, in input order) */
    pthread_mutex_t lock;
    pthread_cond_t job_done; /* `done` grew */
} pool;

static void run_buffered(pool *p, size_t i, run_totals *totals)
{
    job_output *o = &p->outputs[i];
    FILE *text = open_memstream(&o->text, &o->text_len);
    FILE *errors = open_memstream(&o->errors, &o->errors_len);
    if (!text || !errors)
        die_oom();
    rnnstate_report *report = NULL;
    rnnstate_error err = { 0 };
    process(p->c, &p->jobs[i], p->rs, (job_streams){ text, errors }, false, &report, &err);
    if (fclose(text) != 0 || fclose(errors) != 0)
        die_oom();
    o->kept = finish_job(p->results, report, &err, totals);
}

/* Prints job i's messages and JSON entry as a serial run would have, then
 * frees them. */
static void print_job_output(pool *p, size_t i)
{
    job_output *o = &p->outputs[i];
    fwrite(o->text, 1, o->text_len, p->text);
    fflush(p->text); /* before the errors: stdout and stderr may be one file */
    fwrite(o->errors, 1, o->errors_len, stderr);
    write_kept(p->results, &p->jobs[i], &o->kept);
    free(o->text);
    free(o->errors);
    o->text = o->errors = NULL;
}

/* Called with the lock held after a job is done: unless another worker is
 * at it, prints every job whose turn has come (outside the lock, so that
 * the others go on working), in input order. */
static void print_ready_jobs(pool *p)
{
    if (p->printing)
        return; /* that worker sees this job done before it stops */
    p->printing = true;
    while (p->printed < p->n_jobs && p->outputs[p->printed].done) {
        size_t i = p->printed++;
        pthread_mutex_unlock(&p->lock);
        print_job_output(p, i);
        pthread_mutex_lock(&p->lock);
    }
    p->printing = false;
}

/* Called with the lock held: job i is done; wakes the jobs waiting for it. */
static void mark_done(pool *p, size_t i)
{
    p->outputs[i].done = true;
    size_t before = p->done;
    while (p->done < p->n_jobs && p->outputs[p->done].done)
        p->done++;
    if (p->done != before)
        pthread_cond_broadcast(&p->job_done);
}

/* Jobs are taken in input order; one that reads (or replaces) a file an
 * earlier job writes (or reads) first waits for it, as a serial run would
 * (find_job_order()). Jobs wait only for earlier ones, so the earliest
 * job not done never waits. */
static void *worker(void *arg)
{
    pool *p = arg;
    run_totals mine = { 0 };
    pthread_mutex_lock(&p->lock);
    while (p->next < p->n_jobs) {
        size_t i = p->next++;
        while (p->done < p->wait_for[i])
            pthread_cond_wait(&p->job_done, &p->lock);
        pthread_mutex_unlock(&p->lock);
        run_buffered(p, i, &mine);
        pthread_mutex_lock(&p->lock);
        mark_done(p, i);
        print_ready_jobs(p);
    }
    add_totals(&p->results->totals, &mine);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Runs the jobs on `threads` threads, this one among them; each job's
 * messages are printed in input order as soon as the jobs before it are
 * done, by whichever worker finishes the job whose turn it is. */
void run_parallel(const cli *c, job *jobs, size_t n_jobs, run_state *rs, FILE *text,
                  run_results *results, size_t threads)
{
    pool whole = { .c = c, .jobs = jobs, .n_jobs = n_jobs, .rs = rs, .text = text,
                   .results = results };
    pool *p = &whole;
    pthread_t *ids = calloc(threads, sizeof *ids);
    p->outputs = calloc(p->n_jobs, sizeof *p->outputs);
    p->wait_for = calloc(p->n_jobs, sizeof *p->wait_for);
    if (!ids || !p->outputs || !p->wait_for || !find_job_order(p->jobs, p->n_jobs, p->wait_for) ||
        pthread_mutex_init(&p->lock, NULL) != 0 || pthread_cond_init(&p->job_done, NULL) != 0)
        die_oom();
    size_t started = 0;
    for (; started + 1 < threads; started++)
        if (pthread_create(&ids[started], NULL, worker, p) != 0)
            break;
    worker(p);
    for (size_t t = 0; t < started; t++)
        pthread_join(ids[t], NULL);
    /* every job is done, and printed by the worker that finished the last
     * one in input order */
    pthread_cond_destroy(&p->job_done);
    pthread_mutex_destroy(&p->lock);
    free(p->wait_for);
    free(p->outputs);
    free(ids);
}

/* -j, or one thread per CPU online; never more than jobs. A model written
 * to standard output is written while the reports of the models before it
 * are printed: such a run stays serial, so that the two never interleave. */
size_t thread_count(const cli *c, const job *jobs, size_t n_jobs)
{
    for (size_t i = 0; i < n_jobs; i++)
        if (jobs[i].output && !strcmp(jobs[i].output, "-"))
            return 1;
    long n = c->jobs;
    if (n < 1) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1)
            n = 1;
    }
    return (size_t)n < n_jobs ? (size_t)n : n_jobs;
}
