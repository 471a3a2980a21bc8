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
 *               reported as context pairs (nothing added)
 *
 * Each file that others call has its own header (state/<file>.h); pass.c
 * and time_axis.c export passes, declared in passes.h. Calls go one way:
 * pass -> slices -> outputs, inputs -> plan -> chains, contract, trace, types,
 * defaults (docs/design.md). This header holds no declarations. */
#ifndef RNNSTATE_STATE_STATE_H
#define RNNSTATE_STATE_STATE_H
#endif
