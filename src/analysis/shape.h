/* analysis/shape: what the graphs let us infer about a value's rank and
 * dimensions, and which graph input axis one of its axes comes from (what
 * they say outright, declarations and constants, is analysis/values.h). Read-only; values are looked up
 * through enclosing scopes, so a value inside an If branch is traced into
 * the graphs around it. Dimensions and ranks are memoized per value
 * (analysis/memo.h). The state pass, the time-axis analysis and the layout
 * pass build on it. */
#ifndef RNNSTATE_ANALYSIS_SHAPE_H
#define RNNSTATE_ANALYSIS_SHAPE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "analysis/memo.h"
#include "analysis/values.h"
#include "model/onnx_build.h"
#include "scope.h"

/* The rank of `value` (declared, or inferred through its producers), or -1
 * when unknown. Memoized; needs no memory to answer correctly. */
int64_t infer_rank(const scope *s, const char *value);
/* infer_rank() of the value scope_lookup() found (entry e of scope o). */
int64_t infer_rank_of(const scope *o, const value_entry *e);

/* Infers dimension `axis` of `value` from declared shapes and, where the value
 * carries none (intermediate values usually don't), from its producers:
 * shape-preserving ops, Transpose, Squeeze, Unsqueeze, Reshape, MatMul, Gemm,
 * broadcasts with constants, and the outputs of recurrent nodes. out->known is
 * false when it cannot be known. Returns false only when out of memory. */
bool infer_dim(const scope *s, const char *value, int64_t axis, dim_info *out);

/* The axis of a main-graph input that dimension `axis` of `value` is,
 * traced back through the ops infer_dim() follows and through the spatial
 * axes of convolutions and pools and Pad, and along a Concat's axis into its
 * last input (this call's frames, after a context cache) (past declared shapes, and out of
 * subgraphs to the values they read from enclosing graphs): *input names the
 * input (a string of the graph) and *input_axis its axis, or *input is NULL
 * when the trace ends elsewhere (a Reshape that builds the dimension, an op
 * it does not follow, a constant). Returns false only when out of memory. */
bool trace_axis_to_input(const scope *s, const char *value, int64_t axis, const char **input,
                         int64_t *input_axis);

/* The node producing `value` for a shape question: one of the default
 * domain, or a recurrent node (else NULL); its scope in *owner and the
 * output slot `value` is in *slot. */
const Onnx__NodeProto *shape_producer(const scope *s, const char *value, const scope **owner,
                                      int *slot);
/* shape_producer() of the value scope_lookup() found (entry e of scope o). */
const Onnx__NodeProto *shape_producer_of(const scope *o, const value_entry *e, int *slot);

/* Ops whose output has input 0's shape; ops on [N, C, spatial...] that
 * keep input 0's rank and batch N (the other axes change). NULL-terminated. */
extern const char *const same_shape_ops[];
extern const char *const batch_keeping_ops[];

#endif
