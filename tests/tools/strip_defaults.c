/* strip-defaults IN OUT NAME...: writes a copy of IN without the initializers
 * NAME... (the defaults of state inputs).
 *
 * A test tool: onnxruntime-node silently ignores a feed for a graph input that
 * also has an initializer, so the end-to-end tests feed state to a copy of the
 * rewritten model whose state defaults are removed. */
#include <stdio.h>
#include <string.h>

#include "rnnstate.h"
#include "model.h"
#include "util/arena.h"

static int strip(Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (strcmp(g->initializer[i]->name ? g->initializer[i]->name : "", name) != 0)
            continue;
        arena_message_free(&g->initializer[i]->base); /* it may be in the model's arena */
        memmove(&g->initializer[i], &g->initializer[i + 1],
                (g->n_initializer - i - 1) * sizeof g->initializer[0]);
        g->n_initializer--;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: strip-defaults IN OUT NAME...\n");
        return 2;
    }
    rnnstate_error err;
    rnnstate_model *model;
    if (rnnstate_model_load_file(argv[1], NULL, &model, &err) != RNNSTATE_OK) {
        fprintf(stderr, "strip-defaults: %s\n", err.message);
        return 1;
    }
    int status = 0;
    for (int i = 3; i < argc; i++) {
        if (!strip(model->proto->graph, argv[i])) {
            fprintf(stderr, "strip-defaults: %s: no initializer named '%s'\n", argv[1], argv[i]);
            status = 1;
        }
    }
    if (!status && rnnstate_model_save_file(model, argv[2], NULL, &err) != RNNSTATE_OK) {
        fprintf(stderr, "strip-defaults: %s\n", err.message);
        status = 1;
    }
    rnnstate_model_free(model);
    return status;
}
