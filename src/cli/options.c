/* The command line's options: --help's text, and argv parsed into a cli. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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
    "      --external-data=MODE for a model whose weights are in external files,\n"
    "                           written into another directory: copy (default):\n"
    "                           each file is copied beside the output, at the same\n"
    "                           relative location; link: hard-linked there (shared\n"
    "                           with the original; a copy across file systems);\n"
    "                           reference: the files stay, the locations point at\n"
    "                           them (only from a directory above them: ONNX\n"
    "                           Runtime reads no file outside the model's directory)\n"
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

/* --external-data's word for a save mode. */
/* A word of an option's closed set of values ("--state-inputs=required"). */
typedef struct word_choice {
    const char *word;
    int value;
} word_choice;

static const word_choice state_input_modes[] = {
    { "optional", RNNSTATE_STATE_INPUTS_OPTIONAL },
    { "required", RNNSTATE_STATE_INPUTS_REQUIRED },
};

static const word_choice external_data_modes[] = {
    { "copy", RNNSTATE_EXTERNAL_DATA_COPY },
    { "link", RNNSTATE_EXTERNAL_DATA_LINK },
    { "reference", RNNSTATE_EXTERNAL_DATA_REFERENCE },
};

/* The value of `text` among `n` choices in *value; false when it is none. */
static bool parse_word(const char *text, const word_choice *choices, size_t n, int *value)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(text, choices[i].word)) {
            *value = choices[i].value;
            return true;
        }
    return false;
}

#define PARSE_WORD(text, choices, value) \
    parse_word(text, choices, sizeof choices / sizeof *choices, value)

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
int parse_args(int argc, char **argv, cli *c)
{
    enum { OPT_STATE_INPUTS = 256, OPT_JSON, OPT_CHECK, OPT_INCLUDE, OPT_EXCLUDE,
           OPT_NAME_TEMPLATE, OPT_FAIL_ON_SKIP, OPT_MAX_MODEL_SIZE, OPT_TO_LAYOUT0,
           OPT_SYNC, OPT_NO_SYNC, OPT_TIME, OPT_NO_CONTEXT_CACHES, OPT_EXTERNAL_DATA };
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
        { "external-data", required_argument, NULL, OPT_EXTERNAL_DATA },
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
        case OPT_STATE_INPUTS: {
            int mode;
            if (!PARSE_WORD(optarg, state_input_modes, &mode))
                return usage_error("--state-inputs takes 'optional' or 'required', not '%s'",
                                   optarg);
            c->options.state_inputs = (rnnstate_state_inputs)mode;
            break;
        }
        case OPT_EXTERNAL_DATA: {
            int mode;
            if (!PARSE_WORD(optarg, external_data_modes, &mode))
                return usage_error("--external-data takes 'copy', 'link' or 'reference', not '%s'",
                                   optarg);
            c->external_data = (rnnstate_external_data)mode;
            break;
        }
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
    /* the decisions show in the JSON report and in -v's text only */
    c->options.no_decisions = !c->json && (!c->verbose || c->quiet);
    return -1;
}

void cli_free(cli *c)
{
    list_free(&c->models);
    list_free(&c->include);
    list_free(&c->exclude);
    list_free(&c->time_names);
    free(c->time_axes);
}
