/* The state pass: for every recurrent node of every graph, makes each state
 * slot (initial_h/Y_h, and for LSTM initial_c/Y_c) an input and an output of
 * the main graph, unless the model already carries it.
 *
 * Phase 1 (plan.c) analyses every node; phase 2 carries the plans out, input
 * side (inputs.c) then output side (outputs.c), and records each state pair
 * in the report (see state.h). Then the caches the model already carries
 * for its convolutions are reported as context pairs (own_caches.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "passes/passes.h"
#include "state/contract.h"
#include "state/own_caches.h"
#include "state/inputs.h"
#include "state/outputs.h"
#include "state/slices.h"
#include "util/strbuf.h"

/* Records the pair in the report: the shape the input declares, and which
 * of its axes is the batch. An input the pass created, or one the node reads
 * as it is that declares none, has the node's state shape; an input the node
 * reads a view of that declares none has the shape of the output that comes
 * back to it (pair_contract_problem made sure that output declares one). */
static rnnstate_status record_pair(rewrite_ctx *ctx, node_plan *p, int slot, const char *input,
                                   const char *output, bool optional, bool added,
                                   bool input_is_new)
{
    const slot_plan *sp = &p->slots[slot];
    bool direct = !sp->reset_of && sp->source.kind == SOURCE_GRAPH_INPUT;
    pair_end in = { 0 };
    if (!input_is_new)
        pair_end_declared(ctx, input, false, &in);
    if (!in.rank && !input_is_new && !direct)
        pair_end_declared(ctx, output, true, &in);
    if (!in.rank) {
        dim_info dims[3];
        recurrent_state_dims(&p->rs, dims);
        report_add_pair(&ctx->report, input, output, dims, 3, p->rs.elem_type,
                        pair_batch_axis(&p->rs, dims, 3, true), optional, added,
                        RNNSTATE_PAIR_RECURRENT);
        return RNNSTATE_OK;
    }
    /* a dimension the input leaves unnamed is the output's (an optional
     * input of a dynamic batch declares its batch unnamed: its default is
     * empty, state/defaults.h) */
    pair_end out = { 0 };
    if (output)
        pair_end_declared(ctx, output, true, &out);
    if (out.rank == in.rank)
        for (size_t d = 0; d < in.rank; d++)
            if (!in.dims[d].known && out.dims[d].param) {
                if (!(in.dims[d].param = strdup(out.dims[d].param))) {
                    pair_end_clear(&in);
                    pair_end_clear(&out);
                    return ctx_oom(ctx);
                }
                in.dims[d].known = true;
            }
    pair_end_clear(&out);
    report_add_pair(&ctx->report, input, output, in.dims, in.rank, p->rs.elem_type,
                    pair_batch_axis(&p->rs, in.dims, in.rank, direct), optional, added,
                    RNNSTATE_PAIR_RECURRENT);
    pair_end_clear(&in);
    return RNNSTATE_OK;
}

static rnnstate_status expose_slot(rewrite_ctx *ctx, node_plan *p, int slot)
{
    char *input = NULL, *output = NULL;
    bool optional = false, input_added = false, output_added = false;
    rnnstate_status st = expose_input_side(ctx, p, slot, &input, &optional, &input_added);
    if (st == RNNSTATE_OK)
        st = expose_output_side(ctx, p, slot, input, &output, &output_added);
    if (st == RNNSTATE_OK) {
        if (input_added)
            report_node_input_added(&ctx->report, p->report_node, input);
        if (output_added)
            report_node_output_added(&ctx->report, p->report_node, output);
        st = record_pair(ctx, p, slot, input, output, optional, input_added || output_added,
                         input_added);
        ctx->changed |= input_added || output_added;
    }
    free(input);
    free(output);
    return st;
}

typedef struct pending_slots {
    pending_slot *items;
    size_t n;
} pending_slots;

static bool pending_push(pending_slots *l, node_plan *p, int slot)
{
    pending_slot *grown = owned_array_grow(l->items, l->n, sizeof *grown);
    if (!grown)
        return false;
    grown[l->n++] = (pending_slot){ p, slot };
    l->items = grown;
    return true;
}

/* The slots that a group could not assemble are exposed one by one, where
 * the final state alone fits the input it is a view of; inside an If branch,
 * where the other branch would have to pass the rows of the input the node
 * read, the node is skipped instead. */
static rnnstate_status expose_singly(rewrite_ctx *ctx, pending_slot *group, size_t n)
{
    rnnstate_status st = RNNSTATE_OK;
    char problem[512];
    for (size_t i = 0; st == RNNSTATE_OK && i < n; i++) {
        node_plan *p = group[i].plan;
        int slot = group[i].slot;
        if (p->skipped)
            continue;
        if (pair_contract_problem(ctx, p, slot, true, problem, sizeof problem)) {
            plan_skip(ctx, p, problem);
            continue;
        }
        const char *input = p->slots[slot].source.input;
        if (p->rs.sc->parent) {
            snprintf(problem, sizeof problem,
                     "initial_%s is a view of graph input '%s' whose rows cannot be told, inside "
                     "an If branch: its final state cannot be threaded out with a matching "
                     "pass-through",
                     slot_letter[slot], input);
            plan_skip(ctx, p, problem);
            continue;
        }
        st = expose_slot(ctx, p, slot);
        report_node_warn(&ctx->report, p->report_node,
                         "initial_%s is a view of graph input '%s' whose final state reached no "
                         "output, and the views do not tile it: Y_%s was exposed on its own, the "
                         "caller must assemble '%s' from it",
                         slot_letter[slot], input, slot_letter[slot], input);
    }
    return st;
}

/* How many slots of all nodes read graph input `input` (directly, through
 * views, or as the state a constant resets). */
static size_t slots_reading(const plan_list *plans, const char *input)
{
    size_t n = 0;
    for (size_t i = 0; i < plans->n; i++)
        for (int s = 0; s < plans->plans[i].rs.op->n_slots; s++) {
            const slot_plan *sp = &plans->plans[i].slots[s];
            bool fed = sp->source.kind == SOURCE_GRAPH_INPUT ||
                       sp->source.kind == SOURCE_VIEW_OF_INPUT;
            n += (fed && !strcmp(sp->source.input, input)) ||
                 (sp->reset_of && !strcmp(sp->reset_of, input));
        }
    return n;
}

/* Groups the pending slots by the input they slice, and assembles each group
 * (rows no slot reads pass through unchanged). */
static rnnstate_status assemble_groups(rewrite_ctx *ctx, const plan_list *plans,
                                       pending_slots *pending)
{
    rnnstate_status st = RNNSTATE_OK;
    pending_slot *group = malloc((pending->n ? pending->n : 1) * sizeof *group);
    bool *done = calloc(pending->n ? pending->n : 1, sizeof *done);
    if (!group || !done)
        st = ctx_oom(ctx);
    for (size_t i = 0; st == RNNSTATE_OK && i < pending->n; i++) {
        if (done[i])
            continue;
        const char *input = pending->items[i].plan->slots[pending->items[i].slot].source.input;
        size_t n = 0;
        for (size_t j = i; j < pending->n; j++) {
            const pending_slot *q = &pending->items[j];
            if (!done[j] && !strcmp(q->plan->slots[q->slot].source.input, input)) {
                group[n++] = *q;
                done[j] = true;
            }
        }
        bool handled;
        st = assemble_sliced_states(ctx, group, n, slots_reading(plans, input) == n, &handled);
        if (st == RNNSTATE_OK && !handled)
            st = expose_singly(ctx, group, n);
    }
    free(group);
    free(done);
    return st;
}

static rnnstate_status apply_plan(rewrite_ctx *ctx, node_plan *p, pending_slots *pending)
{
    rnnstate_status st = RNNSTATE_OK;
    for (int s = 0; st == RNNSTATE_OK && s < p->rs.op->n_slots; s++) {
        if (slot_half_stateful(&p->slots[s]))
            st = pending_push(pending, p, s) ? RNNSTATE_OK : ctx_oom(ctx);
        else
            st = expose_slot(ctx, p, s);
    }
    return st;
}

/* What a caller streaming an exposed node must know: chunks of exactly its
 * fixed sequence length, and that a backward direction does not stream. A
 * node the pass leaves as it was gets neither: nothing changed for it. */
static void warn_exposed(rewrite_ctx *ctx, const node_plan *p)
{
    const rnnstate_node_report *nr = &ctx->report.report->nodes[p->report_node];
    if (nr->fixed_sequence_length >= 0)
        report_node_warn(&ctx->report, p->report_node,
                         "the sequence length is fixed at %lld: chunks must then have exactly "
                         "%lld step%s; re-export with a dynamic time axis to stream %s",
                         (long long)nr->fixed_sequence_length,
                         (long long)nr->fixed_sequence_length,
                         nr->fixed_sequence_length == 1 ? "" : "s",
                         nr->fixed_sequence_length == 1 ? "several steps per call"
                                                        : "shorter chunks");
    char buf[32];
    const char *direction = node_attr_string(p->rs.node, "direction", buf, sizeof buf);
    if (p->rs.directions == 2 || (direction && !strcmp(direction, "reverse")))
        report_node_warn(&ctx->report, p->report_node,
                         "%s direction: running it in chunks is not equivalent to running the "
                         "whole sequence",
                         p->rs.directions == 2 ? "bidirectional, the backward" : "reverse");
}

/* What ONNX Runtime will refuse in the model as written: batch-first
 * (layout=1) recurrent nodes, which its CPU kernels do not run (the original
 * neither), and a fixed batch, which the state pairs then have too. One note
 * each for the model. */
static void note_runtime_refusals(rewrite_ctx *ctx, const plan_list *plans)
{
    size_t batch_first = 0;
    const node_plan *first = NULL, *fixed = NULL;
    for (size_t i = 0; i < plans->n; i++) {
        const node_plan *p = &plans->plans[i];
        if (p->rs.batch_first && !batch_first++)
            first = p;
        const rnnstate_node_report *nr = &ctx->report.report->nodes[p->report_node];
        if (!fixed && !p->skipped && (nr->n_inputs_added || nr->n_outputs_added) &&
            batch_is_fixed(&p->rs))
            fixed = p;
    }
    if (batch_first)
        report_note(&ctx->report,
                    "%zu recurrent node%s batch-first (layout=1), %s '%s'%s: ONNX Runtime's CPU "
                    "kernels refuse layout 1, in the original model as in this one; "
                    "--to-layout0 converts such nodes",
                    batch_first, batch_first == 1 ? " is" : "s are", first->rs.op->name,
                    str_or_empty(first->rs.node->name), batch_first == 1 ? "" : " and others");
    if (fixed)
        report_note(&ctx->report,
                    "the batch is fixed at %lld (%s '%s' and its state): the runtime refuses any "
                    "other batch; to run several streams at once, re-export with a dynamic "
                    "batch axis (torch.onnx.export's dynamic_axes)",
                    (long long)fixed->rs.batch.value, fixed->rs.op->name,
                    str_or_empty(fixed->rs.node->name));
}

/* A node is "updated" when the pass added an input or output for it. */
static void settle_statuses(rewrite_ctx *ctx, const plan_list *plans)
{
    for (size_t i = 0; i < plans->n; i++) {
        size_t node = plans->plans[i].report_node;
        const rnnstate_node_report *nr = &ctx->report.report->nodes[node];
        if (plans->plans[i].skipped || (!nr->n_inputs_added && !nr->n_outputs_added))
            continue;
        report_node_set_status(&ctx->report, node, RNNSTATE_NODE_UPDATED);
        warn_exposed(ctx, &plans->plans[i]);
    }
    note_runtime_refusals(ctx, plans);
}

static void remove_dropped_defaults(rewrite_ctx *ctx)
{
    Onnx__GraphProto *g = ctx->graph;
    size_t kept = 0;
    if (!ctx->dropped.count)
        return;
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (strmap_get(&ctx->dropped, str_or_empty(g->initializer[i]->name)) >= 0)
            model_release_tensor(ctx->scopes.scopes[0]->model, g->initializer[i]);
        else
            g->initializer[kept++] = g->initializer[i];
    }
    g->n_initializer = kept;
}

rnnstate_status pass_state(rewrite_ctx *ctx)
{
    plan_list plans = { NULL, 0 };
    pending_slots pending = { NULL, 0 };
    if (!scope_tree_refresh(&ctx->scopes))
        return ctx_oom(ctx);
    rnnstate_status st = plan_all_nodes(ctx, &plans);
    for (size_t i = 0; st == RNNSTATE_OK && i < plans.n; i++)
        if (!plans.plans[i].skipped)
            st = apply_plan(ctx, &plans.plans[i], &pending);
    if (st == RNNSTATE_OK)
        st = assemble_groups(ctx, &plans, &pending);
    if (st == RNNSTATE_OK && report_builder_failed(&ctx->report))
        st = ctx_oom(ctx);
    if (st == RNNSTATE_OK)
        settle_statuses(ctx, &plans);
    /* the indices stay valid where nothing was applied (every node skipped,
     * reset or already stateful) */
    bool touched = false;
    for (size_t i = 0; i < plans.n; i++)
        touched |= !plans.plans[i].skipped;
    if (st == RNNSTATE_OK && !scope_tree_flush(&ctx->scopes))
        st = ctx_oom(ctx);
    ctx->scopes.stale |= touched;
    /* the model's own context caches, once the recurrent pairs are known,
     * on an index that describes the graph (the next pass reads it anyway) */
    bool caches = plans.n && own_caches_possible(ctx->model->graph);
    if (st == RNNSTATE_OK && caches && !scope_tree_refresh(&ctx->scopes))
        st = ctx_oom(ctx);
    if (st == RNNSTATE_OK && caches)
        st = report_own_caches(ctx);
    if (st == RNNSTATE_OK && report_builder_failed(&ctx->report))
        st = ctx_oom(ctx);
    if (st == RNNSTATE_OK)
        remove_dropped_defaults(ctx);
    ctx->scopes.stale |= ctx->dropped.count > 0;
    free(pending.items);
    plan_list_free(&plans);
    return st;
}
