/* Phase 2 of the state pass, output side: make Y_h/Y_c reach an output of the
 * main graph. A node inside If branches gets its final state threaded out:
 * each enclosing branch outputs it, the other branch of that If passes the
 * incoming state through unchanged (it did not run the node, so the state
 * does not move), and the If gets a matching output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state.h"
#include "tensor_util.h"

static rnnstate_status add_output(rewrite_ctx *ctx, scope *sc, const char *name,
                                  const recurrent_shape *rs)
{
    dim_info dims[3];
    recurrent_state_dims(rs, dims);
    Onnx__ValueInfoProto *vi = value_info_new(name, rs->elem_type, dims, 3);
    if (!vi || !scope_add_output(sc, vi))
        return ctx_oom(ctx);
    return RNNSTATE_OK;
}

/* The graph of the other branch of the If holding `branch`. */
Onnx__GraphProto *sibling_branch(const Onnx__NodeProto *if_node,
                                        const Onnx__GraphProto *branch)
{
    const Onnx__AttributeProto *then_b = node_attr(if_node, "then_branch");
    const Onnx__AttributeProto *else_b = node_attr(if_node, "else_branch");
    if (!then_b || !else_b || !then_b->g || !else_b->g)
        return NULL;
    return then_b->g == branch ? else_b->g : then_b->g;
}

/* Identity(state_input) as a new output of a branch that does not run the node. */
static rnnstate_status pass_state_through(rewrite_ctx *ctx, scope *branch,
                                          const char *state_input, const char *base,
                                          const recurrent_shape *rs)
{
    char *out = name_registry_unique(&ctx->names, base);
    char *node_name = out ? name_registry_unique(&ctx->names, out) : NULL;
    Onnx__NodeProto *node = node_name ? node_new("Identity", node_name) : NULL;
    bool ok = node && append_string(&node->input, &node->n_input, state_input) &&
              append_string(&node->output, &node->n_output, out);
    if (!ok && node)
        protobuf_c_message_free_unpacked(&node->base, NULL);
    ok = ok && scope_queue_node(branch, SIZE_MAX, node);
    rnnstate_status st = ok ? add_output(ctx, branch, out, rs) : ctx_oom(ctx);
    free(out);
    free(node_name);
    return st;
}

/* Threads `value` (in scope `sc`) out to the main graph; *main_name gets the
 * main-graph output. Each level is an If: the other branch passes
 * `state_input` through. */
static rnnstate_status thread_out(rewrite_ctx *ctx, scope *sc, char *value, const char *final,
                                  const char *state_input, const recurrent_shape *rs,
                                  char **main_name)
{
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && sc->parent) {
        Onnx__NodeProto *if_node = sc->parent->graph->node[sc->parent_node];
        scope *other = scope_of_graph(&ctx->scopes, sibling_branch(if_node, sc->graph));
        if (!other) { /* planning skips such nodes: kept as a guard */
            free(value);
            return set_error(ctx->err, RNNSTATE_ERR_INVALID,
                             "%s: If node '%s' lacks a then_branch or else_branch", ctx->label,
                             str_or_empty(if_node->name));
        }
        /* the main graph's output takes the name reserved for it */
        char *up = sc->parent->parent ? name_registry_unique(&ctx->names, value) : strdup(final);
        st = up ? add_output(ctx, sc, value, rs) : ctx_oom(ctx);
        if (st == RNNSTATE_OK)
            st = pass_state_through(ctx, other, state_input, value, rs);
        if (st == RNNSTATE_OK && !append_string(&if_node->output, &if_node->n_output, up))
            st = ctx_oom(ctx);
        free(value);
        value = up;
        sc = sc->parent;
    }
    if (st == RNNSTATE_OK)
        st = add_output(ctx, sc, value, rs);
    if (st == RNNSTATE_OK)
        *main_name = value;
    else
        free(value);
    return st;
}

/* Names Y_h/Y_c in the node's graph: an output nothing reads (PyTorch names
 * them all) is renamed to the predictable template name; one that feeds
 * computation keeps its name. Returns the name, or NULL when out of memory. */
static char *name_final_state(rewrite_ctx *ctx, node_plan *p, int slot, const char *final,
                              bool *renamed)
{
    Onnx__NodeProto *node = (Onnx__NodeProto *)p->rs.node;
    char *y = strdup(node_output(node, p->rs.op->final_state_output[slot])); /* replaced below */
    if (!y)
        return NULL;
    *renamed = !*y || graph_index_value_unused(&p->rs.sc->index, y);
    if (!*renamed)
        return y;
    char *name = p->rs.sc->parent ? name_registry_unique(&ctx->names, final) : strdup(final);
    /* the old name's value_info would describe nothing */
    if (name && ((*y && !scope_forget_value_info(p->rs.sc, y)) ||
                 !node_set_output(node, p->rs.op->final_state_output[slot], name))) {
        free(name);
        name = NULL;
    }
    free(y);
    return name;
}

rnnstate_status expose_output_side(rewrite_ctx *ctx, node_plan *p, int slot,
                                   const char *input_name, char **output_name, bool *added)
{
    const slot_plan *sp = &p->slots[slot];
    bool model_fed = sp->reset_of || sp->source.kind == SOURCE_GRAPH_INPUT ||
                     sp->source.kind == SOURCE_VIEW_OF_INPUT;
    /* a new input pairs only with Y_h itself: an output assembled from several
     * states (PyTorch's hn) would not fit it */
    const char *reached = model_fed ? sp->reached : sp->reached_direct;
    *added = false;
    if (reached) {
        report_node_decide(&ctx->report, p->report_node, "Y_%s: already reaches graph output %s",
                           slot_letter[slot], reached);
        *output_name = strdup(reached);
        return *output_name ? RNNSTATE_OK : ctx_oom(ctx);
    }
    bool renamed = false;
    char *final = slot_name(ctx, &p->rs, "Y", slot);
    char *local = final ? name_final_state(ctx, p, slot, final, &renamed) : NULL;
    if (!local) {
        free(final);
        return ctx_oom(ctx);
    }
    rnnstate_status st;
    if (p->rs.sc->parent) {
        st = thread_out(ctx, p->rs.sc, local, final, input_name, &p->rs, output_name);
        free(final);
    } else {
        free(final);
        st = add_output(ctx, ctx->scopes.scopes[0], local, &p->rs);
        if (st == RNNSTATE_OK)
            *output_name = local;
        else
            free(local);
    }
    if (st == RNNSTATE_OK) {
        *added = true;
        report_node_decide(&ctx->report, p->report_node, "Y_%s: %s, now graph output %s%s",
                           slot_letter[slot], renamed ? "unused" : "internal", *output_name,
                           p->rs.sc->parent ? " (threaded out of its If branches)" : "");
    }
    return st;
}

/* ---- half-stateful models ---------------------------------------------- */

typedef struct sliced {
    pending_slot at;
    int64_t start, end;
} sliced;

/* The [start, end) of a slot's Slice along axis 0 of the input, read from
 * constant starts/ends (and axes, if given); false for anything else. */
static bool slice_range(const node_plan *p, int slot, int64_t *start, int64_t *end)
{
    const scope *sc = p->rs.sc;
    const char *value = node_input(p->rs.node, p->rs.op->initial_state_input[slot]);
    const scope *o;
    const value_entry *e = scope_lookup(sc, value, &o);
    if (!e || e->producer < 0 || o->parent)
        return false;
    const Onnx__NodeProto *s = o->graph->node[e->producer];
    if (strcmp(str_or_empty(s->op_type), "Slice") || s->n_input < 3 ||
        strcmp(node_input(s, 0), p->slots[slot].source.input))
        return false;
    int64_t *v[3] = { NULL, NULL, NULL };
    size_t n[3] = { 0, 0, 0 };
    bool ok = true;
    for (int i = 0; i < 3 && ok; i++) {
        if (i == 2 && s->n_input < 4)
            break;
        const Onnx__TensorProto *t =
            scope_tensor_data(o, constant_tensor(o, node_input(s, (size_t)i + 1)));
        ok = t && tensor_read_int64s(t, &v[i], &n[i]) && n[i] == 1;
    }
    ok = ok && (!v[2] || v[2][0] == 0) && s->n_input < 5 && v[0][0] >= 0 && v[1][0] > v[0][0];
    if (ok) {
        *start = v[0][0];
        *end = v[1][0];
    }
    for (int i = 0; i < 3; i++)
        free(v[i]);
    return ok;
}

static int by_start(const void *a, const void *b)
{
    const sliced *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* The declared size of axis 0 of a main-graph input, or -1. */
static int64_t input_rows(rewrite_ctx *ctx, const char *input)
{
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
    const Onnx__TensorShapeProto *sh =
        e && e->graph_input >= 0 ? value_info_shape(ctx->graph->input[e->graph_input]) : NULL;
    if (!sh || sh->n_dim == 0 ||
        sh->dim[0]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
        return -1;
    return sh->dim[0]->dim_value;
}

/* True when the slices cover [0, rows) exactly, each one node's directions. */
static bool slices_tile(const sliced *s, size_t n, int64_t rows)
{
    int64_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].start != next || s[i].end - s[i].start != s[i].at.plan->rs.directions)
            return false;
        next = s[i].end;
    }
    return next == rows;
}

static rnnstate_status concat_states(rewrite_ctx *ctx, const char *input, sliced *s, size_t n,
                                     char **out)
{
    char base[512];
    snprintf(base, sizeof base, "%s_out", input);
    *out = name_registry_unique(&ctx->names, base);
    char *node_name = *out ? name_registry_unique(&ctx->names, *out) : NULL;
    Onnx__NodeProto *concat = node_name ? node_new("Concat", node_name) : NULL;
    bool ok = concat && node_add_int_attr(concat, "axis", 0) &&
              append_string(&concat->output, &concat->n_output, *out);
    for (size_t i = 0; ok && i < n; i++) {
        node_plan *p = s[i].at.plan;
        bool renamed;
        char *final = slot_name(ctx, &p->rs, "Y", s[i].at.slot);
        char *y = final ? name_final_state(ctx, p, s[i].at.slot, final, &renamed) : NULL;
        ok = y && append_string(&concat->input, &concat->n_input, y);
        free(final);
        free(y);
    }
    if (!ok && concat)
        protobuf_c_message_free_unpacked(&concat->base, NULL);
    ok = ok && scope_queue_node(ctx->scopes.scopes[0], SIZE_MAX, concat);
    free(node_name);
    return ok ? RNNSTATE_OK : ctx_oom(ctx);
}

/* Declares the assembled output with the input's own type and shape. */
static rnnstate_status declare_like_input(rewrite_ctx *ctx, const char *input, const char *out)
{
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
    Onnx__ValueInfoProto *src = ctx->graph->input[e->graph_input];
    Onnx__ValueInfoProto *vi = value_info_copy(src, out);
    return vi && scope_add_output(ctx->scopes.scopes[0], vi) ? RNNSTATE_OK : ctx_oom(ctx);
}

rnnstate_status assemble_sliced_states(rewrite_ctx *ctx, pending_slot *pending, size_t n,
                                       bool *handled)
{
    *handled = false;
    const char *input = pending[0].plan->slots[pending[0].slot].source.input;
    sliced *s = calloc(n, sizeof *s);
    if (!s)
        return ctx_oom(ctx);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        s[i].at = pending[i];
        ok = !pending[i].plan->rs.sc->parent && !pending[i].plan->rs.batch_first &&
             slice_range(pending[i].plan, pending[i].slot, &s[i].start, &s[i].end);
    }
    if (ok)
        qsort(s, n, sizeof *s, by_start);
    rnnstate_status st = RNNSTATE_OK;
    if (ok && slices_tile(s, n, input_rows(ctx, input))) {
        char *out = NULL;
        st = concat_states(ctx, input, s, n, &out);
        if (st == RNNSTATE_OK)
            st = declare_like_input(ctx, input, out);
        for (size_t i = 0; st == RNNSTATE_OK && i < n; i++) {
            node_plan *p = s[i].at.plan;
            report_node_decide(&ctx->report, p->report_node,
                               "Y_%s: with the other slices of %s, assembled into new graph "
                               "output %s (Concat in slice order)",
                               slot_letter[s[i].at.slot], input, out);
            report_node_output_added(&ctx->report, p->report_node, out);
        }
        if (st == RNNSTATE_OK) {
            const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
            const Onnx__TensorShapeProto *sh =
                value_info_shape(ctx->graph->input[e->graph_input]);
            dim_info dims[8] = { 0 };
            size_t rank = sh && sh->n_dim <= 8 ? sh->n_dim : 0;
            for (size_t d = 0; d < rank; d++)
                dim_from_proto(sh->dim[d], &dims[d]);
            report_add_pair(&ctx->report, input, out, dims, rank, s[0].at.plan->rs.elem_type,
                            e->initializer >= 0, true);
            for (size_t d = 0; d < rank; d++)
                dim_info_clear(&dims[d]);
            ctx->changed = true;
            *handled = true;
        }
        free(out);
    }
    free(s);
    return st;
}
