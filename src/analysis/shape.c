/* Shapes, ranks and constants (analysis/shape.h).
 *
 * Ranks and the dimensions of the first MEMO_AXES axes are memoized per
 * value (analysis/memo.h); a value whose memo cannot be allocated is answered
 * without one, and the failure noted (error.h). */
#include "analysis/shape.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/dim_source.h"
#include "analysis/window.h"
#include "error.h"
#include "recurrent_ops.h"
#include "model/tensor_util.h"

#define MEMO_AXES 4 /* dims of axes 0..3 are memoized (states have rank 3, Y rank 4) */

typedef struct rank_memo {
    unsigned char state;
    bool cut;
    int depth;
    int64_t rank;
} rank_memo;

/* One axis of one value: 24 bytes, allocated only for the axes asked for. */
typedef struct dim_memo {
    unsigned char state;
    bool cut;
    /* trace_axis_to_input's walk from this value and axis: a walk that went
     * one way (each node followed at most one of its inputs; no broadcast,
     * whose choice depends on what its operands' walks find, and no Reshape
     * whose shape is followed through other queries), was cut short by the
     * depth bound (its own, not a rank's: a rank cut short may later be
     * computed again, differently) and found no input finds none from any
     * deeper start either: it follows the same nodes, whose ranks are
     * memoized for good, and stops no later, one node per depth. walk_dead is then 1 + the depth it was computed at (0:
     * not known). So a long chain is walked once, not once per layer. */
    unsigned char walk_dead;
    bool known;   /* the dimension, as a dim_info's fields */
    int depth;
    int64_t value;
    char *param;  /* owned */
} dim_memo;

static void dim_memo_forget(dim_memo *m)
{
    free(m->param);
    m->param = NULL;
    m->known = false;
    m->value = 0;
}

static void dim_memo_clear(void *entry) { dim_memo_forget(entry); }

/* The memo of one axis (< MEMO_AXES) of a value; NULL when out of memory. */
static dim_memo *dim_memo_of(const scope *o, const value_entry *e, int64_t axis)
{
    return memo_entry_keyed(o, e, MEMO_SLOT_SHAPE, (int)axis, MEMO_AXES, sizeof(dim_memo),
                            dim_memo_clear);
}

static rank_memo *rank_memo_of(const scope *o, const value_entry *e)
{
    return memo_entry(o, e, MEMO_SLOT_RANK, sizeof(rank_memo), NULL);
}

/* Ops whose output has input 0's shape. */
const char *const same_shape_ops[] = {
    "Identity", "Cast", "Dropout", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",
    "HardSigmoid", "Tanh", "Softplus", "Softsign", "Abs", "Neg", "Exp", "Log", "Sqrt",
    "Reciprocal", "Clip", "Erf", "Gelu", "HardSwish", "Softmax", "LogSoftmax", "Not", "Floor",
    "Ceil", "Round", "Sign", "Sin", "Cos", "LayerNormalization", "BatchNormalization",
    "InstanceNormalization", "QuantizeLinear", "DequantizeLinear", NULL
};
static const char *const broadcast_ops[] = { "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
                                             "Sum", "Mean", "Where", NULL };
/* Ops on [N, C, spatial...] whose output keeps input 0's rank and batch N
 * (axis 0); the other axes change. */
const char *const batch_keeping_ops[] = { "Conv", "ConvTranspose", "ConvInteger",
                                                 "MaxPool", "AveragePool", "LpPool",
                                                 "GlobalAveragePool", "GlobalMaxPool",
                                                 "GlobalLpPool", NULL };
/* Ops that reduce the axes in their "axes" attribute or input 1 (all of them
 * when absent), keeping them as 1 unless keepdims is 0. */
static const char *const reduce_ops[] = { "ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
                                          "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                          "ReduceLogSumExp", "ReduceSumSquare", NULL };

typedef struct shape_query {
    bool cut; /* an answer was cut short by MAX_TRACE_DEPTH */
    /* trace_axis_to_input: walk past declared shapes to a main-graph input,
     * and record which of its axes the traced dimension is. Their answer
     * is not a dimension: only the walks that find nothing are remembered
     * (dim_memo.walk_dead); a step budget bounds each. */
    bool to_input;
    int budget;
    const char *input;
    int64_t input_axis;
    /* the walk's shape (see dim_memo.walk_dead): the walks the current node started,
     * whether a node below it went more than one way, whether the budget
     * ran out, how many inputs were found; `replayed`: the budget was
     * charged a reused walk's upper bound, one step per depth left (if it
     * then runs out, the trace is done again without reuse, `no_reuse`) */
    int children;
    bool branched, starved, replayed, no_reuse;
    unsigned found;
    /* a rank memoized as cut short by the depth bound was used: a later
     * query from nearer may compute it again, differently, so a walk that
     * used it is not remembered as dead */
    bool rank_cut;
} shape_query;

static int64_t rank_of(shape_query *q, const scope *s, const char *value, int depth);
static bool infer_dim_at(shape_query *q, const scope *s, const char *value, int64_t axis,
                         int depth, dim_info *out);

const Onnx__NodeProto *shape_producer(const scope *s, const char *value,
                                             const scope **owner, int *slot)
{
    const value_entry *e = scope_lookup(s, value, owner);
    return e ? shape_producer_of(*owner, e, slot) : NULL;
}

const Onnx__NodeProto *shape_producer_of(const scope *o, const value_entry *e, int *slot)
{
    if (e->producer < 0)
        return NULL;
    const Onnx__NodeProto *p = o->graph->node[e->producer];
    *slot = e->producer_slot;
    return node_default_domain(p) || recurrent_op_of(p) ? p : NULL;
}

static int64_t rank_of_broadcast(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                                 int depth)
{
    int64_t rank = -1;
    for (size_t i = 0; i < p->n_input; i++) {
        int64_t r = rank_of(q, s, str_or_empty(p->input[i]), depth + 1);
        if (r < 0)
            return -1;
        rank = r > rank ? r : rank;
    }
    return rank;
}

/* The number of entries of a 1-D shape value (the rank of what it shapes),
 * or -1. */
static int64_t shape_length(shape_query *q, const scope *s, const char *shape, int depth)
{
    shape_query dims = { .cut = false }; /* a dimension, even inside an input trace */
    dim_info d = { 0 };
    int64_t n = -1;
    if (rank_of(q, s, shape, depth + 1) == 1 && infer_dim_at(&dims, s, shape, 0, depth + 1, &d) &&
        d.known && !d.param)
        n = d.value;
    dim_info_clear(&d);
    q->cut |= dims.cut;
    return n;
}

/* (o, e): the value scope_lookup() found, the scope that owns it. */
static int64_t compute_rank(shape_query *q, const scope *o, const value_entry *e, int depth)
{
    const Onnx__TensorShapeProto *sh = declared_shape(o, e);
    if (sh)
        return (int64_t)sh->n_dim;
    const Onnx__TensorProto *t = constant_tensor_of(o, e);
    if (t)
        return (int64_t)t->n_dims;
    int slot;
    const Onnx__NodeProto *p = shape_producer_of(o, e, &slot);
    if (!p || p->n_input == 0)
        return -1;
    const char *in0 = str_or_empty(p->input[0]);
    if (recurrent_op_of(p))
        return slot == 0 ? 4 : 3;
    if (node_op_in(p, same_shape_ops) || node_op_is(p, "Transpose") || node_op_is(p, "Concat") ||
        node_op_is(p, "Slice") || node_op_in(p, batch_keeping_ops) || node_op_is(p, "Pad") ||
        node_op_is(p, "Tile") || node_op_is(p, "Resize"))
        return rank_of(q, o, in0, depth + 1);
    if (node_op_is(p, "MatMul") || node_op_in(p, broadcast_ops))
        return rank_of_broadcast(q, o, p, depth);
    if (node_op_is(p, "Gemm"))
        return 2;
    int64_t *vals = NULL, rank = -1;
    size_t n = 0;
    if (node_op_in(p, reduce_ops) && node_attr_int(p, "keepdims", 1) != 0) {
        rank = rank_of(q, o, in0, depth + 1);
    } else if (node_op_in(p, reduce_ops) && node_ints(o, p, "axes", 1, &vals, &n)) {
        int64_t r = rank_of(q, o, in0, depth + 1);
        rank = r >= (int64_t)n ? r - (int64_t)n : -1;
    } else if ((node_op_is(p, "Squeeze") || node_op_is(p, "Unsqueeze")) &&
               node_ints(o, p, "axes", 1, &vals, &n)) {
        int64_t r = rank_of(q, o, in0, depth + 1);
        if (r >= 0)
            rank = node_op_is(p, "Squeeze") ? r - (int64_t)n : r + (int64_t)n;
    } else if (node_op_is(p, "Shape") || node_op_is(p, "Range")) {
        rank = 1;
    } else if (node_op_is(p, "Gather") && p->n_input > 1) {
        int64_t data = rank_of(q, o, in0, depth + 1), idx = rank_of(q, o, node_input(p, 1), depth + 1);
        rank = data >= 1 && idx >= 0 ? data + idx - 1 : -1;
    } else if ((node_op_is(p, "Reshape") || node_op_is(p, "Expand")) && p->n_input > 1) {
        rank = shape_length(q, o, node_input(p, 1), depth);
        if (node_op_is(p, "Expand")) { /* broadcast: the larger rank */
            int64_t r = rank_of(q, o, in0, depth + 1);
            rank = rank < 0 || r < 0 ? -1 : r > rank ? r : rank;
        }
    } else if (node_op_is(p, "ConstantOfShape")) {
        rank = shape_length(q, o, in0, depth);
    }
    free(vals);
    return rank;
}

static int64_t rank_at(shape_query *q, const scope *o, const value_entry *e, int depth);

/* The rank of `value`, or -1 when unknown; memoized. */
static int64_t rank_of(shape_query *q, const scope *s, const char *value, int depth)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    return e ? rank_at(q, o, e, depth) : -1;
}

/* rank_of() of the value found (entry e of scope o). */
static int64_t rank_at(shape_query *q, const scope *o, const value_entry *e, int depth)
{
    if (depth > MAX_TRACE_DEPTH) {
        q->cut = true; /* from deeper, cut as well: not a rank_cut */
        return -1;
    }
    rank_memo *m = rank_memo_of(o, e);
    if (m && m->state == MEMO_BUSY)
        return -1; /* a cycle */
    if (m && memo_reusable(m->state, m->cut, m->depth, depth)) {
        q->cut |= m->cut;
        q->rank_cut |= m->cut;
        return m->rank;
    }
    if (m)
        m->state = MEMO_BUSY;
    bool outer_cut = q->cut;
    q->cut = false;
    int64_t rank = compute_rank(q, o, e, depth);
    q->rank_cut |= q->cut;
    if (m)
        *m = (rank_memo){ .state = MEMO_DONE, .cut = q->cut, .depth = depth, .rank = rank };
    q->cut |= outer_cut;
    return rank;
}

/* Squeeze, Unsqueeze and reductions: the rank of input 0 and the axes
 * (attribute or input 1), or false when either is unknown. */
static bool rank_and_axes(shape_query *q, const scope *s, const Onnx__NodeProto *p, int depth,
                          int64_t *rank, int64_t **axes, size_t *n)
{
    *axes = NULL;
    *n = 0;
    *rank = rank_of(q, s, str_or_empty(p->input[0]), depth + 1);
    return *rank >= 0 && node_ints(s, p, "axes", 1, axes, n);
}

/* Squeeze and reductions: output axis `axis` is the axis-th input axis not
 * in the node's axes, or with `keep` (a reduction's keepdims) the input's
 * same axis, 1 where it is reduced. No axes: unknown here (Squeeze removes
 * every 1, a reduction every axis). */
static bool through_removed_axes(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                                 bool keep, int64_t axis, int depth, dim_info *out)
{
    const char *in0 = str_or_empty(p->input[0]);
    int64_t *axes, r;
    size_t n;
    if (!rank_and_axes(q, s, p, depth, &r, &axes, &n))
        return true;
    int64_t kept = -1, in_axis = -1;
    for (int64_t i = 0; i < r && in_axis < 0; i++) {
        bool removed = false;
        for (size_t k = 0; k < n; k++)
            removed |= (axes[k] < 0 ? axes[k] + r : axes[k]) == i;
        if (keep && i == axis && removed) {
            out->known = true;
            out->value = 1;
            break;
        }
        if (keep ? i == axis : !removed && ++kept == axis)
            in_axis = i;
    }
    free(axes);
    return in_axis < 0 || infer_dim_at(q, s, in0, in_axis, depth + 1, out);
}

static bool through_unsqueeze(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                              int64_t axis, int depth, dim_info *out)
{
    const char *in0 = str_or_empty(p->input[0]);
    int64_t *axes, r;
    size_t n;
    if (!rank_and_axes(q, s, p, depth, &r, &axes, &n))
        return true;
    int64_t out_rank = r + (int64_t)n, before = 0;
    bool inserted = false;
    for (size_t k = 0; k < n; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + out_rank : axes[k];
        inserted |= a == axis;
        before += a < axis;
    }
    free(axes);
    if (inserted) {
        out->known = true;
        out->value = 1;
        return true;
    }
    return infer_dim_at(q, s, in0, axis - before, depth + 1, out);
}

static bool through_transpose(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                              int64_t axis, int depth, dim_info *out)
{
    const char *in0 = str_or_empty(p->input[0]);
    const Onnx__AttributeProto *perm = node_attr(p, "perm");
    if (perm && perm->n_ints)
        return (size_t)axis >= perm->n_ints ||
               infer_dim_at(q, s, in0, perm->ints[axis], depth + 1, out);
    int64_t r = rank_of(q, s, in0, depth + 1); /* no perm: axes reversed */
    return r < 0 || infer_dim_at(q, s, in0, r - 1 - axis, depth + 1, out);
}


static bool through_reshape(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                            int64_t axis, int depth, dim_info *out)
{
    const scope *ys;
    const char *y;
    int64_t j;
    q->branched |= q->to_input; /* the way depends on other queries' answers: not remembered */
    if (p->n_input > 1 && shape_entry_source(s, node_input(p, 1), axis, &ys, &y, &j))
        return infer_dim_at(q, ys, y, j, depth + 1, out);
    int64_t *shape = NULL;
    size_t n = 0;
    if (p->n_input < 2 || !node_ints(s, p, "", 1, &shape, &n) || (size_t)axis >= n) {
        free(shape);
        return true;
    }
    int64_t want = shape[axis];
    free(shape);
    if (want > 0) {
        out->known = true;
        out->value = want;
        return true;
    }
    /* 0 copies the input's dimension (unless allowzero is set) */
    if (want == 0 && node_attr_int(p, "allowzero", 0) == 0)
        return infer_dim_at(q, s, str_or_empty(p->input[0]), axis, depth + 1, out);
    return true;
}


/* The directions or hidden axis of a recurrent output, from the node's
 * attributes, or -1. */
static int64_t recurrent_attr_dim(const Onnx__NodeProto *p, int slot, int64_t axis)
{
    bool batch_first = node_attr_int(p, "layout", 0) == 1;
    int64_t last = slot == 0 ? 3 : 2, dirs = batch_first ? (slot == 0 ? 2 : 1) : (slot == 0);
    char buf[32];
    const char *dir = node_attr_string(p, "direction", buf, sizeof buf);
    if (axis == dirs)
        return dir && !strcmp(dir, "bidirectional") ? 2 : 1;
    return axis == last ? node_attr_int(p, "hidden_size", -1) : -1;
}

static bool through_recurrent(shape_query *q, const scope *s, const Onnx__NodeProto *p, int slot,
                              int64_t axis, int depth, dim_info *out)
{
    int64_t x_axis = recurrent_x_axis(p, slot, axis), fixed = recurrent_attr_dim(p, slot, axis);
    if (x_axis < 0 && fixed > 0) {
        out->known = true;
        out->value = fixed;
    }
    return x_axis < 0 || infer_dim_at(q, s, node_input(p, 0), x_axis, depth + 1, out);
}

/* For a broadcasting op: an operand of the output's rank whose dimension is
 * a name or larger than 1 gives the output's (the others are equal or 1);
 * one where every operand has 1 is 1. Constants count like the others. */
static bool through_broadcast(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                              int64_t axis, int depth, dim_info *out)
{
    int64_t out_rank = rank_of_broadcast(q, s, p, depth);
    q->branched |= q->to_input; /* what it follows depends on what the walks find */
    if (out_rank < 0)
        return true;
    size_t ones = 0, operands = 0;
    for (size_t i = 0; i < p->n_input; i++) {
        const char *in = str_or_empty(p->input[i]);
        int64_t r = rank_of(q, s, in, depth + 1);
        int64_t in_axis = axis - (out_rank - r);
        operands++;
        if (r < 0)
            return true;
        if (in_axis < 0) { /* the operand is broadcast along this axis */
            ones++;
            continue;
        }
        dim_info d = { 0 };
        if (!infer_dim_at(q, s, in, in_axis, depth + 1, &d))
            return false;
        if (d.known && (d.param || d.value != 1)) {
            *out = d;
            return true;
        }
        ones += d.known;
        dim_info_clear(&d);
    }
    if (operands && ones == operands) {
        out->known = true;
        out->value = 1;
    }
    return true;
}

static bool through_matmul(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                           const char *value, int64_t axis, int depth, dim_info *out)
{
    /* every axis but the last comes from A (Gemm: unless transA) */
    const char *in0 = str_or_empty(p->input[0]);
    int64_t r = rank_of(q, s, value, depth + 1);
    if (r < 1 || axis >= r - 1 || node_attr_int(p, "transA", 0) != 0 ||
        rank_of(q, s, in0, depth + 1) != r)
        return true;
    return infer_dim_at(q, s, in0, axis, depth + 1, out);
}

/* A known, fixed dimension (no name) of `value` along `axis`, or -1. */
static int64_t fixed_dim(shape_query *q, const scope *s, const char *value, int64_t axis,
                         int depth, bool *ok)
{
    dim_info d = { 0 };
    *ok = infer_dim_at(q, s, value, axis, depth + 1, &d);
    int64_t v = *ok && d.known && !d.param ? d.value : -1;
    dim_info_clear(&d);
    return v;
}

/* Conv, ConvTranspose and pools, axis >= 1: the channels from the weight
 * (the pools keep them); a spatial length from the input's (its identity,
 * when tracing to an input). */
static bool through_window(shape_query *q, const scope *o, const Onnx__NodeProto *p,
                           int64_t axis, int depth, dim_info *out)
{
    const char *in0 = node_input(p, 0);
    bool global = !strncmp(str_or_empty(p->op_type), "Global", 6);
    bool weighted = strstr(str_or_empty(p->op_type), "Conv") != NULL, ok = true;
    if (q->to_input) /* the channel axis is not followed: it changes meaning */
        return axis == 1 || global || infer_dim_at(q, o, in0, axis, depth + 1, out);
    if (axis == 1 && !weighted)
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    int64_t v = -1;
    if (axis == 1 && p->n_input > 1) { /* ConvTranspose: W is [C, M / group, k...] */
        bool transposed = node_op_is(p, "ConvTranspose");
        v = fixed_dim(q, o, node_input(p, 1), transposed, depth, &ok);
        v = transposed && v > 0 ? v * node_attr_int(p, "group", 1) : v;
    } else if (axis >= 2 && global) {
        v = 1;
    } else if (axis >= 2) {
        int64_t r = rank_of(q, o, in0, depth + 1), len = fixed_dim(q, o, in0, axis, depth, &ok);
        int64_t kernel = weighted && p->n_input > 1 && ok
                             ? fixed_dim(q, o, node_input(p, 1), axis, depth, &ok) : -1;
        window w;
        int i = (int)axis - 2;
        if (ok && r > axis && len >= 0 && window_along(p, i, (int)r - 2, kernel, &w) &&
            window_resolve_auto_pad(p, len, &w))
            v = window_output_len(p, i, &w, len);
    }
    if (v >= 0) {
        out->known = true;
        out->value = v;
    }
    return ok;
}

/* Pad: the input's length plus the pads along the axis (attribute, or input
 * 1 folded from constants; not with an axes input). */
static bool through_pad(shape_query *q, const scope *o, const Onnx__NodeProto *p, int64_t axis,
                        int depth, dim_info *out)
{
    const char *in0 = node_input(p, 0);
    if (q->to_input)
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    int64_t *pads = NULL, r = rank_of(q, o, in0, depth + 1);
    size_t n = 0;
    bool ok = true, have = node_attr(p, "pads")
                               ? node_ints(o, p, "pads", 1, &pads, &n)
                               : p->n_input > 1 && (p->n_input < 4 || !*node_input(p, 3)) &&
                                     fold_int64s(o, node_input(p, 1), &pads, &n);
    have = have && r > axis && n == (size_t)(2 * r);
    if (have && !pads[axis] && !pads[axis + r]) { /* not padded: the same, named or not */
        free(pads);
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    }
    int64_t len = have ? fixed_dim(q, o, in0, axis, depth, &ok) : -1;
    if (len >= 0 && len + pads[axis] + pads[axis + r] >= 0) {
        out->known = true;
        out->value = len + pads[axis] + pads[axis + r];
    }
    free(pads);
    return ok;
}

/* Along a Concat's axis: the sum of its inputs' lengths. */
static bool concat_sum(shape_query *q, const scope *o, const Onnx__NodeProto *p, int64_t axis,
                       int depth, dim_info *out)
{
    int64_t sum = 0;
    bool ok = true;
    for (size_t i = 0; i < p->n_input && sum >= 0 && ok; i++) {
        int64_t len = fixed_dim(q, o, node_input(p, i), axis, depth, &ok);
        sum = len < 0 ? -1 : sum + len;
    }
    if (ok && sum >= 0) {
        out->known = true;
        out->value = sum;
    }
    return ok;
}

/* Whether a Slice may cut `axis` (its axes, or the first ones when it has
 * none; true when they are not known). */
static bool slice_cuts(const scope *s, const Onnx__NodeProto *p, int64_t axis)
{
    int64_t *axes = NULL, *starts = NULL;
    size_t n = 0, n_starts = 0;
    bool listed = node_ints(s, p, "axes", 3, &axes, &n);
    if (!listed && (node_attr(p, "axes") || (p->n_input > 3 && *node_input(p, 3))))
        return true; /* axes given but not constant */
    if (!listed) {
        bool known = node_ints(s, p, "starts", 1, &starts, &n_starts);
        free(starts);
        return !known || axis < (int64_t)n_starts;
    }
    int64_t r = infer_rank(s, node_input(p, 0));
    bool cuts = false;
    for (size_t k = 0; k < n; k++)
        cuts |= axes[k] == axis || (axes[k] < 0 && (r < 0 || axes[k] + r == axis));
    free(axes);
    return cuts;
}

/* (o, e): the value scope_lookup() found for `value`. */
static bool through_producer(shape_query *q, const scope *o, const value_entry *e,
                             const char *value, int64_t axis, int depth, dim_info *out)
{
    int slot;
    const Onnx__NodeProto *p = shape_producer_of(o, e, &slot);
    if (!p || p->n_input == 0)
        return true;
    const char *in0 = str_or_empty(p->input[0]);
    if (node_op_is(p, "Slice") && (q->to_input || !slice_cuts(o, p, axis)))
        return infer_dim_at(q, o, in0, axis, depth + 1, out); /* the same axis (shorter) */
    if (recurrent_op_of(p))
        return through_recurrent(q, o, p, slot, axis, depth, out);
    if (node_op_in(p, same_shape_ops))
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    if (node_op_in(p, batch_keeping_ops))
        return axis == 0 ? infer_dim_at(q, o, in0, axis, depth + 1, out)
                         : through_window(q, o, p, axis, depth, out);
    if (node_op_is(p, "Pad"))
        return through_pad(q, o, p, axis, depth, out);
    if (node_op_in(p, reduce_ops))
        return through_removed_axes(q, o, p, node_attr_int(p, "keepdims", 1) != 0, axis, depth,
                                    out);
    if (node_op_is(p, "Squeeze"))
        return through_removed_axes(q, o, p, false, axis, depth, out);
    if (node_op_is(p, "Unsqueeze"))
        return through_unsqueeze(q, o, p, axis, depth, out);
    if (node_op_is(p, "Transpose"))
        return through_transpose(q, o, p, axis, depth, out);
    if (node_op_is(p, "Reshape"))
        return through_reshape(q, o, p, axis, depth, out);
    if (node_op_is(p, "MatMul") || node_op_is(p, "Gemm"))
        return through_matmul(q, o, p, value, axis, depth, out);
    if (node_op_in(p, broadcast_ops))
        return through_broadcast(q, o, p, axis, depth, out);
    if (node_op_is(p, "Concat")) {
        int64_t r = rank_of(q, o, in0, depth + 1), c = node_attr_int(p, "axis", 0);
        if (r < 0)
            return true;
        /* along the Concat's axis the dimension is a sum; the input axis it
         * runs along is the last input's (a context cache, GTCRN's and
         * DPCRN's, puts the cached frames first and this call's last) */
        if ((c < 0 ? c + r : c) == axis)
            return q->to_input ? infer_dim_at(q, o, str_or_empty(p->input[p->n_input - 1]), axis,
                                              depth + 1, out)
                               : concat_sum(q, o, p, axis, depth, out);
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    }
    return true;
}

/* Dimension `axis` of `value` (entry e of scope o) into *out (cleared);
 * false when out of memory. */
static bool compute_dim(shape_query *q, const char *value, const scope *o,
                        const value_entry *e, int64_t axis, int depth, dim_info *out)
{
    const Onnx__TensorShapeProto *sh = declared_shape(o, e);
    if (sh && (size_t)axis < sh->n_dim) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[axis];
        dim_from_proto(d, out);
        if (out->known)
            return true;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
            d->dim_param && d->dim_param[0]) {
            oom_note(); /* strdup failed */
            return false;
        }
    }
    const Onnx__TensorProto *t = constant_tensor_of(o, e);
    if (t) {
        if ((size_t)axis < t->n_dims && t->dims[axis] >= 0) {
            out->known = true;
            out->value = t->dims[axis];
        }
        return true;
    }
    return through_producer(q, o, e, value, axis, depth, out);
}

/* *to = a copy of the memoized dimension (to->param owned). */
static bool dim_from_memo(dim_info *to, const dim_memo *from)
{
    dim_info_clear(to);
    *to = (dim_info){ from->known, from->value, NULL };
    if (!from->param || (to->param = strdup(from->param)) != NULL)
        return true;
    oom_note();
    return false;
}

static bool dim_to_memo(dim_memo *to, const dim_info *from)
{
    dim_memo_forget(to);
    to->known = from->known;
    to->value = from->value;
    if (!from->param || (to->param = strdup(from->param)) != NULL)
        return true;
    oom_note();
    return false;
}

/* trace_axis_to_input's step: a main-graph input ends the walk, anything
 * else is followed through its producer. */
static bool walk_step(shape_query *q, const char *value, const scope *o,
                      const value_entry *e, int64_t axis, int depth, dim_info *out)
{
    if (--q->budget <= 0) {
        q->starved = true;
        return true;
    }
    if (o->parent == NULL && e->graph_input >= 0 && e->initializer < 0) {
        q->input = e->name;
        q->input_axis = axis;
        q->found++;
        return true;
    }
    return through_producer(q, o, e, value, axis, depth, out);
}

/* walk_step, reusing and recording dead walks (walk_memo). */
static bool walk_to_input(shape_query *q, const char *value, const scope *o,
                          const value_entry *e, int64_t axis, int depth, dim_info *out)
{
    /* read without allocating: most walks are not remembered */
    const dim_memo *w = axis < MEMO_AXES ? memo_entry_find(o, e, MEMO_SLOT_SHAPE, (int)axis)
                                         : NULL;
    if (w && !q->no_reuse && w->walk_dead && depth + 1 >= w->walk_dead) {
        q->budget -= MAX_TRACE_DEPTH + 1 - depth;
        q->replayed = true;
        q->cut = true;
        return true;
    }
    int children = q->children;
    bool branched = q->branched, starved = q->starved, cut = q->cut, rank_cut = q->rank_cut;
    unsigned found = q->found;
    q->children = 0;
    q->branched = q->starved = q->cut = q->rank_cut = false;
    bool ok = walk_step(q, value, o, e, axis, depth, out);
    bool one_way = q->children <= 1 && !q->branched;
    dim_memo *dead = ok && axis < MEMO_AXES && one_way && q->cut && !q->rank_cut &&
                             !q->starved && q->found == found && !out->known
                         ? dim_memo_of(o, e, axis) : NULL;
    if (dead)
        dead->walk_dead = (unsigned char)(depth + 1);
    q->children = children;
    q->branched = branched || !one_way;
    q->starved |= starved;
    q->cut |= cut;
    q->rank_cut |= rank_cut;
    return ok;
}

/* Dimension `axis` of `value` into *out, which holds nothing known yet;
 * memoized for the first MEMO_AXES axes. False when out of memory. */
static bool infer_dim_at(shape_query *q, const scope *s, const char *value, int64_t axis,
                         int depth, dim_info *out)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || axis < 0)
        return true;
    q->children += q->to_input;
    if (depth > MAX_TRACE_DEPTH) {
        q->cut = true;
        return true;
    }
    if (q->to_input)
        return walk_to_input(q, value, o, e, axis, depth, out);
    dim_memo *m = axis < MEMO_AXES ? dim_memo_of(o, e, axis) : NULL;
    if (m && m->state == MEMO_BUSY)
        return true; /* a cycle */
    if (m && memo_reusable(m->state, m->cut, m->depth, depth)) {
        q->cut |= m->cut;
        return dim_from_memo(out, m);
    }
    if (!m)
        return compute_dim(q, value, o, e, axis, depth, out);
    dim_memo_forget(m);
    m->state = MEMO_BUSY;
    bool outer_cut = q->cut;
    q->cut = false;
    bool ok = compute_dim(q, value, o, e, axis, depth, out);
    m->cut = q->cut;
    m->depth = depth;
    q->cut |= outer_cut;
    m->state = ok && dim_to_memo(m, out) ? MEMO_DONE : MEMO_NONE;
    return ok && m->state == MEMO_DONE;
}

bool trace_axis_to_input(const scope *s, const char *value, int64_t axis, const char **input,
                         int64_t *input_axis)
{
    shape_query q = { .to_input = true, .budget = 10000 };
    dim_info unused = { 0 };
    bool ok = infer_dim_at(&q, s, value, axis, 0, &unused);
    dim_info_clear(&unused);
    if (q.replayed && q.starved) { /* a reused walk's bound ran the budget out: the real way */
        q = (shape_query){ .to_input = true, .budget = 10000, .no_reuse = true };
        ok = infer_dim_at(&q, s, value, axis, 0, &unused);
        dim_info_clear(&unused);
    }
    *input = ok ? q.input : NULL;
    *input_axis = ok && q.input ? q.input_axis : -1;
    return ok;
}

bool infer_dim(const scope *s, const char *value, int64_t axis, dim_info *out)
{
    shape_query q = { .cut = false };
    dim_info_clear(out);
    return infer_dim_at(&q, s, value, axis, 0, out);
}
int64_t infer_rank(const scope *s, const char *value)
{
    shape_query q = { .cut = false };
    return rank_of(&q, s, value, 0);
}

int64_t infer_rank_of(const scope *o, const value_entry *e)
{
    shape_query q = { .cut = false };
    return rank_at(&q, o, e, 0);
}
