/* rnnstate-rewrite: the command line. It only parses options and calls the
 * library (include/rnnstate.h). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnnstate.h"

enum exit_code {
    EXIT_OK = 0,         /* every model was processed */
    EXIT_MODEL_FAILED = 1, /* at least one model could not be read, rewritten or written */
    EXIT_USAGE = 2       /* bad command line */
};

static const char usage_text[] =
    "Usage: rnnstate-rewrite [OPTIONS] MODEL\n"
    "Expose the hidden state of the RNN, GRU and LSTM nodes of an ONNX model as graph\n"
    "inputs (initial_h, initial_c) and outputs (Y_h, Y_c), so that ONNX Runtime can run\n"
    "it chunk by chunk with the state fed back.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE        write the rewritten model to FILE\n"
    "                           (default: MODEL's stem + .updated.onnx, beside MODEL)\n"
    "  -n, --dry-run            analyse and print the report; write nothing\n"
    "      --state-inputs=MODE  optional (default): state inputs get zero defaults, so\n"
    "                           callers may leave them out; required: plain inputs\n"
    "                           without defaults, for bindings that ignore feeds of\n"
    "                           inputs with defaults (onnxruntime-node, -web, Java)\n"
    "      --json               print the report as JSON on stdout (text goes to stderr)\n"
    "  -q, --quiet              print errors only\n"
    "  -v, --verbose            explain the decision taken for every state slot\n"
    "  -h, --help               show this help and exit\n"
    "  -V, --version            show the version and exit\n"
    "\n"
    "Exit status: 0 success; 1 the model could not be read, rewritten or written;\n"
    "2 usage error.\n"
    "\n"
    "Example:\n"
    "  rnnstate-rewrite denoiser.onnx -o denoiser.stateful.onnx\n";

typedef struct cli {
    const char *input;
    const char *output;
    bool dry_run;
    bool json;
    bool quiet;
    bool verbose;
    rnnstate_options options;
} cli;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "rnnstate-rewrite: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'rnnstate-rewrite --help' for more information.\n");
    return EXIT_USAGE;
}

/* Parses argv into *c; returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, cli *c)
{
    enum { OPT_STATE_INPUTS = 256, OPT_JSON };
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "dry-run", no_argument, NULL, 'n' },
        { "state-inputs", required_argument, NULL, OPT_STATE_INPUTS },
        { "json", no_argument, NULL, OPT_JSON },
        { "quiet", no_argument, NULL, 'q' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    rnnstate_options_init(&c->options);
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":o:nqvhV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'o': c->output = optarg; break;
        case 'n': c->dry_run = true; break;
        case 'q': c->quiet = true; break;
        case 'v': c->verbose = true; break;
        case OPT_JSON: c->json = true; break;
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
        case 'V': printf("rnnstate-rewrite %s\n", RNNSTATE_VERSION_STRING); return EXIT_OK;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("%s", "no model given");
    if (argc - optind > 1)
        return usage_error("one model at a time: unexpected '%s'", argv[optind + 1]);
    c->input = argv[optind];
    return -1;
}

/* MODEL's path without ".onnx", plus ".updated.onnx". */
static char *default_output(const char *input)
{
    size_t n = strlen(input);
    if (n > 5 && !strcmp(input + n - 5, ".onnx"))
        n -= 5;
    char *out = malloc(n + sizeof ".updated.onnx");
    if (out) {
        memcpy(out, input, n);
        strcpy(out + n, ".updated.onnx");
    }
    return out;
}

static int run(const cli *c)
{
    rnnstate_error err = { 0 };
    rnnstate_model *model = NULL;
    rnnstate_report *report = NULL;
    char *owned_output = NULL;
    const char *output = c->output;
    FILE *text = c->json ? stderr : stdout;
    if (!output && !c->dry_run && !(output = owned_output = default_output(c->input))) {
        fprintf(stderr, "rnnstate-rewrite: out of memory\n");
        return EXIT_MODEL_FAILED;
    }
    rnnstate_status st = rnnstate_model_load_file(c->input, &model, &err);
    if (st == RNNSTATE_OK)
        st = rnnstate_rewrite(model, &c->options, &report, &err);
    if (st == RNNSTATE_OK && !c->dry_run)
        st = rnnstate_model_save_file(model, output, &err);
    if (st == RNNSTATE_OK && !c->quiet) {
        rnnstate_report_write_text(report, c->input, c->verbose, text);
        if (c->dry_run)
            fprintf(text, "%s: dry run, nothing written\n", c->input);
        else
            fprintf(text, "%s: wrote %s\n", c->input, output);
    }
    if (st != RNNSTATE_OK)
        fprintf(stderr, "rnnstate-rewrite: %s\n", err.message);
    if (c->json) {
        rnnstate_model_result result = { c->input, st == RNNSTATE_OK && !c->dry_run ? output : NULL,
                                         st == RNNSTATE_OK ? report : NULL,
                                         st == RNNSTATE_OK ? NULL : err.message };
        if (!rnnstate_report_write_json(&result, 1, stdout) && st == RNNSTATE_OK) {
            fprintf(stderr, "rnnstate-rewrite: cannot write the JSON report\n");
            st = RNNSTATE_ERR_IO;
        }
    }
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    free(owned_output);
    return st == RNNSTATE_OK ? EXIT_OK : EXIT_MODEL_FAILED;
}

int main(int argc, char **argv)
{
    cli c = { 0 };
    int status = parse_args(argc, argv, &c);
    return status >= 0 ? status : run(&c);
}
