/* Phase 2 of the state pass, output side: make Y_h/Y_c reach an output of the
 * main graph. A node inside If branches gets its final state threaded out:
 * each enclosing branch outputs it, the other branch of that If passes the
 * incoming state through unchanged (it did not run the node, so the state
 * does not move), and the If gets a matching output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/outputs.h"
#include "model/tensor_util.h"
#include "util/arena.h"

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
        arena_message_free(&node->base);
    ok = ok && scope_queue_node(branch, SIZE_MAX, node);
    rnnstate_status st = ok ? add_output(ctx, branch, out, rs) : ctx_oom(ctx);
    free(out);
    free(node_name);
    return st;
}

rnnstate_status thread_out(rewrite_ctx *ctx, scope *sc, char *value, const char *final,
                           const char *state_input, const recurrent_shape *rs, bool as_output,
                           char **main_name)
{
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && sc->parent) {
        Onnx__NodeProto *if_node = sc->parent->graph->node[sc->parent_node];
        scope *other = scope_if_sibling(&ctx->scopes, sc);
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
    if (st == RNNSTATE_OK && as_output)
        st = add_output(ctx, sc, value, rs);
    if (st == RNNSTATE_OK)
        *main_name = value;
    else
        free(value);
    return st;
}

char *name_final_state(rewrite_ctx *ctx, node_plan *p, int slot, const char *final,
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

/* Graph output `name` = Identity(value), value in the main graph. */
static rnnstate_status copy_to_output(rewrite_ctx *ctx, node_plan *p, const char *value,
                                      const char *name)
{
    char *node_name = name_registry_unique(&ctx->names, name);
    Onnx__NodeProto *node = node_name ? node_new("Identity", node_name) : NULL;
    free(node_name);
    bool ok = node && append_string(&node->input, &node->n_input, value) &&
              append_string(&node->output, &node->n_output, name);
    if (!ok && node)
        arena_message_free(&node->base);
    ok = ok && scope_queue_node(ctx->scopes.scopes[0], p->rs.node_index + 1, node);
    return ok ? add_output(ctx, ctx->scopes.scopes[0], name, &p->rs) : ctx_oom(ctx);
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
    if (reached && sp->reached_through_y) {
        report_node_decide(&ctx->report, p->report_node,
                           "Y_h: not used, but the node runs one step: Y holds its final h and "
                           "already reaches graph output %s",
                           reached);
    } else if (reached) {
        report_node_decide(&ctx->report, p->report_node, "Y_%s: already reaches graph output %s",
                           slot_letter[slot], reached);
    }
    if (reached) {
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
        st = thread_out(ctx, p->rs.sc, local, final, input_name, &p->rs, true, output_name);
        free(final);
        local = NULL; /* thread_out's */
    } else if (!renamed) {
        /* read inside the model under the exporter's name, which stays: the
         * graph output, named by the template, is an Identity of it */
        st = copy_to_output(ctx, p, local, final);
        if (st == RNNSTATE_OK)
            *output_name = final;
        else
            free(final);
    } else {
        free(final);
        st = add_output(ctx, ctx->scopes.scopes[0], local, &p->rs);
        if (st == RNNSTATE_OK)
            *output_name = local;
        local = NULL;
    }
    if (st == RNNSTATE_OK) {
        *added = true;
        if (renamed)
            report_node_decide(&ctx->report, p->report_node,
                               "Y_%s: not used by the model; now graph output %s%s",
                               slot_letter[slot], *output_name,
                               p->rs.sc->parent ? " (passed out of its If branches)" : "");
        else
            report_node_decide(&ctx->report, p->report_node,
                               "Y_%s: used inside the model as '%s'; now also graph output %s%s",
                               slot_letter[slot],
                               node_output(p->rs.node, p->rs.op->final_state_output[slot]),
                               *output_name,
                               p->rs.sc->parent ? " (passed out of its If branches)" : "");
    }
    free(local);
    return st;
}
