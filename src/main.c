/* rnnstate-rewrite: the command line. It parses options, turns the arguments
 * into a list of (input, output) jobs, and calls the library for each. The
 * signal policy lives here, not in the library: Ctrl-C, kill or a closed
 * terminal during a save asks the save to stop and remove its temporary
 * file, then takes effect. */
#define _DEFAULT_SOURCE /* struct dirent's d_type and DT_* */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
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

static const char usage_text[] =
    "Usage: rnnstate-rewrite [OPTIONS] MODEL...\n"
    "Expose the hidden state of the RNN, GRU and LSTM nodes of ONNX models as graph\n"
    "inputs (initial_h, initial_c) and outputs (Y_h, Y_c), so that ONNX Runtime can\n"
    "run them chunk by chunk with the state fed back.\n"
    "\n"
    "MODEL is an .onnx file, a directory (every *.onnx in it, except *.updated.onnx),\n"
    "or - for standard input.\n"
    "\n"
    "Output:\n"
    "  -o, --output FILE        write the rewritten model to FILE (one MODEL only;\n"
    "                           - for standard output)\n"
    "  -d, --output-dir DIR     write each model into DIR under its own name,\n"
    "                           mirroring the layout below a directory MODEL\n"
    "                           (default: MODEL's stem + .updated.onnx beside it;\n"
    "                           standard input goes to standard output)\n"
    "  -r, --recursive          look for models in subdirectories too\n"
    "  -n, --dry-run            analyse and report; write nothing\n"
    "      --check              re-load each written model and verify its structure\n"
    "      --sync               fsync each output before it takes its name, and its\n"
    "                           directory after, so that it survives a machine\n"
    "                           crash (default: no fsync, like cp; the output is\n"
    "                           atomic for readers either way, but a machine crash\n"
    "                           soon after may leave a partial file);\n"
    "                           --no-sync is accepted and changes nothing\n"
    "\n"
    "Rewriting:\n"
    "      --state-inputs=MODE  optional (default): state inputs get zero defaults,\n"
    "                           so callers may leave them out (ONNX Runtime C, C++,\n"
    "                           Python, C#); required: plain inputs without defaults,\n"
    "                           the caller passes zeros first (onnxruntime-node and\n"
    "                           -web, ORT Java, which ignore or reject such feeds)\n"
    "      --include GLOB       rewrite only nodes whose name matches GLOB (repeatable)\n"
    "      --exclude GLOB       leave nodes whose name matches GLOB alone (repeatable),\n"
    "                           e.g. a GRU that runs across frequency bins; a pattern\n"
    "                           that matches no node: a warning, exit status 4\n"
    "      --to-layout0         rewrite batch-first (layout=1) recurrent nodes to\n"
    "                           layout 0 between Transposes, which ONNX Runtime can\n"
    "                           run; their state is exposed as [directions,batch,hidden]\n"
    "      --name-template T    names of every input and output the tool adds;\n"
    "                           {op}, {k}, {name}, {slot} (initial_h, initial_c, Y_h,\n"
    "                           Y_c; cache, cache_out for context caches) are replaced\n"
    "                           (default: {op}_{k}_{slot}, e.g. GRU_0_initial_h)\n"
    "      --time INPUT:AXIS    the time axis of a graph input (repeatable); found\n"
    "                           from the recurrent nodes when not given; needed for\n"
    "                           models without recurrent nodes (a TCN)\n"
    "      --no-context-caches  keep recurrent state only: causal convolutions and\n"
    "                           pools along time get no context cache (the model then\n"
    "                           does not stream exactly)\n"
    "\n"
    "Reporting:\n"
    "      --json               print one JSON report on stdout (text goes to stderr)\n"
    "  -q, --quiet              print errors only\n"
    "  -v, --verbose            explain the decision taken for every state slot\n"
    "      --fail-on-skip       exit with status 3 when a recurrent node was skipped\n"
    "  -j, --jobs N             process N models at a time (default: the number of\n"
    "                           CPUs); reports, outputs and their order are those of\n"
    "                           a run with -j 1\n"
    "      --max-model-size N   refuse models larger than N bytes (K, M, G suffixes;\n"
    "                           default and maximum 2G, protobuf's own limit); an\n"
    "                           output that grew past it is still written and checked\n"
    "  -h, --help               show this help and exit\n"
    "  -V, --version            show the version and exit\n"
    "\n"
    "Exit status:\n"
    "  0  every model was processed (also when nothing needed changing)\n"
    "  1  at least one model could not be read, rewritten or written\n"
    "  2  usage error\n"
    "  3  --fail-on-skip was given and some recurrent node was skipped\n"
    "  4  an --include or --exclude pattern matched no recurrent node of any model\n"
    "     (a warning names it; the models were processed all the same)\n"
    "\n"
    "Examples:\n"
    "  rnnstate-rewrite denoiser.onnx -o denoiser.stateful.onnx\n"
    "  rnnstate-rewrite -r models/ -d stateful/ --json > report.json\n"
    "  rnnstate-rewrite --state-inputs=required --exclude '*freq*' vad.onnx\n"
    "  curl -s $URL | rnnstate-rewrite - -o - > model.stateful.onnx\n";

typedef struct string_list {
    char **items;
    size_t n;
} string_list;

typedef struct cli {
    string_list models;
    const char *output;
    const char *output_dir;
    bool recursive, dry_run, check, json, quiet, verbose, fail_on_skip, sync;
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

static void die_oom(void)
{
    fprintf(stderr, "rnnstate-rewrite: out of memory\n");
    exit(EXIT_MODEL_FAILED);
}

static char *xstrdup(const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        die_oom();
    return copy;
}

static void list_push(string_list *l, char *item)
{
    char **grown = owned_array_grow(l->items, l->n, sizeof *grown);
    if (!grown)
        die_oom();
    grown[l->n++] = item;
    l->items = grown;
}

static void list_free(string_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
}

/* `text` (a path, an argument) escaped as the reports print names: a file
 * name from a directory is as untrusted as a model (docs/reliability.md). */
static char *shown(const char *text)
{
    char *escaped = rnnstate_escape_text(text);
    if (!escaped)
        die_oom();
    return escaped;
}

static int usage_error(const char *fmt, const char *arg)
{
    char *escaped = shown(arg);
    fprintf(stderr, "rnnstate-rewrite: ");
    fprintf(stderr, fmt, escaped);
    free(escaped);
    fprintf(stderr, "\nTry 'rnnstate-rewrite --help' for more information.\n");
    return EXIT_USAGE;
}

/* ---- options ------------------------------------------------------------- */

/* "123", "64K", "500M", "2G" (binary multiples); at least 1 byte, at most 2G.
 * *too_large tells a well-formed size past 2G. */
static bool parse_size(const char *text, size_t *bytes, bool *too_large)
{
    *too_large = false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = 0;
    if (end == text || errno || text[0] == '-')
        return false;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (*end || v == 0)
        return false;
    if (v > (RNNSTATE_DEFAULT_MAX_MODEL_BYTES >> shift)) {
        *too_large = true;
        return false;
    }
    *bytes = (size_t)(v << shift);
    return true;
}

/* --time INPUT:AXIS (the input's name may itself contain ':'). */
static bool add_time_axis(cli *c, const char *arg)
{
    const char *colon = strrchr(arg, ':');
    char *end;
    errno = 0;
    long axis = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == arg || end == colon + 1 || *end || errno || axis < 0 || axis > 64)
        return false;
    char *name = xstrdup(arg);
    name[colon - arg] = '\0';
    list_push(&c->time_names, name);
    rnnstate_time_axis *grown = realloc(c->time_axes, (c->n_time_axes + 1) * sizeof *grown);
    if (!grown)
        die_oom();
    c->time_axes = grown;
    grown[c->n_time_axes++] = (rnnstate_time_axis){ name, (size_t)axis };
    return true;
}

/* Parses argv into *c; returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, cli *c)
{
    enum { OPT_STATE_INPUTS = 256, OPT_JSON, OPT_CHECK, OPT_INCLUDE, OPT_EXCLUDE,
           OPT_NAME_TEMPLATE, OPT_FAIL_ON_SKIP, OPT_MAX_MODEL_SIZE, OPT_TO_LAYOUT0,
           OPT_SYNC, OPT_NO_SYNC, OPT_TIME, OPT_NO_CONTEXT_CACHES };
    char *end;
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "output-dir", required_argument, NULL, 'd' },
        { "recursive", no_argument, NULL, 'r' },
        { "dry-run", no_argument, NULL, 'n' },
        { "check", no_argument, NULL, OPT_CHECK },
        { "state-inputs", required_argument, NULL, OPT_STATE_INPUTS },
        { "include", required_argument, NULL, OPT_INCLUDE },
        { "exclude", required_argument, NULL, OPT_EXCLUDE },
        { "name-template", required_argument, NULL, OPT_NAME_TEMPLATE },
        { "json", no_argument, NULL, OPT_JSON },
        { "quiet", no_argument, NULL, 'q' },
        { "verbose", no_argument, NULL, 'v' },
        { "fail-on-skip", no_argument, NULL, OPT_FAIL_ON_SKIP },
        { "max-model-size", required_argument, NULL, OPT_MAX_MODEL_SIZE },
        { "to-layout0", no_argument, NULL, OPT_TO_LAYOUT0 },
        { "sync", no_argument, NULL, OPT_SYNC },
        { "no-sync", no_argument, NULL, OPT_NO_SYNC },
        { "time", required_argument, NULL, OPT_TIME },
        { "no-context-caches", no_argument, NULL, OPT_NO_CONTEXT_CACHES },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    rnnstate_options_init(&c->options);
    rnnstate_limits_init(&c->limits);
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":o:d:j:rnqvhV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'o': c->output = optarg; break;
        case 'd': c->output_dir = optarg; break;
        case 'r': c->recursive = true; break;
        case 'n': c->dry_run = true; break;
        case 'q': c->quiet = true; break;
        case 'v': c->verbose = true; break;
        case OPT_CHECK: c->check = true; break;
        case OPT_JSON: c->json = true; break;
        case OPT_FAIL_ON_SKIP: c->fail_on_skip = true; break;
        case OPT_INCLUDE: list_push(&c->include, xstrdup(optarg)); break;
        case OPT_EXCLUDE: list_push(&c->exclude, xstrdup(optarg)); break;
        case OPT_NAME_TEMPLATE: c->options.name_template = optarg; break;
        case OPT_TO_LAYOUT0: c->options.to_layout0 = true; break;
        case OPT_SYNC: c->sync = true; break;
        case OPT_NO_SYNC: c->sync = false; break; /* the old default's name: accepted */
        case OPT_NO_CONTEXT_CACHES: c->options.context_caches = false; break;
        case OPT_TIME:
            if (!add_time_axis(c, optarg))
                return usage_error("--time takes INPUT:AXIS (an input name and an axis number), "
                                   "not '%s'", optarg);
            break;
        case 'j':
            errno = 0;
            c->jobs = strtol(optarg, &end, 10);
            if (end == optarg || *end || errno || c->jobs < 1 || c->jobs > 1024)
                return usage_error("-j takes a number of models from 1 to 1024, not '%s'", optarg);
            break;
        case OPT_MAX_MODEL_SIZE: {
            bool too_large;
            if (!parse_size(optarg, &c->limits.max_model_bytes, &too_large))
                return too_large ? usage_error("--max-model-size '%s' is more than 2G, the most "
                                               "it can be (protobuf cannot read larger models)",
                                               optarg)
                                 : usage_error("--max-model-size takes a size such as 500M or 2G, "
                                               "not '%s'",
                                               optarg);
            break;
        }
        case OPT_STATE_INPUTS:
            if (!strcmp(optarg, "optional"))
                c->options.state_inputs = RNNSTATE_STATE_INPUTS_OPTIONAL;
            else if (!strcmp(optarg, "required"))
                c->options.state_inputs = RNNSTATE_STATE_INPUTS_REQUIRED;
            else
                return usage_error("--state-inputs takes 'optional' or 'required', not '%s'",
                                   optarg);
            break;
        case 'h': fputs(usage_text, stdout); return EXIT_OK;
        case 'V': printf("rnnstate-rewrite %s\n", rnnstate_version()); return EXIT_OK;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!rnnstate_name_template_valid(c->options.name_template))
        return usage_error("--name-template '%s' must contain {slot} and one of {k} or {name}",
                           c->options.name_template);
    for (int i = optind; i < argc; i++)
        list_push(&c->models, xstrdup(argv[i]));
    c->options.n_include = c->include.n;
    c->options.include = (const char *const *)c->include.items;
    c->options.n_exclude = c->exclude.n;
    c->options.exclude = (const char *const *)c->exclude.items;
    c->options.n_time_axes = c->n_time_axes;
    c->options.time_axes = c->time_axes;
    return -1;
}

/* ---- jobs ---------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        die_oom();
    snprintf(p, n, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", name);
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

/* Turns the MODEL arguments into jobs; returns -1, or a usage exit status. */
static int make_jobs(const cli *c, job **jobs, size_t *n_jobs, size_t *empty_dirs)
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
                free(dir);
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

/* ---- one model ----------------------------------------------------------- */

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

/* The directories a run made for its outputs, in the order made, so that
 * those left empty (every output into them failed) can go at the end. */
typedef struct made_dirs {
    string_list made;
    pthread_mutex_t *lock; /* guards `made` when models are processed in parallel */
} made_dirs;

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
static void remove_empty_made_dirs(made_dirs *md)
{
    for (size_t i = md->made.n; i-- > 0;)
        rmdir(md->made.items[i]);
    list_free(&md->made);
}

/* ---- signals --------------------------------------------------------------- */

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

static void begin_save(void)
{
    atomic_fetch_add(&saving, 1);
}

/* The last save to end lets a held signal take effect; the others, told to
 * stop by the same signal, have removed their temporary files by then. */
static void end_save(void)
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

/* ---- inputs never replaced by accident --------------------------------------- */

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

static int compare_files(const void *a, const void *b)
{
    const input_file *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The inputs' identities, sorted for a binary search per output. Taken the
 * first time an output already exists, not before the run: a batch into a
 * new directory never needs them, and a stat() per input is serial work.
 * (An input that an earlier job of the run has written by then is noted
 * too, which only protects more.) The caller holds rs->lock. */
static void note_inputs_once(run_state *rs)
{
    struct stat st;
    if (rs->inputs_noted)
        return;
    for (size_t i = 0; i < rs->n_jobs; i++) {
        const job *j = &rs->jobs[i];
        if (!strcmp(j->input, "-") || stat(j->input, &st) != 0)
            continue;
        input_file *grown = owned_array_grow(rs->inputs, rs->n_inputs, sizeof *grown);
        if (!grown)
            die_oom();
        grown[rs->n_inputs++] = (input_file){ st.st_dev, st.st_ino, j->input };
        rs->inputs = grown;
    }
    if (rs->n_inputs > 1)
        qsort(rs->inputs, rs->n_inputs, sizeof *rs->inputs, compare_files);
    rs->inputs_noted = true;
}

/* What is at a job's output path, looked up once: whether the output is an
 * input of the run, and whether it is written in place, both ask. In a
 * batch each lookup of a name not yet there is a directory operation that
 * the other workers' file creations wait for. */
typedef struct output_target {
    bool exists;
    struct stat st; /* lstat(): a symbolic link is not followed */
} output_target;

static output_target look_at_output(const char *output)
{
    output_target t = { .exists = false };
    if (strcmp(output, "-") != 0)
        t.exists = lstat(output, &t.st) == 0;
    return t;
}

/* An output that is an input of the run (the same file, however it is
 * reached: -d onto the input's directory, a symbolic link, "..", a hard
 * link) is not written, unless the user named it with -o. */
static rnnstate_status refuse_replacing_an_input(const cli *c, const job *j,
                                                 const output_target *at, run_state *rs,
                                                 rnnstate_error *err)
{
    struct stat st = at->st;
    if (c->output || !at->exists || (S_ISLNK(st.st_mode) && stat(j->output, &st) != 0))
        return RNNSTATE_OK;
    pthread_mutex_lock(&rs->lock);
    note_inputs_once(rs);
    pthread_mutex_unlock(&rs->lock);
    if (!rs->n_inputs)
        return RNNSTATE_OK;
    input_file key = { st.st_dev, st.st_ino, NULL };
    const input_file *same =
        bsearch(&key, rs->inputs, rs->n_inputs, sizeof *rs->inputs, compare_files);
    if (!same)
        return RNNSTATE_OK;
    char *input = shown(j->input), *output = shown(j->output), *other = shown(same->path);
    snprintf(err->message, sizeof err->message,
             "%s: not written: the output %s is the input %s (the same file); only -o rewrites a "
             "model in place",
             input, output, other);
    free(input);
    free(output);
    free(other);
    return err->status = RNNSTATE_ERR_ARGUMENT;
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
    if (isatty(STDOUT_FILENO)) {
        snprintf(err->message, sizeof err->message,
                 "<stdout>: refusing to write a binary model to a terminal");
        return err->status = RNNSTATE_ERR_IO;
    }
    return rnnstate_model_save_fd(model, STDOUT_FILENO, "<stdout>", err);
}

static rnnstate_status save(const cli *c, const job *j, const output_target *at,
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
        char *path = shown(j->output);
        snprintf(err->message, sizeof err->message, "%s: cannot create its directory: %s", path,
                 strerror(errno));
        free(path);
        return err->status = RNNSTATE_ERR_IO;
    }
    if (!in_place)
        clean_output_directory(j->output, rs);
    rnnstate_save_options options;
    rnnstate_save_options_init(&options);
    options.sync = c->sync;
    options.cancel = &stop_signal;
    if (c->check && !in_place) {
        options.verify = verify_written;
        options.verify_arg = &k;
    }
    begin_save();
    st = rnnstate_model_save_file(model, j->output, &options, err);
    end_save();
    return st;
}

static rnnstate_status load(const cli *c, const job *j, rnnstate_model **model,
                            rnnstate_error *err)
{
    if (!strcmp(j->input, "-"))
        return rnnstate_model_load_fd(STDIN_FILENO, "<stdin>", &c->limits, model, err);
    return rnnstate_model_load_file(j->input, &c->limits, model, err);
}

static void count_result(const rnnstate_report *report, run_totals *t)
{
    if (!report) {
        t->failed++;
        return;
    }
    if (report->changed)
        t->rewritten++;
    else if (report->annotated)
        t->annotated++;
    else
        t->unchanged++;
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

static void release_report(const run_results *r, rnnstate_report *report)
{
    if (r->n_jobs == 1) /* like its model: about to exit */
        report_left_for_exit = report;
    else
        rnnstate_report_free(report);
}

static void add_totals(run_totals *to, const run_totals *from)
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
static kept_job finish_job(const run_results *r, rnnstate_report *report,
                           const rnnstate_error *err, run_totals *totals)
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
static void write_kept(const run_results *r, const job *j, kept_job *k)
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

/* Where one job's messages go: the report text, and errors (stderr, or a
 * buffer when models are processed in parallel). */
typedef struct job_streams {
    FILE *text, *errors;
} job_streams;

/* Processes one job; *report is NULL when it failed (err then says why). */
static void process(const cli *c, const job *j, run_state *rs, job_streams out, bool last,
                    rnnstate_report **report, rnnstate_error *err)
{
    FILE *text = out.text;
    rnnstate_model *model = NULL;
    const char *label = strcmp(j->input, "-") ? j->input : "<stdin>";
    rnnstate_status st = load(c, j, &model, err);
    if (st == RNNSTATE_OK)
        st = rnnstate_rewrite(model, &c->options, report, err);
    /* checked before anything is written, so a model that fails leaves no
     * output; then again as re-loaded from what was written */
    if (st == RNNSTATE_OK && j->output && c->check)
        st = rnnstate_model_check(model, *report, err);
    if (st == RNNSTATE_OK && j->output) {
        output_target at = look_at_output(j->output);
        st = refuse_replacing_an_input(c, j, &at, rs, err);
        if (st == RNNSTATE_OK)
            st = save(c, j, &at, model, *report, rs, err);
    }
    if (st == RNNSTATE_OK && !c->quiet) {
        rnnstate_report_write_text(*report, label, c->verbose, text);
        char *where = shown(label), *output = shown(j->output ? j->output : "");
        if (!j->output)
            fprintf(text, "%s: dry run, nothing written\n", where);
        else if (strcmp(j->output, "-") != 0)
            fprintf(text, "%s: wrote %s%s\n", where, output, c->check ? " (checked)" : "");
        free(where);
        free(output);
    }
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

/* ---- many models at a time ----------------------------------------------- */

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
static void run_parallel(pool *p, size_t threads)
{
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
static size_t thread_count(const cli *c, const job *jobs, size_t n_jobs)
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

static int run(const cli *c, job *jobs, size_t n_jobs)
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
        pool p = { .c = c, .jobs = jobs, .n_jobs = n_jobs, .rs = &rs, .text = text,
                   .results = &results };
        run_parallel(&p, threads);
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

int main(int argc, char **argv)
{
    hold_closed_standard_descriptors();
    handle_termination_signals();
    ignore_broken_pipes();
    ignore_file_size_limit_signal();
    cli c = { 0 };
    job *jobs = NULL;
    size_t n_jobs = 0, empty_dirs = 0;
    int status = parse_args(argc, argv, &c);
    if (status < 0 && c.models.n == 0)
        status = usage_error("%s", "no model given");
    if (status < 0)
        status = make_jobs(&c, &jobs, &n_jobs, &empty_dirs);
    if (status < 0) {
        /* a directory without models is an error (a typo in a CI script), but
         * it does not stop the models that were found */
        status = n_jobs ? run(&c, jobs, n_jobs) : EXIT_OK;
        if (empty_dirs && status != EXIT_MODEL_FAILED)
            status = EXIT_MODEL_FAILED;
    }
    for (size_t i = 0; i < n_jobs; i++) {
        free(jobs[i].input);
        free(jobs[i].output);
    }
    free(jobs);
    list_free(&c.models);
    list_free(&c.include);
    list_free(&c.exclude);
    list_free(&c.time_names);
    free(c.time_axes);
    return status;
}
