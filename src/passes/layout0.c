/* The layout pass (with options.to_layout0): ONNX Runtime's CPU kernels
 * refuse layout=1 (batch-first) RNN, GRU and LSTM nodes. Each such node is
 * turned into a layout-0 node between Transposes, computing the same values:
 *   X        [B, T, F]    -> Transpose(1,0,2)   -> [T, B, F]
 *   initial  [B, D, H]    -> Transpose(1,0,2)   -> [D, B, H]
 *   Y        [T, D, B, H] -> Transpose(2,0,1,3) -> [B, T, D, H]
 *   Y_h, Y_c [D, B, H]    -> Transpose(1,0,2)   -> [B, D, H]
 * Every consumer keeps reading the batch-first values under their old names;
 * the node's own outputs get new names, so the state pass exposes the state
 * in the layout-0 shape. A constant initial state is transposed here, into a
 * new Constant: the state pass then sees the exporter's constant, as it does
 * without the conversion, instead of a Transpose computing the state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "recurrent_ops.h"
#include "analysis/shape.h"
#include "model/tensor_util.h"
#include "util/arena.h"

static const int64_t swap01[3] = { 1, 0, 2 };
static const int64_t y_to_batch_first[4] = { 2, 0, 1, 3 };

static Onnx__NodeProto *transpose(rewrite_ctx *ctx, const char *in, const char *out,
                                  const int64_t *perm, size_t rank)
{
    char *name = name_registry_unique(&ctx->names, out);
    Onnx__NodeProto *node = name ? node_new("Transpose", name) : NULL;
    free(name);
    bool ok = node && append_string(&node->input, &node->n_input, in) &&
              append_string(&node->output, &node->n_output, out) &&
              node_add_ints_attr(node, "perm", perm, rank);
    if (!ok && node) {
        arena_message_free(&node->base);
        node = NULL;
    }
    return node;
}

/* The batch-first state constant [B, D, H] as [D, B, H]; NULL when it is not
 * a readable 3-D constant (or memory runs out: the Transpose route then
 * fails the same way). */
static Onnx__TensorProto *swapped_state(const scope *sc, const char *value)
{
    const Onnx__TensorProto *t = scope_tensor_data(sc, constant_tensor(sc, value));
    size_t width = t ? dtype_size(t->data_type) : 0, size;
    unsigned char *bytes;
    if (!width || t->n_dims != 3 || !tensor_read_bytes(t, &bytes, &size))
        return NULL;
    int64_t b = t->dims[0], d = t->dims[1];
    size_t row = (size_t)t->dims[2] * width;
    unsigned char *swapped = malloc(size ? size : 1);
    for (int64_t i = 0; swapped && i < b; i++)
        for (int64_t j = 0; j < d; j++)
            memcpy(swapped + (size_t)(j * b + i) * row, bytes + (size_t)(i * d + j) * row, row);
    int64_t dims[3] = { d, b, t->dims[2] };
    Onnx__TensorProto *out = swapped ? tensor_new("", t->data_type, dims, 3, swapped, size) : NULL;
    free(bytes);
    free(swapped);
    return out;
}

/* A Constant node named after its output, holding `value` (taken over). */
static Onnx__NodeProto *constant_node(rewrite_ctx *ctx, const char *out, Onnx__TensorProto *value)
{
    char *name = name_registry_unique(&ctx->names, out);
    Onnx__NodeProto *node = name ? node_new("Constant", name) : NULL;
    free(name);
    bool ok = node && append_string(&node->output, &node->n_output, out) &&
              node_add_tensor_attr(node, "value", value);
    if (!node)
        arena_message_free(&value->base);
    if (!ok && node) {
        arena_message_free(&node->base);
        node = NULL;
    }
    return node;
}

/* Reads input `slot` through a Transpose queued before the node (a constant
 * state: through a transposed copy of it). */
static bool transpose_input(rewrite_ctx *ctx, scope *sc, size_t at, Onnx__NodeProto *node,
                            size_t slot, const int64_t *perm, size_t rank)
{
    const char *in = node_input(node, slot);
    if (!*in)
        return true;
    char base[512];
    snprintf(base, sizeof base, "%s_layout0", in);
    char *out = name_registry_unique(&ctx->names, base);
    Onnx__TensorProto *state = out && slot != RECURRENT_INPUT_X ? swapped_state(sc, in) : NULL;
    Onnx__NodeProto *t = !out ? NULL
                         : state ? constant_node(ctx, out, state)
                                 : transpose(ctx, in, out, perm, rank);
    /* the original constant may now be read by nothing: the cleanup pass
     * removes it then */
    bool ok = t && (!state || ctx_detach(ctx, sc, in)) && scope_queue_node(sc, at, t) &&
              node_set_input(node, slot, out);
    free(out);
    return ok;
}

/* The node writes output `slot` under a new name; a Transpose queued after
 * it restores the batch-first value under the old one. */
static bool transpose_output(rewrite_ctx *ctx, scope *sc, size_t at, Onnx__NodeProto *node,
                             size_t slot, const int64_t *perm, size_t rank)
{
    char *old = strdup(node_output(node, slot));
    if (!old)
        return false;
    if (!*old) {
        free(old);
        return true;
    }
    char base[512];
    snprintf(base, sizeof base, "%s_layout0", old);
    char *fresh = name_registry_unique(&ctx->names, base);
    Onnx__NodeProto *t = fresh ? transpose(ctx, fresh, old, perm, rank) : NULL;
    bool ok = t && scope_queue_node(sc, at + 1, t) && node_set_output(node, slot, fresh);
    free(old);
    free(fresh);
    return ok;
}

static bool set_layout0(Onnx__NodeProto *node)
{
    for (size_t i = 0; i < node->n_attribute; i++)
        if (!strcmp(str_or_empty(node->attribute[i]->name), "layout"))
            node->attribute[i]->i = 0;
    return true;
}

/* X and the initial states, then Y and the final states, in that order. */
static bool convert(rewrite_ctx *ctx, scope *sc, size_t at, const recurrent_op *op)
{
    Onnx__NodeProto *node = sc->graph->node[at];
    bool ok = transpose_input(ctx, sc, at, node, RECURRENT_INPUT_X, swap01, 3);
    for (int s = 0; ok && s < op->n_slots; s++)
        ok = transpose_input(ctx, sc, at, node, (size_t)op->initial_state_input[s], swap01, 3);
    ok = ok && transpose_output(ctx, sc, at, node, RECURRENT_OUTPUT_Y, y_to_batch_first, 4);
    for (int s = 0; ok && s < op->n_slots; s++)
        ok = transpose_output(ctx, sc, at, node, (size_t)op->final_state_output[s], swap01, 3);
    ok = ok && set_layout0(node);
    if (ok)
        report_note(&ctx->report,
                    "%s node '%s' (%s) converted from layout 1 to layout 0 between Transposes",
                    str_or_empty(node->op_type), str_or_empty(node->name), sc->path);
    return ok;
}

rnnstate_status pass_layout0(rewrite_ctx *ctx)
{
    if (!ctx->options.to_layout0)
        return RNNSTATE_OK;
    bool converted = false;
    for (size_t i = 0; i < ctx->scopes.n; i++) {
        scope *sc = ctx->scopes.scopes[i];
        for (size_t n = 0; n < sc->graph->n_node; n++) {
            Onnx__NodeProto *node = sc->graph->node[n];
            const recurrent_op *op = recurrent_op_of(node);
            if (!op || !recurrent_batch_first(op, node))
                continue;
            if (!convert(ctx, sc, n, op))
                return ctx_oom(ctx);
            converted = true;
        }
    }
    ctx->changed |= converted;
    if (converted && !scope_tree_flush(&ctx->scopes))
        return ctx_oom(ctx);
    ctx->scopes.stale |= converted;
    return RNNSTATE_OK;
}
