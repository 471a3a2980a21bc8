/* model_write: serializing a model, the save functions' common part
 * (atomic_file.c writes files with it, rnnstate_model_save_fd() and
 * rnnstate_model_save_memory() are here). The lazy initializers (lazy_scan.h)
 * are copied from the source file rather than packed, so that their bytes
 * never pass through memory. */
#ifndef RNNSTATE_MODEL_MODEL_WRITE_H
#define RNNSTATE_MODEL_MODEL_WRITE_H

#include "model.h"
#include "model/pb_pack.h"

/* The sizes of what is written, computed once before anything is: the
 * whole model and, for a lazy model, the main graph with its initializers
 * as emit_lazy_model() writes them; and the size of every message (or part
 * of one) packed, in the order they are written (pb_pack.h). */
typedef struct output_sizes {
    uint64_t total, graph;
    pb_sizes packed;
} output_sizes;

/* What every save checks before it creates or writes anything: the output
 * stays within protobuf's limit (RNNSTATE_ERR_INVALID otherwise; out of
 * memory: RNNSTATE_ERR_NOMEM). *sizes are for model_write_to_fd(), and are
 * released with model_write_sizes_free() whatever the result. */
rnnstate_status model_write_check(const rnnstate_model *m, const Onnx__ModelProto *proto,
                                  output_sizes *sizes, rnnstate_error *err);
void model_write_sizes_free(output_sizes *sizes);

/* One model being written to a file descriptor. */
typedef struct model_write_job {
    const rnnstate_model *model;
    const Onnx__ModelProto *proto; /* the model's, or its relocated copy */
    const rnnstate_save_options *options;
    const char *path;
    output_sizes sizes; /* from model_write_check(), done before any file is touched */
    rnnstate_error *err;
    rnnstate_status status; /* a failure that is not an errno (out of memory, the source) */
} model_write_job;

/* Writes the model to fd, from its current offset; returns 0, an errno
 * (writing failed, or ECANCELED), or -1 for a failure already in
 * job->status (memory, the source file). */
int model_write_to_fd(model_write_job *job, int fd);

#endif
