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

/* The name of a new state input or output ("initial" or "Y"): the name
 * template expanded, made unique in the model. */
char *slot_name(rewrite_ctx *ctx, const recurrent_shape *rs, const char *what, int slot);

#endif
