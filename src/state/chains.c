/* How the recurrent nodes of a model relate through their state, decided
 * once every node is planned (phase 1 of the state pass, after
 * plan_all_nodes has traced each slot):
 *
 *  - Nodes reset at every call. In a model that already carries state
 *    through its own inputs and outputs (GTCRN, DPCRN, UL-UNAS: caches in,
 *    caches out), a node that starts from a fixed state at every call and
 *    whose final state goes nowhere was built that way: it runs across
 *    something other than time (the frequency bins of one frame) or is reset
 *    on purpose. Carrying its state would corrupt the output, so it is left
 *    alone unless an --include pattern names it.
 *  - Hand-offs. A node whose initial state is computed from another
 *    recurrent node's outputs (an encoder's final state starting a decoder)
 *    forms a chain that restarts at every call: neither node can stream by
 *    itself, so neither gets a state pair, and a note names the chain. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/chains.h"

#define MAX_HANDOFF_VISITS 256 /* values looked at per data-dependent slot */

/* The model feeds this slot from an input and reads its final state back. */
static bool slot_carried(const slot_plan *sp)
{
    bool fed = sp->reset_of || sp->source.kind == SOURCE_GRAPH_INPUT ||
               sp->source.kind == SOURCE_VIEW_OF_INPUT;
    return fed && sp->reached;
}

/* The slot starts from the same state at every call and its final state
 * reaches no output. */
static bool slot_starts_fixed(const slot_plan *sp)
{
    state_source_kind k = sp->source.kind;
    return !sp->reset_of && !sp->reached &&
           (k == SOURCE_ABSENT || k == SOURCE_CONSTANT || k == SOURCE_INITIALIZER);
}

static bool node_starts_fixed(const node_plan *p)
{
    for (int s = 0; s < p->rs.op->n_slots; s++)
        if (!slot_starts_fixed(&p->slots[s]))
            return false;
    return true;
}

static bool named_by_include(const rnnstate_options *o, const char *name)
{
    for (size_t i = 0; i < o->n_include; i++)
        if (fnmatch(o->include[i], name, 0) == 0)
            return true;
    return false;
}

/* A slot the model carries itself, and the graph input it reads. */
static const slot_plan *first_carried_slot(const plan_list *list, const char **input)
{
    for (size_t i = 0; i < list->n; i++)
        for (int s = 0; !list->plans[i].skipped && s < list->plans[i].rs.op->n_slots; s++) {
            const slot_plan *sp = &list->plans[i].slots[s];
            if (slot_carried(sp)) {
                *input = sp->reset_of ? sp->reset_of : sp->source.input;
                return sp;
            }
        }
    return NULL;
}

static void leave_reset(rewrite_ctx *ctx, node_plan *p, const char *input, const char *output)
{
    const rnnstate_report *r = ctx->report.report; /* the entry is missing after OOM */
    int64_t steps = r && p->report_node < r->n_nodes
                        ? r->nodes[p->report_node].fixed_sequence_length
                        : -1;
    char across[96] = "";
    if (steps >= 0)
        snprintf(across, sizeof across, " (%lld fixed steps)", (long long)steps);
    p->skipped = true;
    report_node_set_status(&ctx->report, p->report_node, RNNSTATE_NODE_RESET_EACH_CALL);
    report_node_set_reason(&ctx->report, p->report_node,
                           "starts from a fixed state at every call and its final state goes "
                           "nowhere, in a model that carries its other state itself (%s -> %s): "
                           "it runs across something other than time%s or is reset on purpose; "
                           "left alone (--include naming it forces it)",
                           input, output, across);
}

/* Time lies in the node's batch (an intra-frame RNN of a dual-path model):
 * each call's frames are separate sequences, started from its fixed state,
 * exactly as in the whole-sequence run. */
static void leave_per_frame(rewrite_ctx *ctx, node_plan *p)
{
    p->skipped = true;
    report_node_set_status(&ctx->report, p->report_node, RNNSTATE_NODE_RESET_EACH_CALL);
    report_node_set_reason(&ctx->report, p->report_node,
                           "runs within each frame (the time axis is in its batch): it starts "
                           "from its fixed state for every frame, at every call; left alone "
                           "(--include naming it forces it)");
}

void plan_mark_reset_nodes(rewrite_ctx *ctx, plan_list *list)
{
    const stream_analysis *a = &ctx->stream;
    for (size_t i = 0; i < list->n; i++) {
        node_plan *p = &list->plans[i];
        if (!p->skipped && stream_recurrent_class(a, p->rs.node) == STREAM_PER_FRAME &&
            !named_by_include(&ctx->options, str_or_empty(p->rs.node->name)))
            leave_per_frame(ctx, p);
    }
    const char *input = NULL;
    const slot_plan *carried = first_carried_slot(list, &input);
    if (!carried)
        return;
    for (size_t i = 0; i < list->n; i++) {
        node_plan *p = &list->plans[i];
        if (!p->skipped && node_starts_fixed(p) &&
            !named_by_include(&ctx->options, str_or_empty(p->rs.node->name)))
            leave_reset(ctx, p, input, carried->reached);
    }
}

/* ---- hand-offs ---------------------------------------------------------- */

typedef struct upstream_walk {
    const scope *sc[MAX_HANDOFF_VISITS];
    const char *value[MAX_HANDOFF_VISITS];
    int top, visits;
} upstream_walk;

static void walk_push(upstream_walk *w, const scope *sc, const char *value)
{
    if (w->top < MAX_HANDOFF_VISITS && *value) {
        w->sc[w->top] = sc;
        w->value[w->top++] = value;
    }
}

/* Ops whose output says nothing about the values of their input. */
static bool reads_shape_only(const Onnx__NodeProto *n)
{
    const char *op = str_or_empty(n->op_type);
    return !strcmp(op, "Shape") || !strcmp(op, "Size");
}

/* The recurrent node whose outputs `value` is computed from, searched
 * backwards through every producer (within a bounded number of values), or
 * NULL. */
static const Onnx__NodeProto *upstream_recurrent(const scope *s, const char *value)
{
    upstream_walk w = { .top = 0, .visits = 0 };
    walk_push(&w, s, value);
    while (w.top > 0 && w.visits++ < MAX_HANDOFF_VISITS) {
        w.top--;
        const scope *o;
        const value_entry *e = scope_lookup(w.sc[w.top], w.value[w.top], &o);
        if (!e || e->producer < 0)
            continue;
        const Onnx__NodeProto *p = o->graph->node[e->producer];
        if (recurrent_op_of(p))
            return p;
        for (size_t i = 0; !reads_shape_only(p) && i < p->n_input; i++)
            walk_push(&w, o, str_or_empty(p->input[i]));
    }
    return NULL;
}

/* Finds the plan of a recurrent node; `by_node` maps "%p" keys to indices
 * and is filled on first use. */
static node_plan *plan_of(plan_list *list, strmap *by_node, const Onnx__NodeProto *node,
                          bool *oom)
{
    char key[32];
    if (by_node->count == 0)
        for (size_t i = 0; i < list->n && !*oom; i++) {
            snprintf(key, sizeof key, "%p", (const void *)list->plans[i].rs.node);
            *oom = !strmap_put(by_node, key, (int)i);
        }
    snprintf(key, sizeof key, "%p", (const void *)node);
    int at = *oom ? -1 : strmap_get(by_node, key);
    return at >= 0 ? &list->plans[at] : NULL;
}

#define HANDOFF_WHY                                                                            \
    "a hand-off, the chain restarts at every call, so neither node can stream by itself"

static void skip_for_handoff(rewrite_ctx *ctx, node_plan *p, const char *what)
{
    p->skipped = true;
    report_node_set_status(&ctx->report, p->report_node, RNNSTATE_NODE_SKIPPED);
    report_node_set_reason(&ctx->report, p->report_node, "%s: " HANDOFF_WHY, what);
}

static void record_handoff(rewrite_ctx *ctx, node_plan *giver, node_plan *taker, int slot)
{
    const char *gop = str_or_empty(giver->rs.node->op_type);
    const char *gname = str_or_empty(giver->rs.node->name);
    const char *top = str_or_empty(taker->rs.node->op_type);
    const char *tname = str_or_empty(taker->rs.node->name);
    char what[1024];
    snprintf(what, sizeof what, "initial_%s is computed from the outputs of %s '%s'",
             slot_letter[slot], gop, gname);
    skip_for_handoff(ctx, taker, what);
    if (!giver->skipped) {
        snprintf(what, sizeof what, "hands its state to %s '%s' as its initial state", top,
                 tname);
        skip_for_handoff(ctx, giver, what);
    }
    report_note(&ctx->report,
                "hand-off: %s '%s' hands its state to %s '%s' as its initial state; the model "
                "cannot stream through them, so no state pair was added for either",
                gop, gname, top, tname);
}

bool plan_mark_handoffs(rewrite_ctx *ctx, plan_list *list)
{
    strmap by_node = STRMAP_INIT;
    bool oom = false;
    for (size_t i = 0; i < list->n && !oom; i++) {
        node_plan *taker = &list->plans[i];
        for (int s = 0; s < taker->rs.op->n_slots; s++) {
            if (taker->slots[s].source.kind != SOURCE_DATA_DEPENDENT)
                continue;
            const Onnx__NodeProto *g = upstream_recurrent(
                taker->rs.sc, node_input(taker->rs.node, taker->rs.op->initial_state_input[s]));
            node_plan *giver = g ? plan_of(list, &by_node, g, &oom) : NULL;
            if (giver && giver != taker) { /* a node reading its own output is a cycle */
                record_handoff(ctx, giver, taker, s);
                break;
            }
        }
    }
    strmap_free(&by_node);
    return !oom;
}
