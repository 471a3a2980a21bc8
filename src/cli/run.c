/* A run: each job processed (loaded, rewritten, checked, saved, reported),
 * one at a time or on the pool, its results counted and, with --json,
 * streamed as one document; the exit status. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void count_result(const rnnstate_report *report, run_totals *t)
{
    if (!report) {
        t->failed++;
        return;
    }
    switch (rnnstate_report_model_status(report)) {
    case RNNSTATE_MODEL_REWRITTEN: t->rewritten++; break;
    case RNNSTATE_MODEL_ANNOTATED: t->annotated++; break;
    default: t->unchanged++; break;
    }
    for (size_t i = 0; i < report->n_nodes; i++)
        t->skipped_nodes += report->nodes[i].status == RNNSTATE_NODE_SKIPPED;
}

/* The model and report of a run's only job are not freed: the process is
 * about to exit, and freeing a large graph costs as much as a quarter of
 * the run. Kept reachable here so leak checkers do not report them
 * (volatile: a store the program never reads back would otherwise be
 * optimized away). */
static rnnstate_model *volatile model_left_for_exit;
static rnnstate_report *volatile report_left_for_exit;

static void release_report(const run_results *r, rnnstate_report *report)
{
    if (r->n_jobs == 1) /* like its model: about to exit */
        report_left_for_exit = report;
    else
        rnnstate_report_free(report);
}

void add_totals(run_totals *to, const run_totals *from)
{
    to->rewritten += from->rewritten;
    to->annotated += from->annotated;
    to->unchanged += from->unchanged;
    to->failed += from->failed;
    to->skipped_nodes += from->skipped_nodes;
}

/* A job is done: its counts go to *totals (the caller's, so that parallel
 * workers count without a lock). Returns what its JSON entry needs; without
 * --json, nothing: the report is released at once. */
kept_job finish_job(const run_results *r, rnnstate_report *report, const rnnstate_error *err,
                    run_totals *totals)
{
    count_result(report, totals);
    pattern_hits_mark(r->hits, report);
    if (!r->json) {
        release_report(r, report);
        return (kept_job){ NULL, NULL };
    }
    kept_job k = { report, NULL };
    if (!report && !(k.error = strdup(err->message)))
        die_oom();
    return k;
}

/* The job's turn has come, in input order: its JSON entry is written (with
 * --json), and what was kept for it released. */
void write_kept(const run_results *r, const job *j, kept_job *k)
{
    if (!r->json)
        return;
    const rnnstate_model_result entry = { j->input, k->report ? j->output : NULL, k->report,
                                          k->error };
    rnnstate_json_stream_add(r->json, &entry);
    release_report(r, k->report);
    free(k->error);
    *k = (kept_job){ NULL, NULL };
}

/* The job's report as text, with the line saying where its output goes
 * (when it is written to a file, the line is true once it has been). */
static rnnstate_status format_report(const cli *c, const job *j, const char *label,
                                     const rnnstate_report *report, char **text,
                                     rnnstate_error *err)
{
    char *body = rnnstate_report_text(report, label, c->verbose);
    char *where = rnnstate_escape_text(label);
    char *output = rnnstate_escape_text(j->output ? j->output : "");
    size_t size = body && where && output ? strlen(body) + strlen(where) + strlen(output) + 64 : 0;
    *text = size ? malloc(size) : NULL;
    if (*text && !j->output)
        snprintf(*text, size, "%s%s: dry run, nothing written\n", body, where);
    else if (*text && strcmp(j->output, "-") != 0)
        snprintf(*text, size, "%s%s: wrote %s%s\n", body, where, output,
                 c->check ? " (checked)" : "");
    else if (*text)
        snprintf(*text, size, "%s", body);
    if (!*text) {
        snprintf(err->message, sizeof err->message, "%s: out of memory", where ? where : label);
        err->status = RNNSTATE_ERR_NOMEM;
    }
    rnnstate_string_free(body);
    rnnstate_string_free(where);
    rnnstate_string_free(output);
    return *text ? RNNSTATE_OK : RNNSTATE_ERR_NOMEM;
}

/* Processes one job; *report is NULL when it failed (err then says why). */
void process(const cli *c, const job *j, run_state *rs, job_streams out, bool last,
                    rnnstate_report **report, rnnstate_error *err)
{
    FILE *text = out.text;
    rnnstate_model *model = NULL;
    const char *label = strcmp(j->input, "-") ? j->input : "<stdin>";
    rnnstate_status st = load_model(c, j, &model, err);
    if (st == RNNSTATE_OK)
        st = rnnstate_rewrite(model, &c->options, report, err);
    /* checked before anything is written, so a model that fails leaves no
     * output; then again as re-loaded from what was written */
    if (st == RNNSTATE_OK && j->output && c->check)
        st = rnnstate_model_check(model, *report, err);
    /* the report is formatted before anything is written, so that running
     * out of memory for it leaves no output either */
    char *report_text = NULL;
    if (st == RNNSTATE_OK && !c->quiet)
        st = format_report(c, j, label, *report, &report_text, err);
    if (st == RNNSTATE_OK && j->output) {
        output_target at = look_at_output(j->output);
        st = refuse_replacing_an_input(c, j, &at, rs, err);
        if (st == RNNSTATE_OK)
            st = save_model(c, j, &at, model, *report, rs, err);
    }
    if (st == RNNSTATE_OK && report_text)
        fputs(report_text, text);
    free(report_text);
    if (st != RNNSTATE_OK) {
        fprintf(out.errors, "rnnstate-rewrite: %s\n", err->message);
        rnnstate_report_free(*report);
        *report = NULL;
    }
    if (last)
        model_left_for_exit = model;
    else
        rnnstate_model_free(model);
}

/* A report that could not be written (a closed standard output, a full
 * disk) is an error: the caller would otherwise take silence for success.
 * The message says what did happen to the models. `error` is the errno of
 * a failure already seen (the JSON stream's), or 0. */
static bool report_delivered(FILE *stream, const char *what, int error, const run_totals *t)
{
    if (stream != stdout)
        return true; /* nothing to tell about a lost stderr */
    errno = 0;
    if (!error && fflush(stdout) == 0 && !ferror(stdout))
        return true;
    if (!error)
        error = errno;
    fprintf(stderr,
            "rnnstate-rewrite: cannot write the %s to standard output: %s (the models were "
            "processed: %zu rewritten, %zu unchanged, %zu failed)\n",
            what, error ? strerror(error) : "write error", t->rewritten, t->unchanged, t->failed);
    return false;
}

static void run_serial(const cli *c, job *jobs, size_t n_jobs, run_state *rs, FILE *text,
                       run_results *results)
{
    for (size_t i = 0; i < n_jobs; i++) {
        rnnstate_report *report = NULL;
        rnnstate_error err = { 0 };
        process(c, &jobs[i], rs, (job_streams){ text, stderr }, n_jobs == 1, &report, &err);
        kept_job k = finish_job(results, report, &err, &results->totals);
        write_kept(results, &jobs[i], &k);
        /* each model's report whole before the next model's messages, as
         * with -j N: stdout and stderr may be one file (> log 2>&1) */
        fflush(text);
    }
}

int run(const cli *c, job *jobs, size_t n_jobs)
{
    bool model_on_stdout = n_jobs == 1 && jobs[0].output && !strcmp(jobs[0].output, "-");
    FILE *text = c->json || model_on_stdout ? stderr : stdout;
    /* with --json the document's head is written now, its entries as the
     * models are done, and its summary at the end */
    rnnstate_json_stream json;
    pattern_hits hits;
    if (!pattern_hits_init(&hits, &c->options))
        die_oom();
    run_results results = { .n_jobs = n_jobs, .json = c->json ? &json : NULL, .hits = &hits };
    if (c->json)
        rnnstate_json_stream_begin(&json, stdout);
    run_state rs = { .jobs = jobs, .n_jobs = n_jobs };
    rs.made.lock = &rs.lock;
    if (pthread_mutex_init(&rs.lock, NULL) != 0)
        die_oom();
    size_t threads = thread_count(c, jobs, n_jobs);
    if (threads > 1) {
        run_parallel(c, jobs, n_jobs, &rs, text, &results, threads);
    } else {
        run_serial(c, jobs, n_jobs, &rs, text, &results);
    }
    const run_totals t = results.totals;
    if (!c->quiet && n_jobs > 1)
        fprintf(text,
                "rnnstate-rewrite: %zu models: %zu rewritten, %zu annotated, %zu unchanged, "
                "%zu failed\n",
                n_jobs, t.rewritten, t.annotated, t.unchanged, t.failed);
    int status = t.failed ? EXIT_MODEL_FAILED
                 : c->fail_on_skip && t.skipped_nodes ? EXIT_SKIPPED
                                                      : EXIT_OK;
    if (pattern_hits_report(&hits, stderr, c->quiet) && status == EXIT_OK)
        status = EXIT_NO_MATCH;
    pattern_hits_free(&hits);
    int json_error = c->json && !rnnstate_json_stream_end(&json) ? json.error : 0;
    if (!report_delivered(c->json ? stdout : text, c->json ? "JSON report" : "report", json_error,
                          &t))
        status = EXIT_MODEL_FAILED;
    free(rs.inputs);
    list_free(&rs.cleaned_dirs);
    remove_empty_made_dirs(&rs.made);
    pthread_mutex_destroy(&rs.lock);
    return status;
}

