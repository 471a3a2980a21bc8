/* The library's model object: a parsed ModelProto plus the label used in
 * messages. The proto is allocated by protobuf-c's default allocator and
 * released with protobuf_c_message_free_unpacked().
 *
 * A model read from a file may be "lazy" (see lazy_scan.h): some initializers
 * of the main graph are stubs without their data, which stays in source_fd
 * until the writer copies it. A stub is recognised by its pointer and name
 * together, so a tensor created later at a freed stub's address (the cleanup
 * pass frees initializers) is never mistaken for one: generated names never
 * repeat a name the model had. */
#ifndef RNNSTATE_MODEL_H
#define RNNSTATE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "error.h"
#include "onnx.pb-c.h"
#include "rnnstate.h"

typedef struct lazy_tensor {
    const Onnx__TensorProto *stub;
    char *name;
    uint64_t offset; /* the whole initializer field in the source file */
    uint64_t length;
} lazy_tensor;

struct rnnstate_model {
    Onnx__ModelProto *proto;
    char *label;
    char *source_dir; /* where the file was read from (external data resolves there), or NULL */
    int source_fd;    /* holds the lazy tensors' data, or -1 */
    struct stat source_stat; /* source_fd when loaded: it must be unchanged when saved */
    lazy_tensor *lazy;
    size_t n_lazy;
};

/* Reads a lazy initializer's data into it (it stops being lazy), for the few
 * tensors the passes read: constant initial states, shape constants. True
 * when `t` holds its data afterwards. */
bool model_materialize(rnnstate_model *model, Onnx__TensorProto *t);

/* The lazy entry for an initializer, or NULL when it is fully in memory. */
const lazy_tensor *model_lazy_tensor(const rnnstate_model *model, const Onnx__TensorProto *t);

/* Refuses a graph whose names clash (a value produced twice, duplicate
 * inputs, outputs or initializers): the rewrite's analysis assumes SSA. */
rnnstate_status validate_graph_names(const Onnx__GraphProto *graph, const char *label,
                                     rnnstate_error *err);

#endif
