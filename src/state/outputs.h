/* state/outputs: phase 2 of the state pass, output side (see state.h). */
#ifndef RNNSTATE_STATE_OUTPUTS_H
#define RNNSTATE_STATE_OUTPUTS_H

#include <stdbool.h>

#include "state/plan.h"

/* Phase 2, output side: makes Y_h/Y_c reach a main-graph output, threading it
 * out of If branches. *output_name gets the output, *added whether it is new.
 * `input_name` is the slot's state input (a branch that does not run the
 * node passes it through). */
rnnstate_status expose_output_side(rewrite_ctx *ctx, node_plan *plan, int slot,
                                   const char *input_name, char **output_name, bool *added);

/* Threads `value` (in scope `sc`, which takes it over) out of the If branches
 * around it to the main graph: each level's branch outputs it, the other
 * branch passes `state_input` (a value visible there) through, and the If
 * gets a matching output. *main_name gets the main-graph value, named
 * `final`, declared a graph output when `as_output`. */
rnnstate_status thread_out(rewrite_ctx *ctx, scope *sc, char *value, const char *final,
                           const char *state_input, const recurrent_shape *rs, bool as_output,
                           char **main_name);

/* Names Y_h/Y_c in the node's graph: an output nothing reads (PyTorch names
 * them all) is renamed to `final` (made unique inside a branch); one that
 * feeds computation keeps its name. Returns the name, or NULL when out of
 * memory. */
char *name_final_state(rewrite_ctx *ctx, node_plan *p, int slot, const char *final,
                       bool *renamed);

#endif
