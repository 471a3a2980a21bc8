/* Ops that look along the time axis (analysis/stream_walk.h): convolutions
 * and pools (causal context, strides, look-ahead, chomp Slices), ops across
 * an axis (MatMul, Softmax, normalisations, reductions, CumSum, Resize, ...),
 * recurrent nodes, and the op table that names a handler for each op. */
#include "analysis/stream_walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/window.h"
#include "recurrent_ops.h"
#include "util/strbuf.h"

/* ---- convolutions and pools ----------------------------------------------------- */

/* The window along spatial axis `i` of a Conv or pool (its kernel from
 * kernel_shape or the weight's shape); false when it is not known. */
static bool window_of(const node_view *v, int i, int spatial, window *out)
{
    int64_t kernel = -1;
    if (v->n->n_input > 1) {
        dim_info dim = { 0 };
        bool ok = infer_dim(v->s, node_input(v->n, 1), 2 + i, &dim);
        if (ok && dim.known && !dim.param)
            kernel = dim.value;
        dim_info_clear(&dim);
    }
    return window_along(v->n, i, spatial, kernel, out);
}

static bool step_is_one(const scope *s, const Onnx__NodeProto *slice)
{
    int64_t *v = NULL;
    size_t n = 0;
    if (slice->n_input < 5 || !*node_input(slice, 4))
        return true;
    bool one = node_ints(s, slice, "", 4, &v, &n) && n == 1 && v[0] == 1;
    free(v);
    return one;
}

/* A Slice right after the node that drops the last `frames` frames along
 * `axis` (a TCN "chomp"), or NULL. */
static const Onnx__NodeProto *chomp_after(const node_view *v, int axis, int64_t frames)
{
    const scope *o;
    const value_entry *e = scope_lookup(v->s, node_output(v->n, 0), &o);
    if (!e || e->n_consumers != 1 || o != v->s)
        return NULL;
    const Onnx__NodeProto *c = o->graph->node[e->consumers[0]];
    int64_t *st = NULL, *en = NULL, *ax = NULL;
    size_t ns = 0, ne = 0, na = 0;
    bool ok = node_op_is(c, "Slice") && node_ints(v->s, c, "starts", 1, &st, &ns) &&
              node_ints(v->s, c, "ends", 2, &en, &ne) && ns == 1 && ne == 1 &&
              node_ints(v->s, c, "axes", 3, &ax, &na) && na == 1 && st[0] == 0 &&
              en[0] == -frames && step_is_one(v->s, c);
    int64_t r = ok ? infer_rank(v->s, node_input(v->n, 0)) : -1;
    ok = ok && (ax[0] < 0 ? ax[0] + r : ax[0]) == axis;
    free(st);
    free(en);
    free(ax);
    return ok ? c : NULL;
}

static void record_need(stream_walk *w, const node_view *v, const time_state *t, int64_t frames)
{
    stream_analysis *a = w->out;
    if (!stream_grow((void **)&a->needs, a->n_needs, sizeof *a->needs)) {
        w->oom = true;
        return;
    }
    context_need need = { v->n, strdup(op_name(v->n)), strdup(str_or_empty(v->n->name)),
                          t->pad_front ? t->padded_by : NULL, t->axis, frames };
    if (!need.op || !need.name) {
        free(need.op);
        free(need.name);
        w->oom = true;
        return;
    }
    a->needs[a->n_needs++] = need;
}

/* Can a zero cache stand for the node's own padding? Pools that pad with
 * something else, or leave the padding out of their average, cannot. */
static const char *zero_cache_refused(const node_view *v, const window *win)
{
    if (!win->begin)
        return NULL;
    if (node_op_is(v->n, "MaxPool"))
        return "pads with -infinity along time, which a zero cache cannot reproduce";
    if (node_op_is(v->n, "AveragePool") && node_attr_int(v->n, "count_include_pad", 0) == 0)
        return "leaves its padding out of the average (count_include_pad=0), which a cache "
               "cannot reproduce";
    return NULL;
}

static void classify_window(stream_walk *w, const node_view *v, const time_state *t, window win)
{
    int64_t span = (win.kernel - 1) * win.dilation;
    int64_t begin = win.begin + t->pad_front, end = win.end + t->pad_back;
    time_state out = *t;
    out.pad_front = out.pad_back = 0;
    out.front_cached = false;
    out.scale = t->scale * win.stride;
    if (begin < span) {
        int64_t ahead = span - begin;
        stream_block(w, v->s, v->n, false, "looks %lld frame%s ahead: pads %lld,%lld along time "
              "(kernel %lld, dilation %lld)", (long long)ahead, ahead == 1 ? "" : "s",
              (long long)begin, (long long)end, (long long)win.kernel, (long long)win.dilation);
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    if (end > 0) {
        stream_block(w, v->s, v->n, false, "adds %lld frame%s after the sequence: pads %lld,%lld along "
              "time", (long long)end, end == 1 ? "" : "s", (long long)begin, (long long)end);
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    if (begin > span) {
        stream_block(w, v->s, v->n, false, "delays the sequence: pads %lld frames before a kernel "
              "that spans %lld", (long long)begin, (long long)(span + 1));
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    if (win.stride > 1)
        need_multiple(w, t->scale * win.stride);
    const char *refused = t->pad_front ? NULL : zero_cache_refused(v, &win);
    if (refused) {
        stream_block(w, v->s, v->n, false, "%s", refused);
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    if (span && !t->front_cached) {
        if (v->s->parent || (t->pad_front && win.begin)) {
            stream_block(w, v->s, v->n, false, "needs %lld frame(s) of the previous call, %s",
                  (long long)span, v->s->parent ? "inside a subgraph (not cached)"
                                                : "padded twice (not cached)");
            set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
            return;
        }
        record_need(w, v, t, span);
    }
    set_outputs(w, v, out);
}

void on_conv(stream_walk *w, const node_view *v)
{
    time_state t = v->in0;
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    if (t.axis == 0) {
        set_outputs(w, v, t); /* time in the batch: frame by frame */
        return;
    }
    if (r < 3) {
        unknown_op(w, v, "the rank of its input is not known");
        return;
    }
    if (t.kind == T_MERGED || t.axis == 1) {
        stream_block(w, v->s, v->n, false, "mixes %s", t.axis == 1 ? "all frames (time is its channel axis)"
                                                         : "time merged with another axis");
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    window win;
    int spatial = (int)r - 2, i = t.axis - 2;
    if (!window_of(v, i, spatial, &win)) {
        unknown_op(w, v, "its kernel size along time is not known");
        return;
    }
    if (!window_resolve_auto_pad(v->n, -1, &win)) {
        unknown_op(w, v, "auto_pad with a stride along time is not analysed");
        return;
    }
    if (node_op_is(v->n, "ConvTranspose")) {
        if (win.kernel == 1 && win.stride == 1 && !win.begin && !win.end && !t.pad_front &&
            !t.pad_back) {
            set_outputs(w, v, t);
            return;
        }
        unknown_op(w, v, "a transposed convolution along time is not analysed");
        return;
    }
    if (win.end && win.stride == 1 && !t.pad_back) {
        const Onnx__NodeProto *chomp = chomp_after(v, t.axis, win.end);
        if (chomp) {
            w->oom |= !ptrmap_put(&w->chomps, chomp, 1);
            win.end = 0;
        }
    }
    if (node_attr_int(v->n, "ceil_mode", 0) && win.stride > 1) {
        unknown_op(w, v, "ceil_mode with a stride along time is not analysed");
        return;
    }
    classify_window(w, v, &t, win);
}

static void on_global_pool(stream_walk *w, const node_view *v)
{
    if (v->in0.axis <= 1) {
        set_outputs(w, v, v->in0);
        return;
    }
    stream_block(w, v->s, v->n, false, "pools over the whole time axis");
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
}

/* ---- ops across axes -------------------------------------------------------------- */

static void whole_sequence(stream_walk *w, const node_view *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void whole_sequence(stream_walk *w, const node_view *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *reason = str_vformat(fmt, ap);
    va_end(ap);
    w->oom |= !reason;
    stream_block(w, v->s, v->n, false, "%s", reason ? reason : "reads the whole sequence");
    free(reason);
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
}

void on_matmul(stream_walk *w, const node_view *v)
{
    const char *a = node_input(v->n, 0), *b = node_input(v->n, 1);
    time_state ta = get_state(w, v->s, a), tb = get_state(w, v->s, b);
    int64_t ra = rank_of_value(v->s, a), rb = rank_of_value(v->s, b);
    bool gemm = node_op_is(v->n, "Gemm");
    if (carries_time(&tb)) {
        whole_sequence(w, v, carries_time(&ta)
                                        ? "multiplies frames with frames (attention across time)"
                                        : "multiplies across the time axis");
        return;
    }
    if (ra < 0 || (gemm && node_attr_int(v->n, "transA", 0))) {
        unknown_op(w, v, "the rank of its first input is not known");
        return;
    }
    if (ta.axis == ra - 1) {
        whole_sequence(w, v, "sums over the time axis (%s)", op_name(v->n));
        return;
    }
    int64_t out_rank = gemm ? 2 : (ra > rb ? ra : rb);
    set_outputs(w, v, time_moved(ta, (int)(ta.axis + out_rank - ra)));
}

/* Ops that work along one axis (attribute `axis`, default `fallback`). */
static void on_axis_op(stream_walk *w, const node_view *v, int64_t fallback, const char *what)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), a = node_attr_int(v->n, "axis", fallback);
    a = a < 0 && r >= 0 ? a + r : a;
    if (a < 0) {
        unknown_op(w, v, "the rank of its input is not known");
        return;
    }
    if (a == v->in0.axis) {
        whole_sequence(w, v, "%s over the time axis", what);
        return;
    }
    set_outputs(w, v, v->in0);
}

static void on_softmax(stream_walk *w, const node_view *v)
{
    if (w->opset >= 13) {
        on_axis_op(w, v, -1, "normalises");
        return;
    }
    /* before opset 13: over every axis from `axis` (default 1) on */
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), a = node_attr_int(v->n, "axis", 1);
    a = a < 0 && r >= 0 ? a + r : a;
    if (v->in0.axis >= a) {
        whole_sequence(w, v, "normalises over the time axis");
        return;
    }
    set_outputs(w, v, v->in0);
}

static void on_layer_norm(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), a = node_attr_int(v->n, "axis", -1);
    a = a < 0 && r >= 0 ? a + r : a;
    if (a < 0) {
        unknown_op(w, v, "the rank of its input is not known");
        return;
    }
    if (v->in0.axis >= a) {
        whole_sequence(w, v, "normalises over axes that include time (axis %lld on)",
                              (long long)a);
        return;
    }
    set_outputs(w, v, v->in0);
}

static void on_instance_norm(stream_walk *w, const node_view *v)
{
    bool group = node_op_is(v->n, "GroupNormalization");
    if (v->in0.axis >= (group ? 1 : 2)) {
        whole_sequence(w, v, "%s normalisation over time", group ? "group" : "instance");
        return;
    }
    set_outputs(w, v, v->in0);
}

static void on_reduce(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *axes = NULL;
    size_t n = 0;
    bool all = !axes_of(v, r, &axes, &n) || n == 0;
    if (all && node_attr_int(v->n, "noop_with_empty_axes", 0)) {
        set_outputs(w, v, v->in0);
        return;
    }
    int before = 0;
    bool hit = all;
    for (size_t i = 0; i < n; i++) {
        hit |= axes[i] == v->in0.axis;
        before += axes[i] < v->in0.axis;
    }
    free(axes);
    if (hit) {
        char op[32];
        snprintf(op, sizeof op, "%s", op_name(v->n) + 6); /* "ReduceMean" -> "mean" */
        op[0] = (char)(op[0] >= 'A' && op[0] <= 'Z' ? op[0] - 'A' + 'a' : op[0]);
        whole_sequence(w, v, "%s over the time axis", *op ? op : "reduces");
        return;
    }
    set_outputs(w, v, time_moved(v->in0, node_attr_int(v->n, "keepdims", 1) ? v->in0.axis
                                                                       : v->in0.axis - before));
}

static void on_cumsum(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *a = NULL;
    size_t n = 0;
    if (!const_ints(v->s, node_input(v->n, 1), &a, &n) || n != 1) {
        unknown_op(w, v, "its axis is not constant");
        return;
    }
    int64_t axis = a[0] < 0 ? a[0] + r : a[0];
    free(a);
    if (axis == v->in0.axis) {
        whole_sequence(w, v, "running sums across time (CumSum) are not carried");
        return;
    }
    set_outputs(w, v, v->in0);
}

static void on_resize(stream_walk *w, const node_view *v)
{
    const scope *s = v->s;
    const Onnx__TensorProto *t =
        v->n->n_input > 2 ? scope_tensor_data(s, constant_tensor(s, node_input(v->n, 2))) : NULL;
    float scale = 0;
    if (t && t->n_float_data > (size_t)v->in0.axis)
        scale = t->float_data[v->in0.axis];
    else if (t && t->has_raw_data && t->raw_data.len >= 4 * ((size_t)v->in0.axis + 1))
        memcpy(&scale, t->raw_data.data + 4 * v->in0.axis, sizeof scale);
    if (scale == 1.0f) {
        set_outputs(w, v, v->in0);
        return;
    }
    whole_sequence(w, v, "resamples along time");
}

/* ---- recurrent nodes ------------------------------------------------------------------ */

/* The node's batch as "NAME" or "NAME*K" when it is K times one named
 * dimension (and the graph declares no name for it). */
static void record_batch_name(stream_walk *w, const node_view *v, int batch_axis)
{
    const char *x = node_input(v->n, 0);
    dim_info d = { 0 };
    bool declared = infer_dim(v->s, x, batch_axis, &d) && d.known;
    dim_info_clear(&d);
    mono m = declared ? (mono){ .ok = false } : dim_mono(w, v->s, x, batch_axis);
    int at = m.ok && m.n == 1 && m.coef >= 1 ? m.sym[0] - SYM_TIME - 1 : -1;
    const char *param = at >= 0 && at < w->n_symbols ? w->symbol_params[at] : NULL;
    if (!param)
        return;
    stream_analysis *a = w->out;
    char buf[300];
    snprintf(buf, sizeof buf, m.coef == 1 ? "%.250s" : "%.250s*%lld", param, (long long)m.coef);
    char *name = strdup(buf);
    if (!name || !stream_grow((void **)&a->names, a->n_names, sizeof *a->names) ||
        !ptrmap_put(&a->batch_names, v->n, a->n_names)) {
        free(name);
        w->oom = true;
        return;
    }
    a->names[a->n_names++] = name;
}

void on_recurrent(stream_walk *w, const node_view *v, const recurrent_op *op)
{
    bool batch_first = recurrent_batch_first(op, v->n);
    int seq = batch_first ? 1 : 0, batch = batch_first ? 0 : 1;
    time_state t = v->in0, y = t, h = t;
    char buf[32];
    const char *dir = node_attr_string(v->n, "direction", buf, sizeof buf);
    if (t.axis == seq && t.kind == T_AXIS) {
        if (dir && strcmp(dir, "forward")) {
            whole_sequence(w, v, "%s %s: its backward direction reads the sequence from "
                                        "its end",
                                  strcmp(dir, "reverse") ? "bidirectional" : "reverse", op->name);
            return;
        }
        w->oom |= !ptrmap_put(&w->out->classes, v->n, STREAM_ALONG_TIME);
        record_batch_name(w, v, batch);
        y.axis = batch_first ? 1 : 0;
        set_state(w, v->s, node_output(v->n, 0), y);
        for (size_t i = 1; i < v->n->n_output; i++)
            set_state(w, v->s, node_output(v->n, i), (time_state){ .kind = T_NONE });
        return;
    }
    if (t.axis != batch) {
        whole_sequence(w, v, "mixes time into its features");
        return;
    }
    w->oom |= !ptrmap_put(&w->out->classes, v->n, STREAM_PER_FRAME);
    y.axis = batch_first ? 0 : 2; /* Y is [T, D, B, H] or [B, T, D, H] */
    h.axis = batch_first ? 0 : 1; /* Y_h is [D, B, H] or [B, D, H] */
    set_state(w, v->s, node_output(v->n, 0), y);
    for (size_t i = 1; i < v->n->n_output; i++)
        set_state(w, v->s, node_output(v->n, i), h);
}

/* ---- the op table ------------------------------------------------------------------------ */


static void on_argmax(stream_walk *w, const node_view *v) { on_axis_op(w, v, 0, "picks"); }
static void on_lp_norm(stream_walk *w, const node_view *v) { on_axis_op(w, v, -1, "normalises"); }
static void on_topk(stream_walk *w, const node_view *v) { on_axis_op(w, v, -1, "sorts"); }
static void on_shape_only(stream_walk *w, const node_view *v)
{
    set_outputs(w, v, (time_state){ .kind = T_NONE });
}
static void on_tile(stream_walk *w, const node_view *v)
{
    int64_t *rep = NULL;
    size_t n = 0;
    bool once = const_ints(v->s, node_input(v->n, 1), &rep, &n) && (size_t)v->in0.axis < n &&
                rep[v->in0.axis] == 1;
    free(rep);
    if (!once) {
        whole_sequence(w, v, "repeats the sequence along time");
        return;
    }
    set_outputs(w, v, v->in0);
}
static void on_range(stream_walk *w, const node_view *v)
{
    whole_sequence(w, v, "counts positions along the sequence");
}
static void on_mvn(stream_walk *w, const node_view *v)
{
    whole_sequence(w, v, "normalises over the time axis");
}
static void on_lrn(stream_walk *w, const node_view *v)
{
    if (v->in0.axis == 1) {
        whole_sequence(w, v, "normalises across neighbouring frames");
        return;
    }
    set_outputs(w, v, v->in0);
}

typedef struct op_entry {
    const char *op;
    node_handler handle;
} op_entry;

static const op_entry op_table[] = {
    /* frame-wise, elementwise */
    { "Identity", on_elementwise }, { "Cast", on_elementwise }, { "Dropout", on_elementwise },
    { "Relu", on_elementwise }, { "LeakyRelu", on_elementwise }, { "PRelu", on_elementwise },
    { "Elu", on_elementwise }, { "Selu", on_elementwise }, { "Celu", on_elementwise },
    { "Sigmoid", on_elementwise }, { "HardSigmoid", on_elementwise }, { "Tanh", on_elementwise },
    { "Softplus", on_elementwise }, { "Softsign", on_elementwise }, { "Abs", on_elementwise },
    { "Neg", on_elementwise }, { "Exp", on_elementwise }, { "Log", on_elementwise },
    { "Sqrt", on_elementwise }, { "Reciprocal", on_elementwise }, { "Clip", on_elementwise },
    { "Erf", on_elementwise }, { "Gelu", on_elementwise }, { "HardSwish", on_elementwise },
    { "Mish", on_elementwise }, { "Not", on_elementwise }, { "Floor", on_elementwise },
    { "Ceil", on_elementwise }, { "Round", on_elementwise }, { "Sign", on_elementwise },
    { "Sin", on_elementwise }, { "Cos", on_elementwise }, { "Tan", on_elementwise },
    { "Atan", on_elementwise }, { "IsNaN", on_elementwise }, { "IsInf", on_elementwise },
    { "ThresholdedRelu", on_elementwise }, { "Shrink", on_elementwise },
    { "BatchNormalization", on_elementwise }, { "QuantizeLinear", on_elementwise },
    { "DequantizeLinear", on_elementwise }, { "Add", on_elementwise },
    { "Sub", on_elementwise }, { "Mul", on_elementwise }, { "Div", on_elementwise },
    { "Pow", on_elementwise }, { "Max", on_elementwise }, { "Min", on_elementwise },
    { "Sum", on_elementwise }, { "Mean", on_elementwise }, { "Where", on_elementwise },
    { "Equal", on_elementwise }, { "Greater", on_elementwise }, { "Less", on_elementwise },
    { "GreaterOrEqual", on_elementwise }, { "LessOrEqual", on_elementwise },
    { "And", on_elementwise }, { "Or", on_elementwise }, { "Xor", on_elementwise },
    { "Mod", on_elementwise },
    /* layout */
    { "Transpose", on_transpose }, { "Reshape", on_reshape }, { "Flatten", on_flatten },
    { "Squeeze", on_squeeze }, { "Unsqueeze", on_unsqueeze }, { "Concat", on_concat },
    { "Split", on_split }, { "Slice", on_slice }, { "Gather", on_gather },
    { "Expand", on_expand }, { "Tile", on_tile }, { "Pad", on_pad }, { "Resize", on_resize },
    { "Shape", on_shape_only }, { "Size", on_shape_only }, { "ConstantOfShape", on_shape_only },
    { "Range", on_range },
    /* over features, or across time */
    { "MatMul", on_matmul }, { "Gemm", on_matmul }, { "Softmax", on_softmax },
    { "LogSoftmax", on_softmax }, { "Hardmax", on_softmax },
    { "LayerNormalization", on_layer_norm }, { "InstanceNormalization", on_instance_norm },
    { "GroupNormalization", on_instance_norm }, { "LpNormalization", on_lp_norm },
    { "MeanVarianceNormalization", on_mvn }, { "LRN", on_lrn },
    { "ReduceMax", on_reduce }, { "ReduceMin", on_reduce },
    { "ReduceMean", on_reduce }, { "ReduceSum", on_reduce },
    { "ReduceProd", on_reduce }, { "ReduceL1", on_reduce },
    { "ReduceL2", on_reduce }, { "ReduceLogSum", on_reduce },
    { "ReduceLogSumExp", on_reduce }, { "ReduceSumSquare", on_reduce },
    { "ArgMax", on_argmax }, { "ArgMin", on_argmax }, { "TopK", on_topk },
    { "CumSum", on_cumsum },
    /* windows along the spatial axes */
    { "Conv", on_conv }, { "ConvTranspose", on_conv }, { "AveragePool", on_conv },
    { "MaxPool", on_conv }, { "LpPool", on_conv }, { "GlobalAveragePool", on_global_pool },
    { "GlobalMaxPool", on_global_pool }, { "GlobalLpPool", on_global_pool },
};

node_handler handler_of(const Onnx__NodeProto *n)
{
    if (!node_default_domain(n))
        return NULL;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (node_op_is(n, op_table[i].op))
            return op_table[i].handle;
    return NULL;
}
