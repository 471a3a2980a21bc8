/* The state pass (src/state/): for every recurrent node of every graph,
 * makes each state slot (initial_h/Y_h, and initial_c/Y_c for the LSTMs) an
 * input and an output of the main graph, unless the model carries it already.
 *
 * Phase 1, plan (plan.c, with trace.c): analyses every node of every graph
 * and changes nothing, because whether a node is already stateful can depend
 * on other nodes (Silero's zero-state and caller-state If branches). Each
 * node gets a node_plan: where each initial state comes from, which output
 * its final state reaches, its state shape, or why it is skipped.
 *
 * Phase 2, apply (pass.c drives it): for each planned node and slot, the
 * input side (inputs.c, with defaults.c for new inputs and their defaults)
 * then the output side (outputs.c); then the half-stateful groups are
 * assembled, the report's statuses settled and the defaults the options
 * drop removed.
 *
 *   pass.c      pass_state(): plan, apply, settle the report
 *   plan.c      phase 1: one node_plan per recurrent node
 *   trace.c     read-only tracing: state sources and sinks, shapes
 *   types.c     element types, inferred where the model declares none
 *   contract.c  what a state pair promises, checked before a node is exposed
 *   defaults.c  new state inputs and their default values
 *   inputs.c    phase 2, input side
 *   outputs.c   phase 2, output side, threading final states out of If branches
 *   slices.c    half-stateful inputs: one output assembled from row slices
 *   chains.c    (phase 1) nodes reset at every call, hand-offs, carried pairs
 *   own_caches.c after phase 2: the context caches the model already carries,
 *               reported as context pairs (nothing added) */
#ifndef RNNSTATE_STATE_STATE_H
#define RNNSTATE_STATE_STATE_H

#include "state/plan.h"

/* Phase 2, input side: makes the slot read a state input. *input_name gets
 * the input (new or existing), *optional whether it has a default, *added
 * whether it is new. */
rnnstate_status expose_input_side(rewrite_ctx *ctx, node_plan *plan, int slot, char **input_name,
                                  bool *optional, bool *added);

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
