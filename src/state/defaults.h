/* state/defaults: the graph inputs that carry a recurrent node's state in, and
 * their defaults.
 *
 * A new state input is declared with the state's full shape. In optional mode
 * it also gets an initializer of the same name holding its default (zeros, or
 * the exporter's constant), which ONNX Runtime uses when the caller feeds
 * nothing (ir_version >= 4). With a fixed batch the default has the full
 * shape. With a dynamic batch the default is empty (batch 0) and its batch
 * dimension is declared unnamed, and
 *     Concat(state, Expand(fill, [1, B * (batch(state) == 0), 1]), axis=batch)
 * sits between the input and the node (B the batch of X at run time, fill
 * the [D,1,H] zeros or exporter's constant): an absent state (the empty
 * default) becomes the fill at batch B, a fed state of batch B passes
 * unchanged, and a fed state of any other batch reaches the node with that
 * batch, which the runtime rejects (never broadcast to every stream). */
#ifndef RNNSTATE_STATE_DEFAULTS_H
#define RNNSTATE_STATE_DEFAULTS_H

#include "rewrite_ctx.h"
#include "recurrent_ops.h"

/* What one recurrent node's state looks like. */
typedef struct recurrent_shape {
    scope *sc;              /* the graph holding the node */
    const Onnx__NodeProto *node;
    const recurrent_op *op; /* what the node is */
    size_t node_index;      /* its position in the graph's node list */
    const char *x;          /* the node's X input (for Shape(X)) */
    char prefix[64];        /* "{op}_{k}", the base of generated helper names */
    int k;                  /* the node's count among nodes of its op */
    bool batch_first;       /* layout = 1 */
    int64_t directions;
    int64_t hidden;
    int32_t elem_type;
    dim_info batch;         /* known value, symbolic name, or a fresh name */
    /* built lazily, once per node, shared by its h and c slots: */
    char *batch_axis_name;  /* the initializer [axis] (the batch axis of X and of the state) */
    char *batch_size;       /* the value [B], the batch of X at run time */
    char *one;              /* the initializer [1] */
    char *zero;             /* the initializer [0] */
} recurrent_shape;

/* The default value of one state slot: one repeated element, or the
 * exporter's tensor (shape [D,1,H]/[D,B,H], or [1,D,H]/[B,D,H] batch-first). */
typedef struct state_default {
    bool uniform;
    unsigned char fill[16];
    const Onnx__TensorProto *pattern; /* broadcastable to the state's shape */
    /* an initializer whose data cannot be copied (external, unreadable) and
     * that holds the full fixed-batch state: it is the input's default and
     * the input keeps its name */
    bool existing;
    /* with a dynamic batch, an initializer of the model that is exactly the
     * [D,1,H] fill: used as it is (read-only, its data not copied) */
    const char *fill_initializer;
} state_default;

/* The state's dims in the node's layout. */
void recurrent_state_dims(const recurrent_shape *rs, dim_info dims[3]);

/* True when a default for this state (with batch 1) stays within the size
 * the rewriter creates (checked arithmetic: hostile dims must not overflow). */
bool state_default_fits(const recurrent_shape *rs);

/* The batch of the default: the fixed batch when a full-shape default stays
 * within that size, else 1 (broadcast by an Expand). */
int64_t state_default_batch(const recurrent_shape *rs);

/* True when `pattern` can serve as the default for this node's state: it
 * broadcasts (numpy rules) to the state's shape. */
bool state_pattern_fits(const recurrent_shape *rs, const Onnx__TensorProto *pattern);

/* True when `pattern` has exactly the state's shape for `batch`. */
bool state_pattern_is(const recurrent_shape *rs, const Onnx__TensorProto *pattern, int64_t batch);

/* True when the batch is a fixed number. */
bool batch_is_fixed(const recurrent_shape *rs);

/* Declares graph input `name` of the main graph for a state slot and, in
 * optional mode, its default. *slot_value receives a new string naming what
 * the node's slot must read: the input itself, or the Expand of it (built in
 * the node's own graph, where X lives). *optional tells whether the input got
 * a default. New nodes are queued before rs->node. */
rnnstate_status add_state_input(rewrite_ctx *ctx, recurrent_shape *rs, const char *name,
                                const state_default *def, size_t report_node, char **slot_value,
                                bool *optional);

/* A new node with the given inputs and one output, queued before rs->node
 * in the node's graph. */
Onnx__NodeProto *queue_op(rewrite_ctx *ctx, recurrent_shape *rs, const char *op,
                          const char *const *inputs, size_t n_inputs, const char *output);

/* Raises ir_version to 4 where an initializer must be an overridable input
 * default (ONNX Runtime ignores feeds for such inputs below IR 4). */
void require_overridable_defaults(rewrite_ctx *ctx);

#endif
