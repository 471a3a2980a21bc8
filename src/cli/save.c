/* One model's files: loaded from its input, checked (--check) and saved to
 * its output, with the output's directory made (-d) and cleared of stale
 * temporary files first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* ---- output directories ------------------------------------------------------- */

/* True when the directory part of path exists. */
static bool parent_dir_exists(const char *path)
{
    char *copy = xstrdup(path);
    char *slash = strrchr(copy, '/');
    struct stat st;
    bool there = true; /* no directory part: the current directory */
    if (slash) {
        slash[slash == copy] = '\0'; /* "/x" -> "/" */
        there = stat(copy, &st) == 0 && S_ISDIR(st.st_mode);
    }
    free(copy);
    return there;
}

/* mkdir -p for the directory part of path; the directories it makes are
 * noted in *md. A directory that is there is only looked at: mkdir() locks
 * its parent even to fail, and every job of a batch into one directory
 * would wait for the others there. */
static bool make_parent_dirs(const char *path, made_dirs *md)
{
    if (parent_dir_exists(path))
        return true;
    char *copy = xstrdup(path);
    bool ok = true;
    for (char *p = copy + 1; ok && (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        bool made = mkdir(copy, 0777) == 0;
        ok = made || errno == EEXIST;
        if (made) {
            pthread_mutex_lock(md->lock);
            list_push(&md->made, xstrdup(copy));
            pthread_mutex_unlock(md->lock);
        }
        *p = '/';
    }
    free(copy);
    return ok;
}

/* At the end of a run: the directories it made that no output went into
 * (every model for them failed) are removed, the deepest first (each was
 * made after its parent); rmdir() leaves any that holds something. */
void remove_empty_made_dirs(made_dirs *md)
{
    for (size_t i = md->made.n; i-- > 0;)
        rmdir(md->made.items[i]);
    list_free(&md->made);
}

/* Adds `dir` to the sorted list unless it is there; true when it was not
 * (the caller then owns nothing: the list keeps `dir`), false when it was
 * (`dir` is freed). */
static bool add_once(string_list *sorted, char *dir)
{
    size_t lo = 0, hi = sorted->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted->items[mid], dir);
        if (c == 0) {
            free(dir);
            return false;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    list_push(sorted, dir); /* grows the array; then moved into place */
    memmove(sorted->items + lo + 1, sorted->items + lo,
            (sorted->n - 1 - lo) * sizeof *sorted->items);
    sorted->items[lo] = dir;
    return true;
}

/* Temporary files that killed runs left in an output directory go before
 * the first save there, once per directory and run: outputs that alternate
 * between directories (a/m1 b/m1 a/m2 ...) must not rescan them at every
 * model. */
static void clean_output_directory(const char *output, run_state *rs)
{
    char *dir = xstrdup(output);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else
        slash[slash == dir] = '\0'; /* "/x" -> "/" */
    pthread_mutex_lock(&rs->lock);
    if (add_once(&rs->cleaned_dirs, dir))
        rnnstate_remove_stale_temp_files(dir);
    pthread_mutex_unlock(&rs->lock);
}

/* ---- writing and checking ------------------------------------------------------ */

/* --check: the model re-loaded from what was written verifies against the report. */
typedef struct check_job {
    const cli *c;
    const rnnstate_report *report;
} check_job;

static rnnstate_status check_loaded(rnnstate_status st, rnnstate_model *again,
                                    const check_job *k, rnnstate_error *err)
{
    if (st == RNNSTATE_OK)
        st = rnnstate_model_check(again, k->report, err);
    rnnstate_model_free(again);
    return st;
}

/* The limits a written model is re-loaded under: the run's, except the
 * size: --max-model-size bounds what the run reads, and a correct rewrite
 * may grow past it (new inputs, defaults); the writer keeps every output
 * within protobuf's own limit, the loader's default. */
static rnnstate_limits output_limits(const cli *c)
{
    rnnstate_limits l = c->limits;
    l.max_model_bytes = RNNSTATE_DEFAULT_MAX_MODEL_BYTES;
    return l;
}

/* Runs on the complete temporary file, before it takes the output's name. */
static rnnstate_status verify_written(int fd, const char *path, void *arg, rnnstate_error *err)
{
    const check_job *k = arg;
    rnnstate_model *again = NULL;
    rnnstate_limits limits = output_limits(k->c);
    rnnstate_status st = rnnstate_model_load_fd(fd, path, &limits, &again, err);
    return check_loaded(st, again, k, err);
}

/* For outputs written in place (standard output, a device), which cannot be
 * read back: the serialized bytes are checked before anything is written. */
static rnnstate_status verify_in_memory(const rnnstate_model *model, const char *label,
                                        const check_job *k, rnnstate_error *err)
{
    unsigned char *data = NULL;
    size_t size = 0;
    rnnstate_model *again = NULL;
    rnnstate_limits limits = output_limits(k->c);
    rnnstate_status st = rnnstate_model_save_memory(model, &data, &size, err);
    if (st == RNNSTATE_OK)
        st = rnnstate_model_load_memory(data, size, label, &limits, &again, err);
    rnnstate_buffer_free(data);
    return check_loaded(st, again, k, err);
}

/* True when the output is written in place rather than replaced: standard
 * output, or a device or FIFO. */
static bool written_in_place(const char *output, const output_target *at)
{
    mode_t m = at->st.st_mode;
    return !strcmp(output, "-") || (at->exists && !S_ISREG(m) && !S_ISLNK(m) && !S_ISDIR(m));
}

static rnnstate_status write_stdout(const rnnstate_model *model, rnnstate_error *err)
{
    if (isatty(STDOUT_FILENO))
        return job_error(err, RNNSTATE_ERR_IO,
                         "<stdout>: refusing to write a binary model to a terminal");
    return rnnstate_model_save_fd(model, STDOUT_FILENO, "<stdout>", err);
}

rnnstate_status save_model(const cli *c, const job *j, const output_target *at,
                           const rnnstate_model *model, const rnnstate_report *report,
                           run_state *rs, rnnstate_error *err)
{
    check_job k = { c, report };
    bool in_place = written_in_place(j->output, at);
    const char *label = strcmp(j->output, "-") ? j->output : "<stdout>";
    rnnstate_status st = RNNSTATE_OK;
    if (c->check && in_place && (st = verify_in_memory(model, label, &k, err)) != RNNSTATE_OK)
        return st;
    if (!strcmp(j->output, "-"))
        return write_stdout(model, err);
    if (c->output_dir && !make_parent_dirs(j->output, &rs->made)) {
        int error = errno;
        char *path = shown(j->output);
        rnnstate_status st = job_error(err, RNNSTATE_ERR_IO, "%s: cannot create its directory: %s",
                                       path, strerror(error));
        rnnstate_string_free(path);
        return st;
    }
    if (!in_place)
        clean_output_directory(j->output, rs);
    rnnstate_save_options options;
    rnnstate_save_options_init(&options);
    options.sync = c->sync;
    options.external_data = c->external_data;
    options.cancel = save_cancel_flag();
    if (c->check && !in_place) {
        options.verify = verify_written;
        options.verify_arg = &k;
    }
    begin_save();
    st = rnnstate_model_save_file(model, j->output, &options, err);
    end_save();
    return st;
}

rnnstate_status load_model(const cli *c, const job *j, rnnstate_model **model,
                           rnnstate_error *err)
{
    if (!strcmp(j->input, "-"))
        return rnnstate_model_load_fd(STDIN_FILENO, "<stdin>", &c->limits, model, err);
    return rnnstate_model_load_file(j->input, &c->limits, model, err);
}
