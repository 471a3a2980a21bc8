/* rewrite_model: the library in a few lines. Loads an ONNX model, exposes
 * the state of its recurrent layers as required inputs (no defaults), prints
 * the report and the state pairs, and saves the result.
 *
 *   rewrite_model IN.onnx OUT.onnx
 *
 * Build against an installed rnnstate:
 *   cc rewrite_model.c $(pkg-config --cflags --libs rnnstate) -o rewrite_model
 * or with CMake, see CMakeLists.txt beside this file. */
#include <stdio.h>
#include <stdlib.h>

#include <rnnstate.h>

static int fail(const rnnstate_error *err)
{
    fprintf(stderr, "rewrite_model: %s\n", err->message);
    return EXIT_FAILURE;
}

static void print_pairs(const rnnstate_report *report)
{
    for (size_t i = 0; i < report->n_pairs; i++) {
        const rnnstate_state_pair *p = &report->pairs[i];
        printf("pair %s -> %s (%s, rank %zu, %s)\n", p->input, p->output, p->dtype, p->rank,
               p->optional ? "optional" : "required");
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rewrite_model IN.onnx OUT.onnx\n");
        return 2;
    }
    printf("librnnstate %s (compiled against %s)\n", rnnstate_version(), RNNSTATE_VERSION_STRING);

    rnnstate_error err;
    rnnstate_model *model;
    if (rnnstate_model_load_file(argv[1], NULL, &model, &err) != RNNSTATE_OK)
        return fail(&err);

    rnnstate_options options;
    rnnstate_options_init(&options);
    options.state_inputs = RNNSTATE_STATE_INPUTS_REQUIRED;
    rnnstate_report *report;
    if (rnnstate_rewrite(model, &options, &report, &err) != RNNSTATE_OK) {
        rnnstate_model_free(model);
        return fail(&err);
    }
    rnnstate_report_write_text(report, argv[1], false, stdout);
    print_pairs(report);

    rnnstate_save_options save;
    rnnstate_save_options_init(&save);
    save.sync = true; /* fsync before the rename: the output survives a machine crash */
    rnnstate_status st = rnnstate_model_save_file(model, argv[2], &save, &err);
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    if (st != RNNSTATE_OK)
        return fail(&err);
    printf("wrote %s\n", argv[2]);
    return EXIT_SUCCESS;
}
