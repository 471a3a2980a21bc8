/* analysis/shape: what the graphs say, or let us infer, about a value's
 * element type, rank, dimensions and constant contents, and which graph
 * input axis one of its axes comes from. Read-only; values are looked up
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
#include "onnx_build.h"
#include "scope.h"

static inline bool node_op_is(const Onnx__NodeProto *node, const char *op)
{
    const char *t = str_or_empty(node->op_type);
    return t[0] == op[0] && strcmp(t, op) == 0; /* most ops differ at once: no call */
}

/* True when the node's op_type is one of `ops` (NULL-terminated). */
static inline bool node_op_in(const Onnx__NodeProto *node, const char *const *ops)
{
    for (; *ops; ops++)
        if (node_op_is(node, *ops))
            return true;
    return false;
}

/* The node is in the default ONNX domain ("" or "ai.onnx"). */
static inline bool node_default_domain(const Onnx__NodeProto *node)
{
    const char *d = str_or_empty(node->domain);
    return !*d || !strcmp(d, "ai.onnx");
}

/* The node producing `value` as seen from `s` (and in *owner, when not NULL,
 * the scope holding it), or NULL for a graph input, an initializer or an
 * unknown name. */
const Onnx__NodeProto *value_producer(const scope *s, const char *value, const scope **owner);

/* The tensor of a value that is an initializer (not overridable as an input)
 * or a Constant's output, or NULL. */
const Onnx__TensorProto *constant_tensor(const scope *s, const char *value);

/* A list of int64 from attribute `attr` of node `p` or, when the attribute is
 * absent (or `attr` is ""), from its constant input number `input`; *vals is
 * malloc'd. False when neither is there or memory runs out. */
bool node_ints(const scope *s, const Onnx__NodeProto *p, const char *attr, size_t input,
               int64_t **vals, size_t *n);

/* The int64 contents of a small value computed from constants only
 * (Constant, ConstantOfShape, Concat, Reshape, Slice, Transpose of a matrix,
 * Cast, Squeeze, Unsqueeze, Identity), as PyTorch exports F.pad's pads;
 * *vals is malloc'd. False when it is not, or memory runs out. */
bool fold_int64s(const scope *s, const char *value, int64_t **vals, size_t *n);

/* The declared element type of a value, or 0. */
int32_t declared_elem_type(const scope *s, const char *value);

/* The rank of `value` (declared, or inferred through its producers), or -1
 * when unknown. Memoized; needs no memory to answer correctly. */
int64_t infer_rank(const scope *s, const char *value);

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

/* Where dimension `axis` of `value` comes from with the same size: the
 * value and axis reached by following it back through ops that keep it
 * (unary ops, Transpose, Squeeze, Unsqueeze, the batch of convolutions,
 * recurrent nodes, Reshape entries copied or taken from a Shape). Two dims
 * with the same source are equal whatever their size; the walk reads the
 * graph only and never fails. */
void dim_source(const scope *s, const char *value, int64_t axis, const scope **os,
                const char **ovalue, int64_t *oaxis);

#endif
