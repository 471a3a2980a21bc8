/* analysis/values: what the graphs say about a value outright: the node
 * that produces it, its declarations (graph input, value_info, graph
 * output) with their element type and shape, and its contents when it is a
 * constant, including small int64 values computed from constants only.
 * Read-only; values are looked up through enclosing scopes. The shape
 * analysis (analysis/shape.h) infers the rest. */
#ifndef RNNSTATE_ANALYSIS_VALUES_H
#define RNNSTATE_ANALYSIS_VALUES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "model/onnx_build.h"
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
/* constant_tensor() of the value scope_lookup() found (entry e of scope o). */
const Onnx__TensorProto *constant_tensor_of(const scope *o, const value_entry *e);

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

/* The declared shape of entry e of scope o (graph input, value_info or
 * output, in that order of trust), or NULL. */
const Onnx__TensorShapeProto *declared_shape(const scope *o, const value_entry *e);

#endif
