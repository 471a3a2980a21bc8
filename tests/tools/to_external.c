/* to-external IN OUT_DIR [LOCATION]: writes OUT_DIR/model.onnx, a copy of IN
 * whose initializers are stored in OUT_DIR/LOCATION (default weights.bin;
 * its directories must exist) as ONNX external data, the layout exporters
 * use for models over 2 GB.
 * to-external --locations MODEL: prints the location of every tensor of the
 * main graph stored outside the model, one per line.
 * A test tool for the rewriter's handling of external data. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model/onnx_build.h"
#include "model/tensor_util.h"
#include "util/arena.h"

static Onnx__StringStringEntryProto *entry(const char *key, const char *value)
{
    Onnx__StringStringEntryProto *e = malloc(sizeof *e);
    if (!e)
        return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = strdup(key);
    e->value = strdup(value);
    return e->key && e->value ? e : NULL;
}

/* Moves one tensor's data to the end of `bin`. */
static int externalize(Onnx__TensorProto *t, FILE *bin, const char *location, long *offset)
{
    unsigned char *bytes;
    size_t size;
    if (!tensor_read_bytes(t, &bytes, &size))
        return 0;
    int ok = fwrite(bytes, 1, size, bin) == size;
    free(bytes);
    char off[32], len[32];
    snprintf(off, sizeof off, "%ld", *offset);
    snprintf(len, sizeof len, "%zu", size);
    *offset += (long)size;
    /* drop the in-model data (parsed: it may be in the model's arena) */
    arena_piece_free(t->raw_data.data);
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    t->has_raw_data = 0;
    arena_piece_free(t->float_data);
    t->float_data = NULL;
    t->n_float_data = 0;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto *e[3] = { entry("location", location),
                                           entry("offset", off), entry("length", len) };
    for (int i = 0; i < 3 && ok; i++)
        ok = e[i] && APPEND_PTR(&t->external_data, &t->n_external_data, e[i]);
    return ok;
}

static int show_locations(const char *path)
{
    rnnstate_error err;
    rnnstate_model *m;
    if (rnnstate_model_load_file(path, NULL, &m, &err) != RNNSTATE_OK) {
        fprintf(stderr, "to-external: %s\n", err.message);
        return 1;
    }
    const Onnx__GraphProto *g = m->proto->graph;
    for (size_t i = 0; i < g->n_initializer; i++)
        for (size_t k = 0; k < g->initializer[i]->n_external_data; k++)
            if (!strcmp(str_or_empty(g->initializer[i]->external_data[k]->key), "location"))
                printf("%s\n", g->initializer[i]->external_data[k]->value);
    rnnstate_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--locations"))
        return show_locations(argv[2]);
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: to-external IN OUT_DIR [LOCATION] | to-external --locations MODEL\n");
        return 2;
    }
    rnnstate_error err;
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    limits.lazy_tensor_bytes = SIZE_MAX;
    rnnstate_model *m;
    if (rnnstate_model_load_file(argv[1], &limits, &m, &err) != RNNSTATE_OK) {
        fprintf(stderr, "to-external: %s\n", err.message);
        return 1;
    }
    char bin_path[4096], model_path[4096];
    const char *location = argc == 4 ? argv[3] : "weights.bin";
    snprintf(bin_path, sizeof bin_path, "%s/%s", argv[2], location);
    snprintf(model_path, sizeof model_path, "%s/model.onnx", argv[2]);
    FILE *bin = fopen(bin_path, "wb");
    long offset = 0;
    int ok = bin != NULL;
    Onnx__GraphProto *g = m->proto->graph;
    for (size_t i = 0; ok && i < g->n_initializer; i++)
        ok = externalize(g->initializer[i], bin, location, &offset);
    if (bin && fclose(bin) != 0)
        ok = 0;
    free(m->source_dir); /* written beside its weights: nothing to relocate */
    m->source_dir = strdup(argv[2]);
    if (ok && rnnstate_model_save_file(m, model_path, NULL, &err) != RNNSTATE_OK) {
        fprintf(stderr, "to-external: %s\n", err.message);
        ok = 0;
    }
    rnnstate_model_free(m);
    return ok ? 0 : 1;
}
