/* lazy-equivalence DIR MODEL...: for each model, the lazy path (every
 * initializer with data left in the file, written back with
 * copy_file_range) must produce the same model as the full-decode path.
 *
 * "The same model": both outputs are parsed and re-serialized by protobuf-c,
 * which writes fields in one canonical order, and the bytes compared. The
 * lazy output is checked both as written to a file (in DIR) and as
 * serialized to memory. Prints one line per model and a closing
 * "N passed, N failed". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Rewrites `path` read with the given lazy threshold; returns the canonical
 * bytes of the result, written through a file when `out` is not NULL. */
static unsigned char *rewrite(const char *path, size_t lazy_bytes, const char *out, size_t *size,
                              size_t *n_lazy)
{
    rnnstate_error err;
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    limits.lazy_tensor_bytes = lazy_bytes;
    rnnstate_model *model = NULL, *again = NULL;
    rnnstate_report *report = NULL;
    unsigned char *bytes = NULL;
    *size = 0;
    if (rnnstate_model_load_file(path, &limits, &model, &err) != RNNSTATE_OK ||
        rnnstate_rewrite(model, NULL, &report, &err) != RNNSTATE_OK) {
        fprintf(stderr, "%s\n", err.message);
        goto done;
    }
    *n_lazy = model->n_lazy;
    if (out) {
        limits.lazy_tensor_bytes = SIZE_MAX;
        if (rnnstate_model_save_file(model, out, NULL, &err) != RNNSTATE_OK ||
            rnnstate_model_load_file(out, &limits, &again, &err) != RNNSTATE_OK) {
            fprintf(stderr, "%s\n", err.message);
            goto done;
        }
    }
    if (rnnstate_model_save_memory(again ? again : model, &bytes, size, &err) != RNNSTATE_OK)
        fprintf(stderr, "%s\n", err.message);
done:
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    rnnstate_model_free(again);
    return bytes;
}

/* protobuf-c's own serialization of the parsed bytes: one field order. */
static unsigned char *canonical(const unsigned char *bytes, size_t size, size_t *out_size)
{
    Onnx__ModelProto *m = bytes ? onnx__model_proto__unpack(NULL, size, bytes) : NULL;
    if (!m)
        return NULL;
    *out_size = onnx__model_proto__get_packed_size(m);
    unsigned char *c = malloc(*out_size ? *out_size : 1);
    if (c)
        onnx__model_proto__pack(m, c);
    onnx__model_proto__free_unpacked(m, NULL);
    return c;
}

static bool same(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
    size_t ca_n = 0, cb_n = 0;
    unsigned char *ca = canonical(a, na, &ca_n), *cb = canonical(b, nb, &cb_n);
    bool equal = ca && cb && ca_n == cb_n && memcmp(ca, cb, ca_n) == 0;
    free(ca);
    free(cb);
    return equal;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lazy-equivalence DIR MODEL...\n");
        return 2;
    }
    int passed = 0, failed = 0;
    for (int i = 2; i < argc; i++) {
        char out[4096];
        snprintf(out, sizeof out, "%s/lazy-%d.onnx", argv[1], i);
        size_t full_n = 0, mem_n = 0, file_n = 0, lazy_tensors = 0, ignored;
        unsigned char *full = rewrite(argv[i], SIZE_MAX, NULL, &full_n, &ignored);
        unsigned char *mem = rewrite(argv[i], 1, NULL, &mem_n, &lazy_tensors);
        unsigned char *file = rewrite(argv[i], 1, out, &file_n, &ignored);
        bool ok = full && same(full, full_n, mem, mem_n) && same(full, full_n, file, file_n);
        printf("%s %s (%zu initializers left in the file)\n", ok ? "PASS" : "FAIL", argv[i],
               lazy_tensors);
        ok ? passed++ : failed++;
        free(full);
        free(mem);
        free(file);
        remove(out);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
