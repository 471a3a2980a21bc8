/* recurrent_ops: what the rewrite knows about each recurrent op, in one
 * table. Every module asks here instead of naming ops: recognising a node,
 * which inputs and outputs carry its state, where hidden_size comes from when
 * the attribute is missing, whether it has a batch-first layout, and what
 * element type its state takes. Adding an op is one entry in recurrent_ops[]
 * (recurrent_ops.c: the table is unsized, its count derived from it) and a
 * test. */
#ifndef RNNSTATE_RECURRENT_OPS_H
#define RNNSTATE_RECURRENT_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "onnx.pb-c.h"

/* Room for per-op counters (an array of this many); recurrent_ops.c asserts
 * at compile time that the table fits. */
#define RECURRENT_OPS_MAX 8
#define RECURRENT_MAX_SLOTS 2 /* h, and c for the LSTMs */

typedef struct recurrent_op {
    const char *name;   /* the op_type; also {op} in new names and the op in reports */
    const char *domain; /* "" for ONNX's default domain (which "ai.onnx" names too) */
    int n_slots;        /* state slots: 1 (h) or 2 (h and c) */
    int gates;          /* W is [directions, gates * hidden, input] */
    /* hidden_size, when the attribute is missing: this dimension of this
     * input (R is [D, gates*H, H]; the quantized LSTM stores it transposed) */
    int hidden_input;
    int hidden_axis;
    /* The layout attribute (opset 14+) may make X, Y and the states
     * batch-first; without it they are always sequence-first. */
    bool has_layout;
    /* W and R are quantized (int8): the state takes X's element type, float
     * when X declares none; otherwise W's, which equals X's. */
    bool quantized_weights;
    int initial_state_input[RECURRENT_MAX_SLOTS]; /* initial_h, initial_c */
    int final_state_output[RECURRENT_MAX_SLOTS];  /* Y_h, Y_c */
} recurrent_op;

/* What every recurrent op shares: X, W and R come first and are required;
 * Y is the first output. */
#define RECURRENT_INPUT_X 0
#define RECURRENT_INPUT_W 1
#define RECURRENT_REQUIRED_INPUTS 3
#define RECURRENT_OUTPUT_Y 0

/* The table, and its number of entries (at most RECURRENT_OPS_MAX). */
extern const recurrent_op recurrent_ops[];
extern const size_t recurrent_op_count;

/* The slot names: "h", "c". */
extern const char *const slot_letter[RECURRENT_MAX_SLOTS];

/* The entry for a node's op, or NULL when the node is not recurrent. */
const recurrent_op *recurrent_op_of(const Onnx__NodeProto *node);

/* The entry's position in recurrent_ops[], for per-op counters. */
size_t recurrent_op_index(const recurrent_op *op);

/* Whether the node runs batch-first (layout=1, for ops that have a layout). */
bool recurrent_batch_first(const recurrent_op *op, const Onnx__NodeProto *node);

#endif
