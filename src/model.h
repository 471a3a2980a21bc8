/* The library's model object: a parsed ModelProto plus the label used in
 * messages.
 *
 * Ownership: a loaded model's pieces (strings, arrays, messages) are unpacked
 * into the model's arena (util/arena.h), which is freed with the model; what
 * the passes add is malloc'd (model/onnx_build.h). So a piece of a model is
 * never handed to free() or realloc() directly: messages are freed with
 * arena_message_free(), other pieces with arena_piece_free(), arrays grown
 * with append_ptr() or arena_piece_realloc(), all of which leave arena pieces
 * in place and free() the rest.
 *
 * A model read from a file may be "lazy" (see lazy_scan.h): some initializers
 * of the main graph are stubs without their data, which stays in source_fd
 * until the writer copies it. The model keeps a map from stub to entry, so
 * finding a stub's entry is O(1), however many there are. A stub's address
 * identifies it only while it lives: code that frees an initializer of a
 * model releases it with model_release_tensor(), which takes it out of the
 * map first, so a tensor created later at that address is never taken for
 * a stub. */
#ifndef RNNSTATE_MODEL_H
#define RNNSTATE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "error.h"
#include "onnx.pb-c.h"
#include "util/ptrmap.h"
#include "rnnstate.h"

typedef struct lazy_tensor {
    const Onnx__TensorProto *stub; /* NULL once materialized or released */
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
    ptrmap lazy_by_stub; /* stub -> its entry in `lazy` */
    struct arena *arena; /* the parsed pieces, or NULL (a model built in memory) */
};

/* Reads a lazy initializer's data into it (it stops being lazy), for the few
 * tensors the passes read: constant initial states, shape constants. True
 * when `t` holds its data afterwards. */
bool model_materialize(rnnstate_model *model, Onnx__TensorProto *t);

/* The lazy entry for an initializer, or NULL when it is fully in memory. O(1). */
const lazy_tensor *model_lazy_tensor(const rnnstate_model *model, const Onnx__TensorProto *t);

/* Frees an initializer a pass removed from the model, forgetting it first
 * if it is a lazy stub. */
void model_release_tensor(rnnstate_model *model, Onnx__TensorProto *t);

#endif
