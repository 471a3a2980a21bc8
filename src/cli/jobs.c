/* Jobs: the MODEL arguments (files, directories, standard input) turned
 * into (input, output) pairs, each output named by -o, -d or the default,
 * and the combinations that cannot work refused before anything is read. */
#define _DEFAULT_SOURCE /* struct dirent's d_type and DT_* */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/array.h"
#include "cli/cli.h"
#include "util/path.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static char *join_path(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    if (!p)
        die_oom();
    return p;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_model_name(const char *name)
{
    return ends_with(name, ".onnx") && !ends_with(name, ".updated.onnx");
}

/* The directory entry's type, where the file system gives it, spares a
 * stat() per file: a listing is the serial part of a batch run. */
static bool is_regular_file(const struct dirent *e, const char *path)
{
    struct stat st;
    if (e->d_type == DT_REG)
        return true;
    if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
        return false;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode); /* a link to a model counts */
}

static bool is_real_directory(const struct dirent *e, const char *path)
{
    struct stat st;
    if (e->d_type != DT_UNKNOWN)
        return e->d_type == DT_DIR;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every *.onnx below dir (sorted, so runs are reproducible). Our own outputs
 * (*.updated.onnx) are left out so that running twice does not stack them. */
static void find_models(const char *dir, bool recursive, string_list *found)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    string_list here = { 0 };
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *path = join_path(dir, e->d_name);
        if (is_model_name(e->d_name) && is_regular_file(e, path)) {
            list_push(&here, path);
        } else if (recursive && is_real_directory(e, path)) {
            find_models(path, true, &here); /* symlinked directories are not followed */
            free(path);
        } else {
            free(path);
        }
    }
    closedir(d);
    if (here.n > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(here.items, here.n, sizeof *here.items, compare_strings);
    for (size_t i = 0; i < here.n; i++)
        list_push(found, here.items[i]);
    free(here.items);
}

/* MODEL's path without ".onnx", plus ".updated.onnx". */
static char *default_output(const char *input)
{
    size_t n = strlen(input);
    if (ends_with(input, ".onnx"))
        n -= 5;
    char *out = malloc(n + sizeof ".updated.onnx");
    if (!out)
        die_oom();
    memcpy(out, input, n);
    strcpy(out + n, ".updated.onnx");
    return out;
}

/* Where a model found below directory `root` goes with -d: the same relative path. */
static char *output_in_dir(const cli *c, const char *root, const char *input)
{
    const char *rel = input;
    if (root) {
        rel = input + strlen(root);
        while (*rel == '/')
            rel++;
    } else if (strrchr(input, '/')) {
        rel = strrchr(input, '/') + 1;
    }
    return join_path(c->output_dir, rel);
}

static void add_job(job **jobs, size_t *n, char *input, char *output)
{
    job *grown = owned_array_grow(*jobs, *n, sizeof *grown);
    if (!grown)
        die_oom();
    grown[(*n)++] = (job){ input, output };
    *jobs = grown;
}

static char *output_for(const cli *c, const char *root, const char *input)
{
    if (c->dry_run)
        return NULL;
    if (c->output)
        return xstrdup(c->output);
    if (c->output_dir)
        return output_in_dir(c, root, input);
    return !strcmp(input, "-") ? xstrdup("-") : default_output(input);
}

/* Two models for one output file, however its path is spelled (job_paths.h):
 * a usage error, found before anything is written. */
static int refuse_shared_output(const job *jobs, size_t n_jobs)
{
    bool found;
    size_t first, second;
    if (n_jobs < 2)
        return -1;
    if (!find_shared_output(jobs, n_jobs, &found, &first, &second))
        die_oom();
    if (!found)
        return -1;
    const char *a = jobs[first].output, *b = jobs[second].output;
    if (!strcmp(a, b))
        return usage_error("two models would be written to %s", a);
    size_t size = strlen(a) + strlen(b) + 64;
    char *both = malloc(size);
    if (!both)
        die_oom();
    snprintf(both, size, "%s and %s, one file", a, b);
    int status = usage_error("two models would be written to %s", both);
    free(both);
    return status;
}

int make_jobs(const cli *c, job **jobs, size_t *n_jobs, size_t *empty_dirs)
{
    struct stat st;
    for (size_t i = 0; i < c->models.n; i++) {
        const char *arg = c->models.items[i];
        if (strcmp(arg, "-") != 0 && stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
            string_list found = { 0 };
            find_models(arg, c->recursive, &found);
            if (found.n == 0) {
                char *dir = shown(arg);
                fprintf(stderr, "rnnstate-rewrite: %s: no *.onnx models found%s\n", dir,
                        c->recursive ? "" : " (use -r to look in subdirectories)");
                rnnstate_string_free(dir);
                (*empty_dirs)++;
            }
            for (size_t f = 0; f < found.n; f++)
                add_job(jobs, n_jobs, found.items[f], output_for(c, arg, found.items[f]));
            free(found.items);
        } else {
            add_job(jobs, n_jobs, xstrdup(arg), output_for(c, NULL, arg));
        }
    }
    size_t stdin_jobs = 0;
    for (size_t i = 0; i < *n_jobs; i++)
        stdin_jobs += !strcmp((*jobs)[i].input, "-");
    if (c->output && *n_jobs > 1)
        return usage_error("%s", "-o names one output: give one MODEL, or use -d DIR");
    if (stdin_jobs > 1 || (stdin_jobs && c->output_dir))
        return usage_error("%s", "standard input (-) is one model: use it alone, with -o");
    for (size_t i = 0; i < *n_jobs && c->json; i++)
        if ((*jobs)[i].output && !strcmp((*jobs)[i].output, "-"))
            return usage_error("%s", "the model and --json both want standard output: give -o FILE "
                                     "or leave out --json");
    return refuse_shared_output(*jobs, *n_jobs);
}

void jobs_free(job *jobs, size_t n_jobs)
{
    for (size_t i = 0; i < n_jobs; i++) {
        free(jobs[i].input);
        free(jobs[i].output);
    }
    free(jobs);
}
