#include "state/defaults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tensor_util.h"
#include "util/arena.h"

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

bool batch_is_fixed(const recurrent_shape *rs)
{
    return rs->batch.known && !rs->batch.param;
}

/* The bytes of a default for `batch`, or SIZE_MAX when that overflows. */
static size_t default_bytes(const recurrent_shape *rs, int64_t batch)
{
    int64_t dims[3] = { rs->directions, batch, rs->hidden };
    size_t count, width = dtype_size(rs->elem_type);
    if (!width || !shape_element_count(dims, 3, &count) || count > SIZE_MAX / width)
        return SIZE_MAX;
    return count * width;
}

bool state_default_fits(const recurrent_shape *rs)
{
    return default_bytes(rs, 1) <= RNNSTATE_MAX_CREATED_TENSOR_BYTES;
}

int64_t state_default_batch(const recurrent_shape *rs)
{
    if (batch_is_fixed(rs) &&
        default_bytes(rs, rs->batch.value) <= RNNSTATE_MAX_CREATED_TENSOR_BYTES)
        return rs->batch.value;
    return 1;
}

/* The state's dims for a given batch, in the node's layout. */
static void state_dims_for_batch(const recurrent_shape *rs, int64_t batch, int64_t dims[3])
{
    int b = batch_axis(rs);
    dims[b] = batch;
    dims[1 - b] = rs->directions;
    dims[2] = rs->hidden;
}

/* numpy broadcasting: right-aligned, each pattern dim 1 or equal. */
static bool broadcasts_to(const Onnx__TensorProto *pattern, const int64_t dims[3])
{
    if (pattern->n_dims > 3)
        return false;
    for (size_t i = 0; i < pattern->n_dims; i++) {
        int64_t p = pattern->dims[pattern->n_dims - 1 - i], d = dims[2 - i];
        if (p != 1 && p != d)
            return false;
    }
    return true;
}

bool state_pattern_fits(const recurrent_shape *rs, const Onnx__TensorProto *pattern)
{
    int64_t one[3], full[3];
    state_dims_for_batch(rs, 1, one);
    state_dims_for_batch(rs, batch_is_fixed(rs) ? rs->batch.value : 1, full);
    return pattern->data_type == rs->elem_type &&
           (broadcasts_to(pattern, one) || broadcasts_to(pattern, full));
}

bool state_pattern_is(const recurrent_shape *rs, const Onnx__TensorProto *pattern,
                      int64_t batch)
{
    int64_t dims[3];
    state_dims_for_batch(rs, batch, dims);
    return pattern->data_type == rs->elem_type && pattern->n_dims == 3 &&
           !memcmp(pattern->dims, dims, sizeof dims);
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

/* Copies `src` (of shape `pdims`, broadcastable to `dims`) into `out`. */
static void broadcast_copy(const unsigned char *src, const int64_t *pdims, size_t prank,
                           const int64_t dims[3], size_t width, unsigned char *out)
{
    int64_t pd[3] = { 1, 1, 1 }, stride[3];
    for (size_t i = 0; i < prank; i++)
        pd[3 - prank + i] = pdims[i];
    stride[2] = 1;
    stride[1] = pd[2];
    stride[0] = pd[1] * pd[2];
    size_t at = 0;
    for (int64_t i = 0; i < dims[0]; i++)
        for (int64_t j = 0; j < dims[1]; j++)
            for (int64_t k = 0; k < dims[2]; k++, at++) {
                int64_t from = (pd[0] == 1 ? 0 : i) * stride[0] + (pd[1] == 1 ? 0 : j) * stride[1] +
                               (pd[2] == 1 ? 0 : k) * stride[2];
                memcpy(out + at * width, src + (size_t)from * width, width);
            }
}

/* The default tensor for a batch: the fill, or the exporter's constant
 * broadcast to the state's shape. */
static Onnx__TensorProto *default_tensor(const recurrent_shape *rs, const char *name,
                                         const state_default *def, int64_t batch)
{
    int64_t dims[3];
    state_dims_for_batch(rs, batch, dims);
    if (def->uniform)
        return tensor_new_filled(name, rs->elem_type, dims, 3, def->fill);
    unsigned char *src;
    size_t src_size;
    if (!broadcasts_to(def->pattern, dims) || !tensor_read_bytes(def->pattern, &src, &src_size))
        return NULL;
    /* sized by the fill, then overwritten */
    Onnx__TensorProto *t = tensor_new_filled(name, rs->elem_type, dims, 3, src);
    if (t)
        broadcast_copy(src, def->pattern->dims, def->pattern->n_dims, dims,
                       dtype_size(rs->elem_type), t->raw_data.data);
    free(src);
    return t;
}

/* "{prefix}_{suffix}", cut to the buffer as snprintf() would cut it, made
 * unique; joined without printf (up to fourteen helper names per node). */
static char *unique_name(rewrite_ctx *ctx, const char *prefix, const char *suffix)
{
    char base[512];
    size_t room = sizeof base - 1, n = strlen(prefix);
    n = n < room ? n : room;
    memcpy(base, prefix, n);
    if (n < room)
        base[n++] = '_';
    size_t m = strlen(suffix);
    m = m < room - n ? m : room - n;
    memcpy(base + n, suffix, m);
    base[n + m] = '\0';
    return name_registry_unique(&ctx->names, base);
}

Onnx__NodeProto *queue_op(rewrite_ctx *ctx, recurrent_shape *rs, const char *op,
                                 const char *const *inputs, size_t n_inputs, const char *output)
{
    char *name = unique_name(ctx, rs->prefix, op);
    Onnx__NodeProto *node = name ? node_new(op, name) : NULL;
    free(name);
    bool ok = node && append_string(&node->output, &node->n_output, output);
    for (size_t i = 0; ok && i < n_inputs; i++)
        ok = append_string(&node->input, &node->n_input, inputs[i]);
    if (!ok) {
        if (node)
            arena_message_free(&node->base);
        return NULL;
    }
    return scope_queue_node(rs->sc, rs->node_index, node) ? node : NULL;
}

static bool add_initializer(scope *sc, Onnx__TensorProto *t)
{
    return t && scope_add_initializer(sc, t);
}

static bool add_int64s_initializer(scope *sc, const char *name, const int64_t *v, size_t n)
{
    return add_initializer(sc, tensor_new_int64s(name, v, n));
}

/* The per-node helpers of the defaults: the batch B of X at run time
 * (Gather(Shape(X), [axis])) and the initializers [axis], [1] and [0]. Built
 * once per node and shared by its h and c slots. */
static bool build_batch_helpers(rewrite_ctx *ctx, recurrent_shape *rs)
{
    if (rs->batch_size)
        return true;
    char *shape = unique_name(ctx, rs->prefix, "x_shape");
    char *axis = unique_name(ctx, rs->prefix, "batch_axis");
    char *batch = unique_name(ctx, rs->prefix, "batch_size");
    char *one = unique_name(ctx, rs->prefix, "one");
    char *zero = unique_name(ctx, rs->prefix, "zero");
    int64_t axis_value = batch_axis(rs), one_value = 1, zero_value = 0;
    bool ok = shape && axis && batch && one && zero &&
              add_int64s_initializer(rs->sc, axis, &axis_value, 1) &&
              add_int64s_initializer(rs->sc, one, &one_value, 1) &&
              add_int64s_initializer(rs->sc, zero, &zero_value, 1) &&
              queue_op(ctx, rs, "Shape", &rs->x, 1, shape) &&
              queue_op(ctx, rs, "Gather", (const char *[]){ shape, axis }, 2, batch);
    free(shape);
    if (ok) {
        rs->batch_axis_name = axis;
        rs->batch_size = batch;
        rs->one = one;
        rs->zero = zero;
    } else {
        free(axis);
        free(batch);
        free(one);
        free(zero);
    }
    return ok;
}

/* The value the node reads for optional input `name` (whose default is
 * empty) with a dynamic batch, into *out:
 *   n      = B * Cast(Equal(Gather(Shape(name), [axis]), [0]))
 *   filled = Expand(fill, [1, n, 1])          ([n, 1, 1] batch-first)
 *   *out   = Concat(name, filled, axis)
 * Absent (batch 0): the fill at batch B. Fed with batch B: the state as fed.
 * Fed with another batch: that batch, which the node rejects. */
static bool build_state_or_fill(rewrite_ctx *ctx, recurrent_shape *rs, const char *name,
                                const char *fill, char **out)
{
    *out = NULL;
    if (!build_batch_helpers(ctx, rs))
        return false;
    char *sshape = unique_name(ctx, name, "shape");
    char *sbatch = unique_name(ctx, name, "batch");
    char *absent = unique_name(ctx, name, "absent");
    char *absent_i = unique_name(ctx, name, "absent_int");
    char *n = unique_name(ctx, name, "fill_batch");
    char *fshape = unique_name(ctx, name, "fill_shape");
    char *filled = unique_name(ctx, name, "filled");
    char *result = unique_name(ctx, name, "or_default");
    Onnx__NodeProto *node;
    bool ok = sshape && sbatch && absent && absent_i && n && fshape && filled && result &&
              queue_op(ctx, rs, "Shape", &name, 1, sshape) &&
              queue_op(ctx, rs, "Gather", (const char *[]){ sshape, rs->batch_axis_name }, 2,
                       sbatch) &&
              queue_op(ctx, rs, "Equal", (const char *[]){ sbatch, rs->zero }, 2, absent) &&
              (node = queue_op(ctx, rs, "Cast", (const char *[]){ absent }, 1, absent_i)) &&
              node_add_int_attr(node, "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT64) &&
              queue_op(ctx, rs, "Mul", (const char *[]){ absent_i, rs->batch_size }, 2, n);
    if (ok) {
        const char *parts[3] = { rs->one, n, rs->one };
        const char *parts_batch_first[3] = { n, rs->one, rs->one };
        ok = (node = queue_op(ctx, rs, "Concat", rs->batch_first ? parts_batch_first : parts, 3,
                              fshape)) &&
             node_add_int_attr(node, "axis", 0) &&
             queue_op(ctx, rs, "Expand", (const char *[]){ fill, fshape }, 2, filled) &&
             (node = queue_op(ctx, rs, "Concat", (const char *[]){ name, filled }, 2, result)) &&
             node_add_int_attr(node, "axis", batch_axis(rs));
    }
    free(sshape);
    free(sbatch);
    free(absent);
    free(absent_i);
    free(n);
    free(fshape);
    free(filled);
    if (ok)
        *out = result;
    else
        free(result);
    return ok;
}

/* The state input is declared with the state's shape; an optional one of a
 * dynamic batch leaves its batch unnamed, since its default has batch 0 (an
 * equal name would tell ONNX Runtime that it has X's batch, and its memory
 * planner then reuses buffers of the wrong size for float16 nodes). */
static rnnstate_status declare_input(rewrite_ctx *ctx, const recurrent_shape *rs,
                                     const char *name, bool empty_default)
{
    dim_info dims[3];
    recurrent_state_dims(rs, dims);
    if (empty_default)
        dims[batch_axis(rs)] = (dim_info){ false, 0, NULL };
    Onnx__ValueInfoProto *vi = value_info_new(name, rs->elem_type, dims, 3);
    if (!vi || !scope_add_input(ctx->scopes.scopes[0], vi))
        return ctx_oom(ctx);
    return RNNSTATE_OK;
}

rnnstate_status add_state_input(rewrite_ctx *ctx, recurrent_shape *rs, const char *name,
                                const state_default *def, size_t report_node, char **slot_value,
                                bool *optional)
{
    *slot_value = NULL;
    *optional = false;
    /* a full-shape default, or an empty one completed at run time */
    bool fixed = batch_is_fixed(rs) && state_default_batch(rs) == rs->batch.value;
    bool want_default = ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL;
    if (want_default && !fixed && main_opset(ctx->model) < EXPAND_MIN_OPSET) {
        report_node_warn(&ctx->report, report_node,
                         "%s is required: a default for a dynamic batch needs Expand (opset >= %d)",
                         name, EXPAND_MIN_OPSET);
        want_default = false;
    }
    rnnstate_status status = declare_input(ctx, rs, name, want_default && !fixed);
    if (status != RNNSTATE_OK || !want_default) {
        if (status == RNNSTATE_OK && !(*slot_value = strdup(name)))
            status = ctx_oom(ctx);
        return status;
    }
    require_overridable_defaults(ctx);
    *optional = true;
    if (fixed) {
        if (!def->existing &&
            !add_initializer(ctx->scopes.scopes[0], default_tensor(rs, name, def, rs->batch.value)))
            return ctx_oom(ctx);
        *slot_value = strdup(name);
        return *slot_value ? RNNSTATE_OK : ctx_oom(ctx);
    }
    int64_t empty_dims[3];
    unsigned char nothing[16] = { 0 };
    state_dims_for_batch(rs, 0, empty_dims);
    char *fill = def->fill_initializer ? strdup(def->fill_initializer)
                                       : unique_name(ctx, name, "fill");
    bool ok = fill &&
              add_initializer(ctx->scopes.scopes[0],
                              tensor_new_filled(name, rs->elem_type, empty_dims, 3, nothing)) &&
              (def->fill_initializer || add_initializer(rs->sc, default_tensor(rs, fill, def, 1))) &&
              build_state_or_fill(ctx, rs, name, fill, slot_value);
    free(fill);
    return ok ? RNNSTATE_OK : ctx_oom(ctx);
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
