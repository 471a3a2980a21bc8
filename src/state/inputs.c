/* Phase 2 of the state pass, input side: make a slot read a state input. */
#include <stdlib.h>
#include <string.h>

#include "state/inputs.h"
#include "model/tensor_util.h"

/* Points the node's slot at `value`, remembering what it read before. */
static rnnstate_status rewire(rewrite_ctx *ctx, node_plan *p, int slot, const char *value)
{
    Onnx__NodeProto *node = (Onnx__NodeProto *)p->rs.node;
    const char *old = node_input(node, p->rs.op->initial_state_input[slot]);
    if (!strcmp(old, value))
        return RNNSTATE_OK;
    if ((*old && !ctx_detach(ctx, p->rs.sc, old)) ||
        !node_set_input(node, p->rs.op->initial_state_input[slot], value))
        return ctx_oom(ctx);
    return RNNSTATE_OK;
}

static bool default_is_zero(const state_default *def)
{
    if (!def->uniform)
        return false;
    for (size_t i = 0; i < sizeof def->fill; i++)
        if (def->fill[i])
            return false;
    return true;
}

static const char *default_word(bool optional, const state_default *def)
{
    if (!optional)
        return "required";
    if (def->existing)
        return "default: the initializer's value";
    return default_is_zero(def) ? "zero default" : "default: the exporter's constant";
}

/* A new input for the slot, wired into the node. */
static rnnstate_status new_input(rewrite_ctx *ctx, node_plan *p, int slot, char *name,
                                 const state_default *def, bool *optional)
{
    char *slot_value = NULL;
    rnnstate_status st =
        add_state_input(ctx, &p->rs, name, def, p->report_node, &slot_value, optional);
    if (st == RNNSTATE_OK && !*optional && !default_is_zero(def))
        report_node_warn(&ctx->report, p->report_node,
                         "%s: the model started from a non-zero constant state, which a required "
                         "input does not keep: pass that value, not zeros, on the first call (or "
                         "use optional state inputs)",
                         name);
    if (st == RNNSTATE_OK)
        st = rewire(ctx, p, slot, slot_value);
    free(slot_value);
    return st;
}

/* Case c: the slot reads an initializer. Its value is copied into a new
 * input of the slot's own (named by the template), whose default it becomes;
 * the initializer goes when nothing else reads it. */
static rnnstate_status expose_initializer(rewrite_ctx *ctx, node_plan *p, int slot,
                                          char **input_name, bool *optional)
{
    const recurrent_shape *rs = &p->rs;
    const state_source *src = &p->slots[slot].source;
    char *value = strdup(src->input); /* the slot's string is replaced below */
    if (!value)
        return ctx_oom(ctx);
    const value_entry *e = graph_index_find(&src->owner->index, value);
    const Onnx__TensorProto *init = src->owner->graph->initializer[e->initializer];
    bool shared = e->n_consumers > 1 || e->read_by_subgraph || e->graph_output >= 0;
    /* The value goes to a new input named by the template (the initializer's
     * name is the exporter's, not one the caller chose), copied when it can
     * be read. Two cases copy nothing: with a dynamic batch, an initializer
     * that is exactly the [D,1,H] fill serves as it is; with a fixed batch,
     * one whose data cannot be read (external data, say) and that only this
     * slot reads becomes the input itself and keeps its name. */
    const Onnx__TensorProto *data = scope_tensor_data(src->owner, init);
    unsigned char *bytes = NULL;
    size_t n_bytes = 0;
    bool readable = data && tensor_read_bytes(data, &bytes, &n_bytes);
    free(bytes);
    bool optional_mode = ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL;
    int64_t default_batch = state_default_batch(rs);
    bool fixed = batch_is_fixed(rs) && default_batch == rs->batch.value;
    bool keep = !readable && optional_mode && fixed && !shared && !src->owner->parent &&
                state_pattern_is(rs, init, default_batch);
    bool as_fill = optional_mode && !fixed && state_pattern_is(rs, init, 1);
    bool fits = state_pattern_fits(rs, init);
    /* the data is needed for a default only (required inputs have none) */
    if (fits && !readable && !keep && !as_fill && optional_mode) {
        free(value);
        /* external data that cannot be read here is an I/O problem; data
         * that does not match its type and shape is an invalid model */
        bool external = init->has_data_location &&
                        init->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        return external ? set_error(ctx->err, RNNSTATE_ERR_IO,
                                    "%s: cannot read initializer '%s' (external data) for the "
                                    "default of its state input; rewrite the model from its file, "
                                    "or use --state-inputs=required",
                                    ctx->label, src->input)
                        : set_error(ctx->err, RNNSTATE_ERR_INVALID,
                                    "%s: initializer '%s' holds data that does not match its type "
                                    "and shape",
                                    ctx->label, src->input);
    }
    state_default def = { .pattern = data ? data : init, .existing = keep,
                          .fill_initializer = as_fill ? value : NULL };
    if (!fits) {
        report_node_warn(&ctx->report, p->report_node,
                         "initial_%s: initializer '%s' has an unexpected shape; the new input "
                         "defaults to zeros",
                         slot_letter[slot], value);
        def.uniform = true;
        memset(def.fill, 0, sizeof def.fill);
    }
    char *name = keep ? strdup(value) : slot_name(ctx, rs, "initial", slot);
    rnnstate_status st = name ? new_input(ctx, p, slot, name, &def, optional) : ctx_oom(ctx);
    if (keep)
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: initializer '%s' is now also a graph input of that name, "
                           "its value the default (its data cannot be copied into an input named "
                           "by the template)",
                           slot_letter[slot], value);
    else
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: was initializer '%s'%s; now graph input %s (%s)",
                           slot_letter[slot], value, shared ? " (also read elsewhere)" : "",
                           name ? name : "", default_word(*optional, &def));
    free(value);
    *input_name = name;
    return st;
}

/* Cases a, d and e: a new input, with the zero or constant default. */
static rnnstate_status replace_with_input(rewrite_ctx *ctx, node_plan *p, int slot,
                                          char **input_name, bool *optional)
{
    const state_source *src = &p->slots[slot].source;
    state_default def = { .uniform = true };
    if (src->kind == SOURCE_CONSTANT) {
        def.uniform = src->uniform;
        memcpy(def.fill, src->fill, sizeof def.fill);
        def.pattern = src->pattern;
    }
    char *name = slot_name(ctx, &p->rs, "initial", slot);
    rnnstate_status st = name ? new_input(ctx, p, slot, name, &def, optional) : ctx_oom(ctx);
    if (src->kind == SOURCE_ABSENT)
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: not given (the node started from zeros); now graph input "
                           "%s (%s)",
                           slot_letter[slot], name, default_word(*optional, &def));
    else
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: was a constant (%s) computed by %s; now graph input %s "
                           "(%s)",
                           slot_letter[slot],
                           src->uniform ? (source_is_zero(src) ? "zeros" : "one repeated value")
                                        : "varying values",
                           src->chain, name, default_word(*optional, &def));
    *input_name = name;
    return st;
}

static bool tensor_all_zero(const Onnx__TensorProto *t)
{
    unsigned char *bytes;
    size_t size;
    if (!tensor_read_bytes(t, &bytes, &size))
        return false;
    bool zero = true;
    for (size_t b = 0; zero && b < size; b++)
        zero = bytes[b] == 0;
    free(bytes);
    return zero;
}

/* With required state inputs, a state input the model already has loses its
 * default (IR 3 models list every initializer as an input): bindings such as
 * onnxruntime-node ignore feeds for inputs that have one. The initializer is
 * removed when the pass ends, so that the indices stay valid meanwhile. */
static rnnstate_status drop_default(rewrite_ctx *ctx, node_plan *p, const value_entry *e)
{
    Onnx__TensorProto *init = ctx->graph->initializer[e->initializer];
    if (strmap_get(&ctx->dropped, e->name) >= 0)
        return RNNSTATE_OK; /* another slot already dropped it */
    if (!scope_tensor_data(ctx->scopes.scopes[0], init))
        return set_error(ctx->err, RNNSTATE_ERR_IO, "%s: cannot read initializer '%s'",
                         ctx->label, e->name);
    if (!strmap_put(&ctx->dropped, e->name, 1))
        return ctx_oom(ctx);
    report_node_decide(&ctx->report, p->report_node,
                       "graph input %s: its default removed (required state inputs)", e->name);
    if (!tensor_all_zero(init))
        report_node_warn(&ctx->report, p->report_node,
                         "%s: its default was a non-zero state, which a required input does not "
                         "keep: pass that value, not zeros, on the first call",
                         e->name);
    ctx->changed = true;
    return RNNSTATE_OK;
}

/* Cases b and f, and a reset branch: the model already feeds the state. */
static rnnstate_status keep_existing_input(rewrite_ctx *ctx, node_plan *p, int slot,
                                           char **input_name, bool *optional)
{
    const slot_plan *sp = &p->slots[slot];
    const char *input = sp->reset_of ? sp->reset_of : sp->source.input;
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
    *optional = e && e->initializer >= 0;
    if (*optional && ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_REQUIRED) {
        rnnstate_status st = drop_default(ctx, p, e);
        if (st != RNNSTATE_OK)
            return st;
        *optional = false;
    }
    if (*optional && ctx->model->ir_version < 4)
        require_overridable_defaults(ctx); /* IR 3: listed as an input, not overridable */
    if (sp->reset_of)
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: already stateful: a constant reset (%s) of the state "
                           "that graph input %s carries into the same output %s",
                           slot_letter[slot], sp->source.chain, input, sp->reached);
    else if (sp->source.kind == SOURCE_GRAPH_INPUT)
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: already graph input %s: kept", slot_letter[slot], input);
    else
        report_node_decide(&ctx->report, p->report_node,
                           "initial_%s: already read from graph input %s (through %s): kept",
                           slot_letter[slot], input, sp->source.chain);
    *input_name = strdup(input);
    return *input_name ? RNNSTATE_OK : ctx_oom(ctx);
}

rnnstate_status expose_input_side(rewrite_ctx *ctx, node_plan *p, int slot, char **input_name,
                                  bool *optional, bool *added)
{
    const slot_plan *sp = &p->slots[slot];
    *optional = false;
    *added = false;
    if (sp->reset_of || sp->source.kind == SOURCE_GRAPH_INPUT ||
        sp->source.kind == SOURCE_VIEW_OF_INPUT)
        return keep_existing_input(ctx, p, slot, input_name, optional);
    *added = true;
    if (sp->source.kind == SOURCE_INITIALIZER)
        return expose_initializer(ctx, p, slot, input_name, optional);
    return replace_with_input(ctx, p, slot, input_name, optional);
}
