/* state_defaults: the graph inputs that carry a recurrent node's state in, and
 * their defaults.
 *
 * A new state input is declared with the state's full shape. In optional mode
 * it also gets an initializer of the same name holding its default (zeros, or
 * the exporter's constant), which ONNX Runtime uses when the caller feeds
 * nothing (ir_version >= 4). With a fixed batch the default has the full
 * shape. With a dynamic batch it has batch 1, and an Expand to the batch of X
 * (taken from Shape(X) at run time) sits between the input and the node, so
 * the input stays optional for any batch size; a fed full-batch state passes
 * through the Expand unchanged. */
#ifndef RNNSTATE_STATE_DEFAULTS_H
#define RNNSTATE_STATE_DEFAULTS_H

#include "passes.h"

/* What one recurrent node's state looks like. */
typedef struct recurrent_shape {
    const Onnx__NodeProto *node;
    size_t node_index;      /* its position in the graph's node list */
    const char *x;          /* the node's X input (for Shape(X)) */
    const char *prefix;     /* "{op}_{k}", the base of generated helper names */
    int k;                  /* the node's count among nodes of its op */
    bool batch_first;       /* layout = 1 */
    int64_t directions;
    int64_t hidden;
    int32_t elem_type;
    dim_info batch;         /* known value, symbolic name, or a fresh name */
    char *batch_shape;      /* built lazily: the value holding [1,B,1] or [B,1,1] */
} recurrent_shape;

/* The default value of one state slot: one repeated element, or the
 * exporter's tensor (shape [D,1,H]/[D,B,H], or [1,D,H]/[B,D,H] batch-first). */
typedef struct state_default {
    bool uniform;
    unsigned char fill[16];
    const Onnx__TensorProto *pattern;
} state_default;

/* The state's dims in the node's layout. */
void recurrent_state_dims(const recurrent_shape *rs, dim_info dims[3]);

/* True when a default for this state stays within the size the rewriter
 * creates (checked arithmetic: hostile dims must not overflow). */
bool state_default_fits(const recurrent_shape *rs);

/* True when `pattern` can serve as the default for this node's state. */
bool state_pattern_fits(const recurrent_shape *rs, const Onnx__TensorProto *pattern);

/* Declares graph input `name` for a state slot and, in optional mode, its
 * default. *slot_value receives a new string naming what the node's slot
 * must read: the input itself, or the Expand of it. *optional tells whether
 * the input got a default. New nodes are queued before rs->node. */
rnnstate_status add_state_input(rewrite_ctx *ctx, recurrent_shape *rs, const char *name,
                                const state_default *def, size_t report_node, char **slot_value,
                                bool *optional);

/* Queues `node` to be inserted before node number `before` when the pass
 * finishes. Calls must come in non-decreasing order of `before`. */
bool queue_node_before(rewrite_ctx *ctx, size_t before, Onnx__NodeProto *node);

/* Inserts the queued nodes; called once at the end of the state pass. */
bool flush_queued_nodes(rewrite_ctx *ctx);

/* Raises ir_version to 4 where an initializer must be an overridable input
 * default (ONNX Runtime ignores feeds for such inputs below IR 4). */
void require_overridable_defaults(rewrite_ctx *ctx);

#endif
