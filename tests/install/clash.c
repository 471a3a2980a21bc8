/* An application that defines functions and data with the names of the
 * library's internals (its error helper, its string map, the generated ONNX
 * bindings), linked against the installed static library: it links only if
 * those internals are not global symbols of librnnstate.a, and the library
 * must still work with its own. Run: clash MODEL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rnnstate.h>

/* the application's own functions of the same names as the library's */
int set_error(int code) { return code + 1; }
const char *strmap_get(const char *key) { return key; }
void *onnx__model_proto__unpack(void *allocator, size_t len, const unsigned char *data)
{
    (void)allocator, (void)len, (void)data;
    return NULL;
}
int onnx__model_proto__descriptor = 42;

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    rnnstate_error err;
    rnnstate_model *model;
    rnnstate_report *report;
    if (rnnstate_model_load_file(argv[1], NULL, &model, &err) != RNNSTATE_OK ||
        rnnstate_rewrite(model, NULL, &report, &err) != RNNSTATE_OK) {
        fprintf(stderr, "clash: %s\n", err.message);
        return 1;
    }
    /* the application's symbols are the application's */
    int own = set_error(1) == 2 && !strcmp(strmap_get("k"), "k") &&
              onnx__model_proto__unpack(NULL, 0, NULL) == NULL &&
              onnx__model_proto__descriptor == 42;
    printf("clash: %zu state pairs, own symbols %s\n", report->n_pairs, own ? "intact" : "BROKEN");
    int rewritten = report->changed;
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    return own && rewritten ? 0 : 1;
}
