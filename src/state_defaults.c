#include "state_defaults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

/* Expand exists from opset 8 on. */
#define EXPAND_MIN_OPSET 8

void recurrent_state_dims(const recurrent_shape *rs, dim_info dims[3])
{
    dim_info directions = { true, rs->directions, NULL };
    dim_info hidden = { true, rs->hidden, NULL };
    dims[0] = rs->batch_first ? rs->batch : directions;
    dims[1] = rs->batch_first ? directions : rs->batch;
    dims[2] = hidden;
}

static int batch_axis(const recurrent_shape *rs)
{
    return rs->batch_first ? 0 : 1;
}

static bool batch_is_fixed(const recurrent_shape *rs)
{
    return rs->batch.known && !rs->batch.param;
}

bool state_default_fits(const recurrent_shape *rs)
{
    int64_t dims[3] = { rs->directions, batch_is_fixed(rs) ? rs->batch.value : 1, rs->hidden };
    size_t count, width = dtype_size(rs->elem_type);
    return shape_element_count(dims, 3, &count) && width &&
           count <= RNNSTATE_MAX_CREATED_TENSOR_BYTES / width;
}

bool state_pattern_fits(const recurrent_shape *rs, const Onnx__TensorProto *pattern)
{
    if (pattern->n_dims != 3 || pattern->data_type != rs->elem_type)
        return false;
    int b = batch_axis(rs), d = 1 - b;
    if (pattern->dims[d] != rs->directions || pattern->dims[2] != rs->hidden)
        return false;
    return pattern->dims[b] == 1 || (batch_is_fixed(rs) && pattern->dims[b] == rs->batch.value);
}

static int64_t main_opset(const Onnx__ModelProto *model)
{
    for (size_t i = 0; i < model->n_opset_import; i++) {
        const char *d = str_or_empty(model->opset_import[i]->domain);
        if (!*d || !strcmp(d, "ai.onnx"))
            return model->opset_import[i]->version;
    }
    return 0;
}

/* Builds the default tensor: `batch` copies of the pattern's (or fill's) one
 * batch entry along the batch axis. */
static Onnx__TensorProto *default_tensor(const recurrent_shape *rs, const char *name,
                                         const state_default *def, int64_t batch)
{
    int64_t dims[3];
    int b = batch_axis(rs);
    dims[b] = batch;
    dims[1 - b] = rs->directions;
    dims[2] = rs->hidden;
    if (def->uniform)
        return tensor_new_filled(name, rs->elem_type, dims, 3, def->fill);
    unsigned char *src;
    size_t src_size, count;
    if (!tensor_read_bytes(def->pattern, &src, &src_size))
        return NULL;
    Onnx__TensorProto *t = NULL;
    if (def->pattern->dims[b] == batch) {
        t = tensor_new(name, rs->elem_type, dims, 3, src, src_size);
    } else if (shape_element_count(dims, 3, &count)) {
        /* tile the single batch entry: the state is [D, B, H] or [B, D, H] */
        t = tensor_new_filled(name, rs->elem_type, dims, 3, src); /* sized; overwritten below */
        size_t width = dtype_size(rs->elem_type), row = (size_t)rs->hidden * width;
        for (int64_t i = 0; t && i < batch * rs->directions; i++) {
            int64_t dir = rs->batch_first ? i % rs->directions : i / batch;
            memcpy(t->raw_data.data + (size_t)i * row, src + (size_t)dir * row, row);
        }
    }
    free(src);
    return t;
}

static char *unique_name(rewrite_ctx *ctx, const char *prefix, const char *suffix)
{
    char base[512];
    snprintf(base, sizeof base, "%s_%s", prefix, suffix);
    return name_registry_unique(&ctx->names, base);
}

bool queue_node_before(rewrite_ctx *ctx, size_t before, Onnx__NodeProto *node)
{
    queued_node *grown = realloc(ctx->queued, (ctx->n_queued + 1) * sizeof *grown);
    if (!grown)
        return false;
    grown[ctx->n_queued++] = (queued_node){ before, node };
    ctx->queued = grown;
    return true;
}

bool flush_queued_nodes(rewrite_ctx *ctx)
{
    if (!ctx->n_queued)
        return true;
    Onnx__GraphProto *g = ctx->graph;
    size_t total = g->n_node + ctx->n_queued, at = 0, q = 0;
    Onnx__NodeProto **nodes = malloc(total * sizeof *nodes);
    if (!nodes)
        return false;
    /* one merge: the queue is already in node order */
    for (size_t n = 0; n < g->n_node; n++) {
        for (; q < ctx->n_queued && ctx->queued[q].before == n; q++)
            nodes[at++] = ctx->queued[q].node;
        nodes[at++] = g->node[n];
    }
    free(g->node);
    g->node = nodes;
    g->n_node = at;
    free(ctx->queued);
    ctx->queued = NULL;
    ctx->n_queued = 0;
    return true;
}

/* A node with the given inputs and one output, queued before rs->node. */
static Onnx__NodeProto *queue_op(rewrite_ctx *ctx, recurrent_shape *rs, const char *op,
                                 const char *const *inputs, size_t n_inputs, const char *output)
{
    char *name = unique_name(ctx, rs->prefix, op);
    Onnx__NodeProto *node = name ? node_new(op, name) : NULL;
    free(name);
    bool ok = node && append_string(&node->output, &node->n_output, output);
    for (size_t i = 0; ok && i < n_inputs; i++)
        ok = append_string(&node->input, &node->n_input, inputs[i]);
    if (ok && queue_node_before(ctx, rs->node_index, node))
        return node;
    if (node)
        protobuf_c_message_free_unpacked(&node->base, NULL);
    return NULL;
}

static bool add_initializer(rewrite_ctx *ctx, Onnx__TensorProto *t)
{
    if (t && APPEND_PTR(&ctx->graph->initializer, &ctx->graph->n_initializer, t))
        return true;
    if (t)
        protobuf_c_message_free_unpacked(&t->base, NULL);
    return false;
}

static bool add_int64s_initializer(rewrite_ctx *ctx, const char *name, const int64_t *v, size_t n)
{
    return add_initializer(ctx, tensor_new_int64s(name, v, n));
}

/* The value [1, B, 1] (or [B, 1, 1] batch-first) with B = the batch of X at
 * run time: Concat(Gather(Shape(X), [axis]), ones). Built once per node and
 * shared by its h and c slots. */
static bool build_batch_shape(rewrite_ctx *ctx, recurrent_shape *rs)
{
    if (rs->batch_shape)
        return true;
    char *shape = unique_name(ctx, rs->prefix, "x_shape");
    char *axis = unique_name(ctx, rs->prefix, "batch_axis");
    char *batch = unique_name(ctx, rs->prefix, "batch_size");
    char *one = unique_name(ctx, rs->prefix, "one");
    char *out = unique_name(ctx, rs->prefix, "state_broadcast_shape");
    int64_t axis_value = batch_axis(rs), one_value = 1;
    Onnx__NodeProto *concat = NULL;
    bool ok = shape && axis && batch && one && out &&
              add_int64s_initializer(ctx, axis, &axis_value, 1) &&
              add_int64s_initializer(ctx, one, &one_value, 1) &&
              queue_op(ctx, rs, "Shape", &rs->x, 1, shape) &&
              queue_op(ctx, rs, "Gather", (const char *[]){ shape, axis }, 2, batch);
    if (ok) {
        const char *parts[3] = { one, batch, one };
        const char *parts_batch_first[3] = { batch, one, one };
        concat = queue_op(ctx, rs, "Concat", rs->batch_first ? parts_batch_first : parts, 3, out);
        ok = concat && node_add_int_attr(concat, "axis", 0);
    }
    free(shape);
    free(axis);
    free(batch);
    free(one);
    if (ok)
        rs->batch_shape = out;
    else
        free(out);
    return ok;
}

static rnnstate_status declare_input(rewrite_ctx *ctx, const recurrent_shape *rs,
                                     const char *name)
{
    dim_info dims[3];
    recurrent_state_dims(rs, dims);
    Onnx__ValueInfoProto *vi = value_info_new(name, rs->elem_type, dims, 3);
    if (!vi || !APPEND_PTR(&ctx->graph->input, &ctx->graph->n_input, vi)) {
        if (vi)
            protobuf_c_message_free_unpacked(&vi->base, NULL);
        return ctx_oom(ctx);
    }
    return RNNSTATE_OK;
}

rnnstate_status add_state_input(rewrite_ctx *ctx, recurrent_shape *rs, const char *name,
                                const state_default *def, size_t report_node, char **slot_value,
                                bool *optional)
{
    *slot_value = NULL;
    *optional = false;
    rnnstate_status status = declare_input(ctx, rs, name);
    if (status != RNNSTATE_OK)
        return status;
    bool fixed = batch_is_fixed(rs);
    if (ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL && !fixed &&
        main_opset(ctx->model) < EXPAND_MIN_OPSET) {
        report_node_warn(&ctx->report, report_node,
                         "%s is required: a default for a dynamic batch needs Expand (opset >= %d)",
                         name, EXPAND_MIN_OPSET);
    } else if (ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL) {
        if (!add_initializer(ctx, default_tensor(rs, name, def, fixed ? rs->batch.value : 1)))
            return ctx_oom(ctx);
        require_overridable_defaults(ctx);
        *optional = true;
        if (!fixed) {
            char *expanded = unique_name(ctx, name, "expanded");
            bool ok = expanded && build_batch_shape(ctx, rs) &&
                      queue_op(ctx, rs, "Expand", (const char *[]){ name, rs->batch_shape }, 2,
                               expanded);
            if (!ok) {
                free(expanded);
                return ctx_oom(ctx);
            }
            *slot_value = expanded;
            return RNNSTATE_OK;
        }
    }
    *slot_value = strdup(name);
    return *slot_value ? RNNSTATE_OK : ctx_oom(ctx);
}

void require_overridable_defaults(rewrite_ctx *ctx)
{
    if (ctx->model->ir_version >= 4)
        return;
    report_note(&ctx->report,
                "ir_version raised from %lld to 4 so that ONNX Runtime lets callers override "
                "state defaults",
                (long long)ctx->model->ir_version);
    ctx->model->ir_version = 4;
}
