/* state/slices: phase 2 of the state pass, half-stateful inputs (see
 * state.h). */
#ifndef RNNSTATE_STATE_SLICES_H
#define RNNSTATE_STATE_SLICES_H

#include <stdbool.h>
#include <stddef.h>

#include "state/plan.h"

/* Half-stateful models (AECMOS, slices.c): nodes whose initial states are row
 * slices of one graph input but whose final states reach no output get one
 * output with the input's shape that concatenates their Y_h in row order,
 * named after the input; with `gaps_unread` (no other slot reads the input),
 * rows no node reads pass through unchanged. Handles the slots collected in
 * `pending` (all slicing one input) when they fit; *handled says whether it
 * did. */
typedef struct pending_slot {
    node_plan *plan;
    int slot;
} pending_slot;
rnnstate_status assemble_sliced_states(rewrite_ctx *ctx, pending_slot *pending, size_t n,
                                       bool gaps_unread, bool *handled);

#endif
