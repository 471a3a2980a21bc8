/* The state pass: for every RNN, GRU and LSTM node of the main graph, makes
 * each state slot (initial_h/Y_h, and for LSTM initial_c/Y_c) a graph input
 * and a graph output, unless the model already carries it.
 *
 * Spec corners handled here (ONNX RNN/GRU/LSTM, opsets 1-22):
 *  - initial_h is input 5 and initial_c input 6; Y_h is output 1, Y_c output
 *    2; absent optional inputs and outputs are "" or missing at the end.
 *  - the state is [num_directions, batch, hidden] for layout 0 and
 *    [batch, num_directions, hidden] for layout 1 (opset 14+).
 *  - hidden_size may be omitted: it is then R's last dimension.
 *  - X, W, R and the states share one element type.
 * A node whose initial state is computed from data (case g) is skipped whole:
 * exposing half of an LSTM's state would make streaming silently wrong. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_defaults.h"
#include "state_trace.h"
#include "strbuf.h"
#include "tensor_util.h"

#define SLOT_INITIAL_H 5
#define SLOT_Y_H 1

static const char *const slot_letter[2] = { "h", "c" };

typedef struct slot_plan {
    state_source source;
} slot_plan;

/* The element type of the state: W's (it must equal X's), else X's. */
static int32_t state_elem_type(const graph_index *gi, const Onnx__NodeProto *node)
{
    int32_t t = declared_elem_type(gi, node_input(node, 1));
    if (!t) {
        const Onnx__TensorProto *w = constant_tensor(gi, node_input(node, 1));
        t = w ? w->data_type : 0;
    }
    return t ? t : declared_elem_type(gi, node_input(node, 0));
}

/* hidden_size, or R's last dimension ([D, k*H, H]). */
static bool hidden_size(const graph_index *gi, const Onnx__NodeProto *node, int64_t *hidden)
{
    *hidden = node_attr_int(node, "hidden_size", -1);
    if (*hidden > 0)
        return true;
    dim_info d = { 0 };
    if (!infer_dim(gi, node_input(node, 2), 2, &d))
        return false;
    *hidden = d.known && !d.param ? d.value : -1;
    dim_info_clear(&d);
    return true;
}

/* A fixed sequence length is worth flagging: such a node often runs across
 * something other than time (frequency bins, a fixed window) and must then
 * keep its zero state; --exclude leaves it alone. */
static bool flag_fixed_sequence_length(rewrite_ctx *ctx, const recurrent_shape *rs, size_t rn)
{
    dim_info t = { 0 };
    if (!infer_dim(&ctx->index, rs->x, rs->batch_first ? 1 : 0, &t))
        return false;
    if (t.known && !t.param) {
        report_node_set_sequence_length(&ctx->report, rn, t.value);
        report_node_warn(&ctx->report, rn,
                         "the sequence length is fixed at %lld: if this node does not run over "
                         "time, its state must not be carried (leave it out with an exclude "
                         "pattern)",
                         (long long)t.value);
    }
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

static int64_t direction_count(const Onnx__NodeProto *node)
{
    char buf[32];
    const char *dir = node_attr_string(node, "direction", buf, sizeof buf);
    return dir && !strcmp(dir, "bidirectional") ? 2 : 1;
}

/* Fills everything about the node's state shape; returns a skip reason, or
 * NULL when the node can be handled. Fails (returns "") only when out of
 * memory. */
static const char *describe_node(rewrite_ctx *ctx, const Onnx__NodeProto *node, const char *prefix,
                                 int k, recurrent_shape *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->node = node;
    rs->k = k;
    rs->x = node_input(node, 0);
    rs->prefix = prefix;
    rs->batch_first = node_attr_int(node, "layout", 0) == 1;
    rs->directions = direction_count(node);
    rs->elem_type = state_elem_type(&ctx->index, node);
    if (node->n_input < 3 || !*rs->x)
        return "malformed node: X, W and R are required";
    if (!dtype_size(rs->elem_type))
        return "the element type of X and W is unknown or not numeric";
    if (!hidden_size(&ctx->index, node, &rs->hidden))
        return "";
    if (rs->hidden <= 0)
        return "hidden_size is missing and R's shape is unknown";
    if (!infer_dim(&ctx->index, rs->x, rs->batch_first ? 0 : 1, &rs->batch))
        return "";
    if (!state_default_fits(rs))
        return "the state is too large for a default (over 1 GiB): check hidden_size and the "
               "batch size";
    if (!rs->batch.known) {
        /* the batch cannot be known statically: give it a fresh symbolic name */
        size_t n = strlen(prefix) + 8;
        if (!(rs->batch.param = malloc(n)))
            return "";
        snprintf(rs->batch.param, n, "%s_batch", prefix);
        rs->batch.known = true;
    }
    return NULL;
}

static const char *source_case(const state_source *s)
{
    switch (s->kind) {
    case SOURCE_ABSENT: return "a";
    case SOURCE_GRAPH_INPUT: return "b";
    case SOURCE_INITIALIZER: return "c";
    case SOURCE_CONSTANT: return s->via_expand ? "d" : "e";
    case SOURCE_VIEW_OF_INPUT: return "f";
    default: return "g";
    }
}

static bool fill_is_zero(const state_source *s)
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
        if (s->node)
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
        if (s->elem_type == rs->elem_type || fill_is_zero(s))
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

/* The name of a new state input or output: the name template expanded, made
 * unique in the model. */
static char *slot_name(rewrite_ctx *ctx, const recurrent_shape *rs, const char *what, int slot)
{
    char label[16];
    snprintf(label, sizeof label, "%s_%s", what, slot_letter[slot]);
    char *base = expand_name_template(ctx->options.name_template, str_or_empty(rs->node->op_type),
                                      rs->k, str_or_empty(rs->node->name), label);
    char *name = base ? name_registry_unique(&ctx->names, base) : NULL;
    free(base);
    return name;
}

static bool remember_detached(rewrite_ctx *ctx, const char *value)
{
    return !*value || append_string(&ctx->detached, &ctx->n_detached, value);
}

/* Case c: an initializer read only by this slot becomes an input of the same
 * name, keeping its value as the default; a shared one is copied, so that
 * every slot gets an input of its own. */
static rnnstate_status expose_initializer(rewrite_ctx *ctx, recurrent_shape *rs, int slot,
                                          size_t rn, char **input_name, bool *optional)
{
    const char *value = node_input(rs->node, SLOT_INITIAL_H + slot);
    const value_entry *e = graph_index_find(&ctx->index, value);
    const Onnx__TensorProto *init = ctx->graph->initializer[e->initializer];
    bool shared = e->n_consumers > 1 || e->read_by_subgraph || e->graph_output >= 0;
    state_default def = { .uniform = false, .pattern = init };
    if (!shared && ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL) {
        Onnx__ValueInfoProto *vi = NULL;
        dim_info exact[3] = { { true, init->n_dims > 0 ? init->dims[0] : 0, NULL },
                              { true, init->n_dims > 1 ? init->dims[1] : 0, NULL },
                              { true, init->n_dims > 2 ? init->dims[2] : 0, NULL } };
        vi = value_info_new(value, init->data_type, exact, init->n_dims < 3 ? init->n_dims : 3);
        if (!vi || !APPEND_PTR(&ctx->graph->input, &ctx->graph->n_input, vi)) {
            if (vi)
                protobuf_c_message_free_unpacked(&vi->base, NULL);
            return ctx_oom(ctx);
        }
        require_overridable_defaults(ctx);
        *optional = true;
        *input_name = strdup(value);
        report_node_decide(&ctx->report, rn,
                           "initial_%s: case c: initializer '%s' is now also a graph input, its "
                           "value the default",
                           slot_letter[slot], value);
        return *input_name ? RNNSTATE_OK : ctx_oom(ctx);
    }
    if (!state_pattern_fits(rs, init)) {
        report_node_warn(&ctx->report, rn,
                         "initial_%s: initializer '%s' has an unexpected shape; the new input "
                         "defaults to zeros",
                         slot_letter[slot], value);
        def.uniform = true;
        memset(def.fill, 0, sizeof def.fill);
    }
    char *name = slot_name(ctx, rs, "initial", slot), *slot_value = NULL;
    if (!name)
        return ctx_oom(ctx);
    rnnstate_status st = add_state_input(ctx, rs, name, &def, rn, &slot_value, optional);
    if (st == RNNSTATE_OK && (!remember_detached(ctx, value) ||
                              !node_set_input((Onnx__NodeProto *)rs->node,
                                              SLOT_INITIAL_H + slot, slot_value)))
        st = ctx_oom(ctx);
    report_node_decide(&ctx->report, rn,
                       "initial_%s: case c: initializer '%s' is %s; new input %s takes its value",
                       slot_letter[slot], value, shared ? "shared" : "replaced", name);
    free(slot_value);
    *input_name = name;
    return st;
}

/* Cases a, d and e: a new input, with the zero or constant default. */
static rnnstate_status replace_with_input(rewrite_ctx *ctx, recurrent_shape *rs, int slot,
                                          const state_source *src, size_t rn, char **input_name,
                                          bool *optional)
{
    const char *old = node_input(rs->node, SLOT_INITIAL_H + slot);
    state_default def = { .uniform = true };
    if (src->kind == SOURCE_CONSTANT) {
        def.uniform = src->uniform;
        memcpy(def.fill, src->fill, sizeof def.fill);
        def.pattern = src->pattern;
    }
    char *name = slot_name(ctx, rs, "initial", slot), *slot_value = NULL;
    if (!name || !remember_detached(ctx, old)) {
        free(name);
        return ctx_oom(ctx);
    }
    rnnstate_status st = add_state_input(ctx, rs, name, &def, rn, &slot_value, optional);
    if (st == RNNSTATE_OK &&
        !node_set_input((Onnx__NodeProto *)rs->node, SLOT_INITIAL_H + slot, slot_value))
        st = ctx_oom(ctx);
    free(slot_value);
    if (src->kind == SOURCE_ABSENT)
        report_node_decide(&ctx->report, rn, "initial_%s: case a: absent; new input %s (%s)",
                           slot_letter[slot], name, *optional ? "zero default" : "required");
    else
        report_node_decide(&ctx->report, rn,
                           "initial_%s: case %s: %s constant state from %s; new input %s (%s)",
                           slot_letter[slot], source_case(src),
                           src->uniform ? "uniform" : "non-uniform", src->chain, name,
                           !*optional ? "required"
                           : fill_is_zero(src)  ? "zero default"
                                                : "default: the exporter's constant");
    *input_name = name;
    return st;
}

static rnnstate_status expose_input_side(rewrite_ctx *ctx, recurrent_shape *rs, int slot,
                                         const state_source *src, size_t rn, char **input_name,
                                         bool *optional, bool *added)
{
    *added = false;
    *optional = false;
    switch (src->kind) {
    case SOURCE_GRAPH_INPUT:
    case SOURCE_VIEW_OF_INPUT: {
        const value_entry *e = graph_index_find(&ctx->index, src->input);
        *optional = e && e->initializer >= 0;
        if (src->kind == SOURCE_GRAPH_INPUT)
            report_node_decide(&ctx->report, rn, "initial_%s: case b: already graph input %s",
                               slot_letter[slot], src->input);
        else
            report_node_decide(&ctx->report, rn,
                               "initial_%s: case f: already stateful: %s of graph input %s",
                               slot_letter[slot], src->chain, src->input);
        *input_name = strdup(src->input);
        return *input_name ? RNNSTATE_OK : ctx_oom(ctx);
    }
    case SOURCE_INITIALIZER:
        *added = true;
        return expose_initializer(ctx, rs, slot, rn, input_name, optional);
    default:
        *added = true;
        return replace_with_input(ctx, rs, slot, src, rn, input_name, optional);
    }
}

/* Y_h/Y_c: already a graph output, reaching one through data movement, or
 * made a graph output here (named first when the node leaves it out). */
static rnnstate_status expose_output_side(rewrite_ctx *ctx, recurrent_shape *rs, int slot,
                                          size_t rn, char **output_name, bool *added)
{
    Onnx__NodeProto *node = (Onnx__NodeProto *)rs->node;
    const char *y = node_output(node, SLOT_Y_H + slot);
    const char *reached = *y ? trace_final_state(&ctx->index, y) : NULL;
    *added = false;
    if (reached) {
        report_node_decide(&ctx->report, rn,
                           !strcmp(reached, y) ? "Y_%s: already graph output %s"
                                               : "Y_%s: already reaches graph output %s",
                           slot_letter[slot], reached);
        *output_name = strdup(reached);
        return *output_name ? RNNSTATE_OK : ctx_oom(ctx);
    }
    /* An output nothing reads (PyTorch names them all) is renamed to the
     * predictable {op}_{k}_Y_{h|c}; one that feeds computation keeps its name. */
    bool unread = !*y || graph_index_value_unused(&ctx->index, y);
    char *name = unread ? slot_name(ctx, rs, "Y", slot) : strdup(y);
    if (!name || !node_set_output(node, SLOT_Y_H + slot, name)) {
        free(name);
        return ctx_oom(ctx);
    }
    dim_info dims[3];
    recurrent_state_dims(rs, dims);
    Onnx__ValueInfoProto *vi = value_info_new(name, rs->elem_type, dims, 3);
    if (!vi || !APPEND_PTR(&ctx->graph->output, &ctx->graph->n_output, vi)) {
        if (vi)
            protobuf_c_message_free_unpacked(&vi->base, NULL);
        free(name);
        return ctx_oom(ctx);
    }
    report_node_decide(&ctx->report, rn, "Y_%s: %s, now graph output %s", slot_letter[slot],
                       !*y ? "not produced" : unread ? "unused" : "internal", name);
    *added = true;
    *output_name = name;
    return RNNSTATE_OK;
}

/* The shape a graph input declares (up to 8 dims), for the report of a state
 * pair the model already had. On return every dims[d].param is owned. */
static bool declared_dims(const graph_index *gi, const char *input, dim_info *dims, size_t *rank)
{
    const value_entry *e = graph_index_find(gi, input);
    const Onnx__TensorShapeProto *shape =
        e && e->graph_input >= 0 ? value_info_shape(gi->graph->input[e->graph_input]) : NULL;
    if (!shape || shape->n_dim > 8) {
        /* none declared: keep the node's state shape, as owned copies */
        for (size_t d = 0; d < *rank; d++)
            if (dims[d].param && !(dims[d].param = strdup(dims[d].param)))
                return false;
        return true;
    }
    *rank = shape->n_dim;
    for (size_t d = 0; d < *rank; d++) {
        dims[d] = (dim_info){ 0 };
        dim_from_proto(shape->dim[d], &dims[d]);
    }
    return true;
}

static rnnstate_status expose_slot(rewrite_ctx *ctx, recurrent_shape *rs, int slot,
                                   const state_source *src, size_t rn)
{
    char *input = NULL, *output = NULL;
    bool optional = false, input_added = false, output_added = false;
    rnnstate_status st = expose_input_side(ctx, rs, slot, src, rn, &input, &optional,
                                           &input_added);
    if (st == RNNSTATE_OK)
        st = expose_output_side(ctx, rs, slot, rn, &output, &output_added);
    if (st == RNNSTATE_OK) {
        dim_info dims[8];
        size_t rank = 3;
        recurrent_state_dims(rs, dims);
        if (!input_added && !declared_dims(&ctx->index, input, dims, &rank))
            st = ctx_oom(ctx);
        if (input_added)
            report_node_input_added(&ctx->report, rn, input);
        if (output_added)
            report_node_output_added(&ctx->report, rn, output);
        report_add_pair(&ctx->report, input, output, dims, rank, rs->elem_type, optional,
                        input_added || output_added);
        if (!input_added)
            for (size_t d = 0; d < rank; d++)
                dim_info_clear(&dims[d]);
        if (src->kind == SOURCE_VIEW_OF_INPUT && output_added)
            report_node_warn(&ctx->report, rn,
                             "initial_%s is a slice of graph input '%s' but Y_%s reached no "
                             "graph output: the caller must assemble '%s' from %s",
                             slot_letter[slot], src->input, slot_letter[slot], src->input, output);
        ctx->changed |= input_added || output_added;
    }
    free(input);
    free(output);
    return st;
}

static rnnstate_status expose_node(rewrite_ctx *ctx, size_t index, int k)
{
    Onnx__NodeProto *node = ctx->graph->node[index];
    const char *op = str_or_empty(node->op_type);
    int n_slots = !strcmp(op, "LSTM") ? 2 : 1;
    char prefix[64], reason[512];
    snprintf(prefix, sizeof prefix, "%s_%d", op, k);
    size_t rn = report_add_node(&ctx->report, "main", op, str_or_empty(node->name));
    recurrent_shape rs;
    const char *skip = describe_node(ctx, node, prefix, k, &rs);
    rs.node_index = index;
    if (!skip && !flag_fixed_sequence_length(ctx, &rs, rn))
        skip = "";
    if (!skip)
        skip = selection_skip_reason(&ctx->options, str_or_empty(node->name), reason,
                                     sizeof reason);
    state_source sources[2];
    for (int s = 0; !skip && s < n_slots; s++) {
        if (!trace_initial_state(&ctx->index, node_input(node, SLOT_INITIAL_H + s), &sources[s]))
            skip = "";
        else
            skip = check_source(&rs, &sources[s], reason, sizeof reason, s);
    }
    rnnstate_status st = RNNSTATE_OK;
    if (skip && !*skip) {
        st = ctx_oom(ctx);
    } else if (skip) {
        report_node_set_status(&ctx->report, rn, RNNSTATE_NODE_SKIPPED);
        report_node_set_reason(&ctx->report, rn, "%s", skip);
    } else {
        const char *direction = node_attr_string(node, "direction", reason, sizeof reason);
        if (rs.directions == 2 || (direction && !strcmp(direction, "reverse")))
            report_node_warn(&ctx->report, rn,
                             "%s direction: running it in chunks is not equivalent to running "
                             "the whole sequence",
                             rs.directions == 2 ? "bidirectional, the backward" : "reverse");
        for (int s = 0; st == RNNSTATE_OK && s < n_slots; s++)
            st = expose_slot(ctx, &rs, s, &sources[s], rn);
        const rnnstate_node_report *nr = &ctx->report.report->nodes[rn];
        if (nr->n_inputs_added || nr->n_outputs_added)
            report_node_set_status(&ctx->report, rn, RNNSTATE_NODE_UPDATED);
    }
    dim_info_clear(&rs.batch);
    free(rs.batch_shape);
    return st;
}

/* Per-op counters give the k of "{op}_{k}" in graph order. */
rnnstate_status pass_state(rewrite_ctx *ctx)
{
    int counts[3] = { 0, 0, 0 };
    static const char *const ops[3] = { "RNN", "GRU", "LSTM" };
    size_t n_node = ctx->graph->n_node; /* new nodes are only queued during the pass */
    rnnstate_status st = RNNSTATE_OK;
    for (size_t n = 0; st == RNNSTATE_OK && n < n_node; n++) {
        Onnx__NodeProto *node = ctx->graph->node[n];
        if (!is_recurrent_op(node))
            continue;
        for (int i = 0; i < 3; i++)
            if (!strcmp(str_or_empty(node->op_type), ops[i]))
                st = expose_node(ctx, n, counts[i]++);
    }
    if (st == RNNSTATE_OK && report_builder_failed(&ctx->report))
        st = ctx_oom(ctx);
    if (st == RNNSTATE_OK && !flush_queued_nodes(ctx))
        st = ctx_oom(ctx);
    if (st == RNNSTATE_OK && !graph_index_build(&ctx->index, ctx->graph))
        st = ctx_oom(ctx);
    return st;
}

/* Expands the name template; returns a new string, or NULL when out of memory. */
char *expand_name_template(const char *tmpl, const char *op, int k, const char *node_name,
                           const char *slot)
{
    strbuf sb = STRBUF_INIT;
    char number[16];
    snprintf(number, sizeof number, "%d", k);
    for (const char *p = tmpl ? tmpl : RNNSTATE_DEFAULT_NAME_TEMPLATE; *p; p++) {
        if (!strncmp(p, "{op}", 4)) {
            sb_adds(&sb, op);
            p += 3;
        } else if (!strncmp(p, "{k}", 3)) {
            sb_adds(&sb, number);
            p += 2;
        } else if (!strncmp(p, "{name}", 6)) {
            sb_adds(&sb, node_name);
            p += 5;
        } else if (!strncmp(p, "{slot}", 6)) {
            sb_adds(&sb, slot);
            p += 5;
        } else {
            sb_add(&sb, p, 1);
        }
    }
    if (sb.oom) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb);
}

bool name_template_valid(const char *tmpl)
{
    return !tmpl || (strstr(tmpl, "{slot}") && (strstr(tmpl, "{k}") || strstr(tmpl, "{name}")));
}
