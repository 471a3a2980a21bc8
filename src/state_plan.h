/* state_plan: the state pass's view of one recurrent node, and the analysis
 * that fills it (phase 1 of the pass: nothing is changed until every node of
 * every graph is planned, because whether a node is already stateful can
 * depend on other nodes, e.g. Silero's zero-state and caller-state branches).
 * state_inputs.c and state_outputs.c carry the plans out (phase 2). */
#ifndef RNNSTATE_STATE_PLAN_H
#define RNNSTATE_STATE_PLAN_H

#include "state_defaults.h"
#include "state_trace.h"

typedef struct slot_plan {
    state_source source;
    const char *reached;        /* main-graph output Y_h reaches through data movement */
    const char *reached_direct; /* ... with no op on the way */
    const char *reset_of;       /* the model's own state input, when this constant initial
                                 * state only resets a state the model already carries */
} slot_plan;

typedef struct node_plan {
    recurrent_shape rs;
    slot_plan slots[RECURRENT_MAX_SLOTS]; /* rs.op->n_slots of them */
    size_t report_node;
    bool skipped;
} node_plan;

typedef struct plan_list {
    node_plan *plans;
    size_t n;
} plan_list;

/* True for a constant source whose every element is zero. */
bool source_is_zero(const state_source *s);

/* Plans every recurrent node of every graph, adding one report entry per
 * node (skipped nodes get their reason here). */
rnnstate_status plan_all_nodes(rewrite_ctx *ctx, plan_list *list);
void plan_list_free(plan_list *list);

/* The name of a new state input or output ("initial" or "Y"): the name
 * template expanded, made unique in the model. */
char *slot_name(rewrite_ctx *ctx, const recurrent_shape *rs, const char *what, int slot);

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

/* The other branch of the If node holding `branch`, or NULL when the If lacks
 * one (an invalid model). */
Onnx__GraphProto *sibling_branch(const Onnx__NodeProto *if_node, const Onnx__GraphProto *branch);

/* Half-stateful models (AECMOS): nodes whose initial states are Slices of one
 * graph input but whose final states reach no output get one output that
 * concatenates their Y_h in slice order, named after the input. Handles the
 * slots collected in `pending`; returns how many it handled in *handled. */
typedef struct pending_slot {
    node_plan *plan;
    int slot;
} pending_slot;
rnnstate_status assemble_sliced_states(rewrite_ctx *ctx, pending_slot *pending, size_t n,
                                       bool *handled);

#endif
