/* Phase 1 of the state pass: plans every recurrent node.
 *
 * What differs between the ops (the state's inputs and outputs, where
 * hidden_size comes from, layout, element types) is in recurrent_ops.c. The
 * state is [num_directions, batch, hidden] for layout 0 and
 * [batch, num_directions, hidden] for layout 1.
 * A node whose initial state is computed from data is skipped whole: exposing
 * half of an LSTM's state would make streaming silently wrong. Nodes inside
 * Loop and Scan bodies run once per iteration, so carrying their state across
 * calls is ambiguous: they are skipped too. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/strbuf.h"
#include "state/chains.h"
#include "state/contract.h"
#include "state/plan.h"
#include "state/types.h"
#include "model/tensor_util.h"

/* The element type of the state: the type X, W, R and the states share,
 * declared or inferred through the graph. A quantized op's W is int8: its
 * state has X's type (or its states'), float unless known. */
static int32_t state_elem_type(const elem_types *types, const scope *s,
                               const Onnx__NodeProto *node, const recurrent_op *op)
{
    int32_t t = elem_type_of(types, s, node_input(node, RECURRENT_INPUT_X));
    for (int slot = 0; !t && slot < op->n_slots; slot++)
        t = elem_type_of(types, s, node_input(node, (size_t)op->initial_state_input[slot]));
    if (op->quantized_weights)
        return t ? t : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    for (size_t in = RECURRENT_INPUT_W; !t && in < RECURRENT_REQUIRED_INPUTS; in++)
        t = elem_type_of(types, s, node_input(node, in));
    return t;
}

/* Why the state's element type is unusable, in buf. */
static const char *elem_type_problem(const elem_types *types, const recurrent_shape *rs,
                                     char *buf, size_t size)
{
    if (rs->elem_type) {
        snprintf(buf, size, "the element type X, W and R share is %s, not numeric",
                 dtype_name(rs->elem_type));
        return buf;
    }
    char why[256];
    elem_type_blocker(types, rs->sc, rs->x, why, sizeof why);
    snprintf(buf, size, "the element type of X ('%s'), W ('%s') and R cannot be inferred: %s",
             rs->x, node_input(rs->node, RECURRENT_INPUT_W), why);
    return buf;
}

static bool hidden_size(const scope *s, const Onnx__NodeProto *node, const recurrent_op *op,
                        int64_t *hidden)
{
    *hidden = node_attr_int(node, "hidden_size", -1);
    if (*hidden > 0)
        return true;
    dim_info d = { 0 };
    if (!infer_dim(s, node_input(node, op->hidden_input), op->hidden_axis, &d))
        return false;
    *hidden = d.known && !d.param ? d.value : -1;
    dim_info_clear(&d);
    return true;
}

static int64_t direction_count(const Onnx__NodeProto *node)
{
    char buf[32];
    const char *dir = node_attr_string(node, "direction", buf, sizeof buf);
    return dir && !strcmp(dir, "bidirectional") ? 2 : 1;
}

/* Records a fixed sequence length in the report: the node then needs chunks
 * of exactly that many steps (pass_state.c warns about it if the node is
 * exposed), or runs across something other than time. */
static bool record_fixed_sequence_length(rewrite_ctx *ctx, const node_plan *p)
{
    dim_info t = { 0 };
    if (!infer_dim(p->rs.sc, p->rs.x, p->rs.batch_first ? 1 : 0, &t))
        return false;
    if (t.known && !t.param)
        report_node_set_sequence_length(&ctx->report, p->report_node, t.value);
    dim_info_clear(&t);
    return true;
}

/* Why the include/exclude patterns leave the node out, or NULL. */
static const char *selection_skip_reason(const rnnstate_options *o, const char *name, char *buf,
                                         size_t size)
{
    for (size_t i = 0; i < o->n_exclude; i++) {
        if (fnmatch(o->exclude[i], name, 0) == 0) {
            snprintf(buf, size, "excluded by pattern '%s'", o->exclude[i]);
            return buf;
        }
    }
    for (size_t i = 0; i < o->n_include; i++)
        if (fnmatch(o->include[i], name, 0) == 0)
            return NULL;
    if (o->n_include == 0)
        return NULL;
    snprintf(buf, size, "matches no include pattern");
    return buf;
}

/* Fills the node's state shape; returns a skip reason, or NULL when the node
 * can be handled, or "" when out of memory. */
static const char *describe_node(const elem_types *types, const stream_analysis *stream,
                                 node_plan *p, char *buf, size_t size)
{
    recurrent_shape *rs = &p->rs;
    const Onnx__NodeProto *node = rs->node;
    rs->x = node_input(node, RECURRENT_INPUT_X);
    rs->batch_first = recurrent_batch_first(rs->op, node);
    rs->directions = direction_count(node);
    rs->elem_type = state_elem_type(types, rs->sc, node, rs->op);
    if (node->n_input < RECURRENT_REQUIRED_INPUTS || !*rs->x)
        return "malformed node: X, W and R are required";
    if (!dtype_size(rs->elem_type))
        return elem_type_problem(types, rs, buf, size);
    if (!hidden_size(rs->sc, node, rs->op, &rs->hidden))
        return "";
    if (rs->hidden <= 0)
        return "hidden_size is missing and R's shape is unknown";
    if (!infer_dim(rs->sc, rs->x, rs->batch_first ? 0 : 1, &rs->batch))
        return "";
    if (!rs->batch.known) {
        /* not declared: named after the input dimension it is (a multiple
         * of), as the stream analysis tells it, else a fresh symbolic name */
        const char *told = stream_batch_name(stream, node);
        size_t n = told ? strlen(told) + 1 : strlen(rs->prefix) + 8;
        if (!(rs->batch.param = malloc(n)))
            return "";
        snprintf(rs->batch.param, n, told ? "%s" : "%s_batch", told ? told : rs->prefix);
        rs->batch.known = true;
    }
    if (!state_default_fits(rs))
        return "the state is too large for a default (over 64 MiB for one batch entry): check "
               "hidden_size";
    return NULL;
}

bool source_is_zero(const state_source *s)
{
    for (size_t i = 0; i < sizeof s->fill; i++)
        if (s->fill[i])
            return false;
    return s->uniform;
}

/* Why a slot's source rules the whole node out, or NULL. */
static const char *check_source(const recurrent_shape *rs, const state_source *s, char *buf,
                                size_t size, int slot)
{
    if (s->kind == SOURCE_DATA_DEPENDENT) {
        if (s->too_far && s->node)
            snprintf(buf, size,
                     "initial_%s comes through more than %d nodes, further back than the "
                     "trace follows; it stopped at %s node '%s'",
                     slot_letter[slot], MAX_TRACE_DEPTH, str_or_empty(s->node->op_type),
                     str_or_empty(s->node->name));
        else if (s->node)
            snprintf(buf, size, "initial_%s is computed from data by %s node '%s'",
                     slot_letter[slot], str_or_empty(s->node->op_type),
                     str_or_empty(s->node->name));
        else
            snprintf(buf, size, "initial_%s has no producer in this graph", slot_letter[slot]);
        return buf;
    }
    if (s->kind != SOURCE_CONSTANT)
        return NULL;
    if (s->uniform) {
        if (s->elem_type == rs->elem_type || source_is_zero(s))
            return NULL;
        snprintf(buf, size, "initial_%s is a constant of type %s but the state is %s",
                 slot_letter[slot], dtype_name(s->elem_type), dtype_name(rs->elem_type));
        return buf;
    }
    if (state_pattern_fits(rs, s->pattern))
        return NULL;
    snprintf(buf, size,
             "initial_%s is an Expand of a non-uniform constant whose shape cannot serve as a "
             "default for the state",
             slot_letter[slot]);
    return buf;
}

/* Analyses one node; returns a skip reason, NULL, or "" when out of memory. */
/* True when every enclosing graph is a branch of an If that has both, so
 * that a final state can be threaded out of them. */
static bool branches_complete(const scope_tree *tree, const scope *sc)
{
    for (; sc->parent; sc = sc->parent)
        if (!scope_if_sibling(tree, sc))
            return false;
    return true;
}

/* A node that runs exactly one step (its sequence length fixed at 1, no
 * sequence_lens) has its final h in Y as well as in Y_h: Y [1, D, batch,
 * hidden] holds Y_h's numbers. Exporters of PyTorch's LSTMCell may take h
 * from Y and leave Y_h unused (Silero VAD v6, 16 kHz, opset 15: the state
 * pair state -> stateN is then carried through Y and Y_c). When Y_h reaches
 * no output, Y is followed instead, and taken only where it reaches the
 * output that the node's cell state (Y_c) reaches, so that a model's
 * sequence output is never taken for a state. */
static void single_step_h(rewrite_ctx *ctx, node_plan *p)
{
    slot_plan *h = &p->slots[0], *c = &p->slots[1];
    const Onnx__NodeProto *n = p->rs.node;
    const char *y = node_output(n, 0);
    if (p->rs.op->n_slots < 2 || h->reached || !c->reached || !*y ||
        (n->n_input > 4 && *node_input(n, 4)) ||
        ctx->report.report->nodes[p->report_node].fixed_sequence_length != 1)
        return;
    const char *r = trace_final_state(&ctx->scopes, p->rs.sc, y, false);
    if (r && !strcmp(r, c->reached)) {
        h->reached = r;
        h->reached_through_y = true;
    }
}

static const char *analyse(rewrite_ctx *ctx, const elem_types *types, node_plan *p, char *reason,
                           size_t size)
{
    if (p->rs.sc->in_loop)
        return "inside a Loop or Scan body: it runs once per iteration, so carrying its state "
               "across calls is ambiguous";
    if (!branches_complete(&ctx->scopes, p->rs.sc))
        return "inside an If node that lacks a then_branch or else_branch (an invalid model)";
    const char *skip = describe_node(types, &ctx->stream, p, reason, size);
    if (!skip && !record_fixed_sequence_length(ctx, p))
        skip = "";
    if (!skip)
        skip = selection_skip_reason(&ctx->options, str_or_empty(p->rs.node->name), reason, size);
    for (int s = 0; !skip && s < p->rs.op->n_slots; s++) {
        slot_plan *sp = &p->slots[s];
        const char *y = node_output(p->rs.node, p->rs.op->final_state_output[s]);
        if (!trace_initial_state(&ctx->scopes, p->rs.sc,
                                 node_input(p->rs.node, p->rs.op->initial_state_input[s]),
                                 &sp->source))
            return "";
        skip = check_source(&p->rs, &sp->source, reason, size, s);
        sp->reached = *y ? trace_final_state(&ctx->scopes, p->rs.sc, y, false) : NULL;
        sp->reached_direct = *y ? trace_final_state(&ctx->scopes, p->rs.sc, y, true) : NULL;
    }
    if (!skip)
        single_step_h(ctx, p);
    return skip;
}

/* rs->prefix = "{op}_{k}", cut to its size as snprintf() would cut it;
 * written without printf (one per recurrent node). */
static void set_prefix(recurrent_shape *rs, const char *op, int k)
{
    char digits[INT_DIGITS_SIZE];
    size_t n_digits;
    const char *number = int_digits(digits, k, &n_digits);
    size_t room = sizeof rs->prefix - 1, n = strlen(op);
    n = n < room ? n : room;
    memcpy(rs->prefix, op, n);
    if (n < room)
        rs->prefix[n++] = '_';
    size_t m = n_digits < room - n ? n_digits : room - n;
    memcpy(rs->prefix + n, number, m);
    rs->prefix[n + m] = '\0';
}

static rnnstate_status plan_node(rewrite_ctx *ctx, const elem_types *types, scope *sc,
                                 size_t index, const recurrent_op *op, int k, node_plan *p)
{
    char reason[512];
    memset(p, 0, sizeof *p);
    p->rs.op = op;
    p->rs.sc = sc;
    p->rs.node = sc->graph->node[index];
    p->rs.node_index = index;
    p->rs.k = k;
    set_prefix(&p->rs, op->name, k);
    p->report_node = report_add_node(&ctx->report, sc->path, op->name,
                                     str_or_empty(p->rs.node->name));
    const char *skip = analyse(ctx, types, p, reason, sizeof reason);
    if (skip && !*skip)
        return ctx_oom(ctx);
    if (skip)
        plan_skip(ctx, p, skip);
    return RNNSTATE_OK;
}

/* A constant initial state whose final state reaches an output that another
 * slot already pairs with a model input only resets that state (Silero: one
 * If branch starts from zeros, the other from the caller's h and c): the
 * model is stateful already. */
static bool mark_resets(plan_list *list)
{
    strmap paired = STRMAP_INIT; /* output -> index of a plan slot fed by a model input */
    bool ok = true;
    for (size_t i = 0; ok && i < list->n; i++)
        for (int s = 0; ok && !list->plans[i].skipped && s < list->plans[i].rs.op->n_slots; s++) {
            const slot_plan *sp = &list->plans[i].slots[s];
            bool fed = sp->source.kind == SOURCE_GRAPH_INPUT ||
                       sp->source.kind == SOURCE_VIEW_OF_INPUT;
            if (fed && sp->reached)
                ok = strmap_put(&paired, sp->reached, (int)(i * 2 + (size_t)s));
        }
    for (size_t i = 0; ok && i < list->n; i++)
        for (int s = 0; !list->plans[i].skipped && s < list->plans[i].rs.op->n_slots; s++) {
            slot_plan *sp = &list->plans[i].slots[s];
            int at = sp->reached && sp->source.kind == SOURCE_CONSTANT
                         ? strmap_get(&paired, sp->reached)
                         : -1;
            if (at >= 0)
                sp->reset_of = list->plans[at / 2].slots[at % 2].source.input;
        }
    strmap_free(&paired);
    return ok;
}

bool slot_half_stateful(const slot_plan *sp)
{
    return !sp->reset_of && sp->source.kind == SOURCE_VIEW_OF_INPUT && !sp->reached;
}

void plan_skip(rewrite_ctx *ctx, node_plan *p, const char *reason)
{
    p->skipped = true;
    report_node_set_status(&ctx->report, p->report_node, RNNSTATE_NODE_SKIPPED);
    report_node_set_reason(&ctx->report, p->report_node, "%s", reason);
}

/* Leaves alone every node one of whose pairs would break the contract
 * (contract.h). Done once the resets are known (a reset pairs the state
 * input it resets) and before the nodes reset at every call are told from
 * the state the model carries: a pair that cannot be fed back carries
 * nothing. Half-stateful slots are checked with the views they are
 * assembled with, by the pass. */
static void skip_broken_pairs(rewrite_ctx *ctx, plan_list *list)
{
    char problem[512];
    for (size_t i = 0; i < list->n; i++) {
        node_plan *p = &list->plans[i];
        for (int s = 0; !p->skipped && s < p->rs.op->n_slots; s++)
            if (!slot_half_stateful(&p->slots[s]) &&
                pair_contract_problem(ctx, p, s, false, problem, sizeof problem))
                plan_skip(ctx, p, problem);
    }
}

rnnstate_status plan_all_nodes(rewrite_ctx *ctx, plan_list *list)
{
    int counts[RECURRENT_OPS_MAX] = { 0 };
    list->plans = NULL;
    list->n = 0;
    elem_types types;
    if (!elem_types_build(&types, &ctx->scopes))
        return ctx_oom(ctx);
    rnnstate_status st = RNNSTATE_OK;
    for (size_t i = 0; st == RNNSTATE_OK && i < ctx->scopes.n; i++) {
        scope *sc = ctx->scopes.scopes[i];
        for (size_t n = 0; st == RNNSTATE_OK && n < sc->graph->n_node; n++) {
            const recurrent_op *op = recurrent_op_of(sc->graph->node[n]);
            if (!op)
                continue;
            node_plan *grown = owned_array_grow(list->plans, list->n, sizeof *grown);
            if (!grown) {
                st = ctx_oom(ctx);
                break;
            }
            list->plans = grown;
            st = plan_node(ctx, &types, sc, n, op, counts[recurrent_op_index(op)]++,
                           &grown[list->n++]);
        }
    }
    elem_types_free(&types);
    if (st != RNNSTATE_OK)
        return st;
    if (!plan_mark_handoffs(ctx, list) || !mark_resets(list))
        return ctx_oom(ctx);
    skip_broken_pairs(ctx, list);
    plan_mark_reset_nodes(ctx, list);
    return RNNSTATE_OK;
}

void plan_list_free(plan_list *list)
{
    for (size_t i = 0; i < list->n; i++) {
        dim_info_clear(&list->plans[i].rs.batch);
        free(list->plans[i].rs.batch_axis_name);
        free(list->plans[i].rs.batch_size);
        free(list->plans[i].rs.one);
        free(list->plans[i].rs.zero);
        for (int s = 0; s < RECURRENT_MAX_SLOTS; s++)
            state_source_clear(&list->plans[i].slots[s].source);
    }
    free(list->plans);
    list->plans = NULL;
    list->n = 0;
}

char *slot_name(rewrite_ctx *ctx, const recurrent_shape *rs, const char *what, int slot)
{
    /* "initial_h", "Y_c": joined without printf (twice per state pair) */
    char label[32];
    size_t n = strlen(what), m = strlen(slot_letter[slot]);
    if (n + m + 2 > sizeof label)
        return NULL;
    memcpy(label, what, n);
    label[n] = '_';
    memcpy(label + n + 1, slot_letter[slot], m + 1);
    char *base = expand_name_template(ctx->options.name_template, rs->op->name, rs->k,
                                      str_or_empty(rs->node->name), label);
    char *name = base ? name_registry_unique(&ctx->names, base) : NULL;
    free(base);
    return name;
}
