/* state/plan: the state pass's view of one recurrent node, and the analysis
 * that fills it (phase 1, see state.h). */
#ifndef RNNSTATE_STATE_PLAN_H
#define RNNSTATE_STATE_PLAN_H

#include "state/defaults.h"
#include "state/trace.h"

typedef struct slot_plan {
    state_source source;
    const char *reached;        /* main-graph output Y_h reaches through data movement */
    const char *reached_direct; /* ... with no op on the way */
    const char *reset_of;       /* the model's own state input, when this constant initial
                                 * state only resets a state the model already carries */
    bool reached_through_y;     /* Y_h reaches nothing, and `reached` is where Y goes: the
                                 * node runs one step, so Y holds its final h (single_step_h) */
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

/* A slot fed by a view of a model input whose final state goes nowhere: its
 * output is assembled with the other views of that input (AECMOS). */
bool slot_half_stateful(const slot_plan *sp);

/* Leaves the node alone: status skipped, with the reason. */
void plan_skip(rewrite_ctx *ctx, node_plan *p, const char *reason);

/* Plans every recurrent node of every graph, adding one report entry per
 * node (skipped nodes get their reason here). */
rnnstate_status plan_all_nodes(rewrite_ctx *ctx, plan_list *list);
void plan_list_free(plan_list *list);

/* chains.c, run by plan_all_nodes once every slot is traced. In a model
 * that carries state through its own inputs and outputs, nodes that start
 * from a fixed state at every call and whose final state goes nowhere are
 * left alone (status reset-each-call) unless an --include pattern names
 * them. */
void plan_mark_reset_nodes(rewrite_ctx *ctx, plan_list *list);

/* chains.c: a node whose initial state is computed from another
 * recurrent node's outputs (an encoder handing its final state to a
 * decoder) and that other node are both skipped, with a model-level note.
 * Returns false only when memory runs out. */
bool plan_mark_handoffs(rewrite_ctx *ctx, plan_list *list);

/* The name of a new state input or output ("initial" or "Y"): the name
 * template expanded, made unique in the model. */
char *slot_name(rewrite_ctx *ctx, const recurrent_shape *rs, const char *what, int slot);

/* The other branch of the If node holding `branch`, or NULL when the If lacks
 * one (an invalid model). */
Onnx__GraphProto *sibling_branch(const Onnx__NodeProto *if_node, const Onnx__GraphProto *branch);

#endif
