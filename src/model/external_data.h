/* external_data: a model's external data locations made right for another
 * directory (rnnstate_save_options.external_data = REFERENCE). ONNX stores
 * the location of an initializer kept in an external file relative to the
 * model's directory; a model saved elsewhere gets a copy of the path from its
 * root to every such tensor, with the location rewritten, and the model
 * itself is never modified (several threads may save it at once). The
 * external files themselves are never read here (external_files.c copies or
 * links them for the other modes). */
#ifndef RNNSTATE_MODEL_EXTERNAL_DATA_H
#define RNNSTATE_MODEL_EXTERNAL_DATA_H

#include "model.h"

/* The model as it is written into another directory: the path from its root
 * to every tensor whose external data location changes is copied (a
 * shallow copy of each message on the way, sharing everything else), so
 * the model itself is never modified. */
typedef struct relocations {
    Onnx__ModelProto model; /* what to write when graph_copy is not NULL */
    Onnx__GraphProto *graph_copy;
    void **blocks; /* every allocation of the copies */
    size_t n_blocks;
    const char *source_dir;
    char *out_dir; /* resolved */
    const char *label;
    rnnstate_error *err;
    rnnstate_status status;
} relocations;

/* Calls visit(location, tensor, arg) for every tensor stored in an external
 * file (initializers, sparse initializers, tensor attributes, in every
 * subgraph) until it returns false; returns false when it was stopped. */
typedef bool (*location_visitor)(const char *location, const Onnx__TensorProto *tensor, void *arg);
bool visit_external_locations(const Onnx__GraphProto *g, location_visitor visit, void *arg);
/* Whether the model keeps tensors in external files (*found), which can be
 * placed only when the model's directory is known: RNNSTATE_ERR_INVALID
 * naming the first location when it is not (a model from memory or a pipe). */
rnnstate_status find_external_data(const rnnstate_model *m, bool *found, rnnstate_error *err);

/* Points external data locations at the same files from the directory of
 * `path`, in a copy held by *r (filled whatever the result; release it with
 * release_relocations()). Returns RNNSTATE_OK; RNNSTATE_ERR_INVALID when
 * the model's own directory is unknown (loaded from memory) or a location
 * would lie outside the output's directory; RNNSTATE_ERR_IO when an
 * external file cannot be found; RNNSTATE_ERR_NOMEM. */
rnnstate_status relocate_external_data(const rnnstate_model *m, const char *path, relocations *r,
                                       rnnstate_error *err);
/* The model to write: the relocated copy, or the model itself. */
const Onnx__ModelProto *relocated_model(const rnnstate_model *m, const relocations *r);
void release_relocations(relocations *r);

#endif
