/* Shapes, ranks and constants (analysis/shape.h).
 *
 * Ranks, the dimensions of the first MEMO_AXES axes and the input traces of
 * those axes are memoized per value (analysis/memo.h); a value whose memo
 * cannot be allocated is answered without one, and the failure noted
 * (error.h).
 *
 * No depth bound changes an answer: a chain of any length is followed to
 * its end, each value answered once, and the C stack stays bounded. A query
 * recurses at most SHAPE_STACK_DEPTH values deep; a value reached deeper
 * whose answer is not known yet is deferred (pushed on the query's
 * `later` stack) and what was being answered is cut short. The query's
 * driver (shape_drive) then answers the deferred values first, from depth
 * 0, the last deferred first, and asks the question again: it now finds
 * their answers in the memo. A chain of N values is so answered in N /
 * SHAPE_STACK_DEPTH rounds of SHAPE_STACK_DEPTH steps each, twice over:
 * linear. An answer cut short is kept only for the round that computed it
 * (`epoch`), where it is reused from as deep or deeper (it would
 * be cut short as well), so that a graph whose walks fan out (Concat(c, c)
 * chains) is walked once per round and not once per path. A deferred value
 * whose own answer waits for values it deferred is marked `queued`; meeting
 * it again before it is answered is a cycle (an invalid graph), answered
 * "not known" as MEMO_BUSY is. Dimensions of axes past MEMO_AXES have no
 * memo, so they cannot be deferred: reached deeper than SHAPE_STACK_DEPTH,
 * they are not known (ranks above 4; no exporter writes such chains). */
#include "analysis/shape.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dim_source.h"
#include "analysis/window.h"
#include "error.h"
#include "recurrent_ops.h"
#include "model/tensor_util.h"

#define MEMO_AXES 4 /* dims of axes 0..3 are memoized (states have rank 3, Y rank 4) */
/* Keys of the shape memo: MEMO_AXES dimensions, then MEMO_AXES input traces. */
#define WALK_KEY(axis) (MEMO_AXES + (int)(axis))
#define SHAPE_KEYS (2 * MEMO_AXES)
/* How deep a query recurses before it defers (see above): a few kilobytes
 * of stack per level at most. */
#define SHAPE_STACK_DEPTH 64

/* What every memo entry of this file starts with (8 bytes). */
typedef struct memo_head {
    unsigned state : 2;  /* memo_state */
    unsigned cut : 1;    /* cut short: valid only in round `epoch`, from `depth` on */
    unsigned queued : 1; /* deferred, and waiting for the values it deferred */
    unsigned known : 1;  /* the dimension is known (dim_memo, walk_memo) */
    unsigned walk : 1;   /* a walk_memo (they share the shape slot's keys) */
    unsigned depth : 8;  /* <= SHAPE_STACK_DEPTH */
    uint32_t epoch;
} memo_head;

typedef struct rank_memo {
    memo_head h;
    int64_t rank;
} rank_memo;

/* One axis of one value: 24 bytes, allocated only for the axes asked for. */
typedef struct dim_memo {
    memo_head h;
    int64_t value; /* when known, as a dim_info's */
    char *param;   /* owned */
} dim_memo;

/* trace_axis_to_input's walk from one axis of one value: the input it found
 * last (its entry in the main graph's index + 1; 0: none) and its axis, and
 * the dimension the walk knew on the way (its `out`; never a name). */
typedef struct walk_memo {
    memo_head h;
    uint32_t input;
    int64_t input_axis;
    int64_t value;
} walk_memo;

static void dim_memo_forget(dim_memo *m)
{
    free(m->param);
    m->param = NULL;
    m->h.known = false;
    m->value = 0;
}

/* The shape slot's entries: a dimension owns its name, a walk nothing. */
static void shape_memo_clear(void *entry)
{
    if (!((memo_head *)entry)->walk)
        dim_memo_forget(entry);
}

/* The memo of one axis (< MEMO_AXES) of a value; NULL when out of memory. */
static dim_memo *dim_memo_of(const scope *o, const value_entry *e, int64_t axis)
{
    return memo_entry_keyed(o, e, MEMO_SLOT_SHAPE, (int)axis, SHAPE_KEYS, sizeof(dim_memo),
                            shape_memo_clear);
}

static walk_memo *walk_memo_of(const scope *o, const value_entry *e, int64_t axis)
{
    walk_memo *m = memo_entry_keyed(o, e, MEMO_SLOT_SHAPE, WALK_KEY(axis), SHAPE_KEYS,
                                    sizeof(walk_memo), shape_memo_clear);
    if (m)
        m->h.walk = true;
    return m;
}

static rank_memo *rank_memo_of(const scope *o, const value_entry *e)
{
    return memo_entry(o, e, MEMO_SLOT_RANK, sizeof(rank_memo), NULL);
}

/* An answer is reused when it is final, or was cut short in this round at
 * `depth` or nearer the start (from here it would be cut short too). */
static bool head_reusable(const memo_head *h, uint32_t epoch, int depth)
{
    return h->state == MEMO_DONE && (!h->cut || (h->epoch == epoch && depth >= (int)h->depth));
}

/* The query kinds a value can be deferred with. */
typedef enum query_kind { Q_RANK, Q_DIM, Q_WALK } query_kind;

typedef struct deferred {
    const scope *o;
    const value_entry *e;
    query_kind kind;
    int axis;
} deferred;

/* What one question and the rounds of its driver share. */
typedef struct deferred_stack {
    deferred *v;
    size_t n, cap;
    bool oom; /* a deferral could not be kept: answer as things stand */
} deferred_stack;

/* A round of answering: numbered across threads (rounds of `-j` workers
 * never share a number; a relaxed atomic is one instruction, where a
 * thread-local counter in a shared library is a call), 0 never. */
static _Atomic uint32_t shape_epoch;

static uint32_t next_epoch(void)
{
    uint32_t e = atomic_fetch_add_explicit(&shape_epoch, 1, memory_order_relaxed) + 1;
    return e ? e : next_epoch();
}

/* Ops whose output has input 0's shape. */
const char *const same_shape_ops[] = {
    "Identity", "Cast", "Dropout", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",
    "HardSigmoid", "Tanh", "Softplus", "Softsign", "Abs", "Neg", "Exp", "Log", "Sqrt",
    "Reciprocal", "Clip", "Erf", "Gelu", "HardSwish", "Softmax", "LogSoftmax", "Not", "Floor",
    "Ceil", "Round", "Sign", "Sin", "Cos", "LayerNormalization", "BatchNormalization",
    "InstanceNormalization", "QuantizeLinear", "DequantizeLinear", NULL
};
/* Broadcasting ops (IN_BROADCAST below): Add, Sub, Mul, Div, Pow, Max, Min,
 * Sum, Mean, Where. */
/* Ops on [N, C, spatial...] whose output keeps input 0's rank and batch N
 * (axis 0); the other axes change. */
const char *const batch_keeping_ops[] = { "Conv", "ConvTranspose", "ConvInteger",
                                                 "MaxPool", "AveragePool", "LpPool",
                                                 "GlobalAveragePool", "GlobalMaxPool",
                                                 "GlobalLpPool", NULL };
/* Ops that reduce the axes in their "axes" attribute or input 1 (all of them
 * when absent), keeping them as 1 unless keepdims is 0 (IN_REDUCE below):
 * ReduceMax, ReduceMin, ReduceMean, ReduceSum, ReduceProd, ReduceL1,
 * ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare. */

/* Which of the lists above an op is in, as bits (the two exported ones are
 * still read elsewhere): one binary search instead
 * of a walk along each list (asked of every value whose rank or dimension
 * is computed). */
enum { IN_SAME_SHAPE = 1, IN_BROADCAST = 2, IN_BATCH_KEEPING = 4, IN_REDUCE = 8 };

typedef struct listed_op {
    const char *op;
    unsigned lists;
} listed_op;

/* Every op of the four lists, sorted by strcmp(); an op added to
 * same_shape_ops or batch_keeping_ops is added here too. */
static const listed_op listed_ops[] = {
    { "Abs", IN_SAME_SHAPE }, { "Add", IN_BROADCAST }, { "AveragePool", IN_BATCH_KEEPING },
    { "BatchNormalization", IN_SAME_SHAPE }, { "Cast", IN_SAME_SHAPE }, { "Ceil", IN_SAME_SHAPE },
    { "Clip", IN_SAME_SHAPE }, { "Conv", IN_BATCH_KEEPING }, { "ConvInteger", IN_BATCH_KEEPING },
    { "ConvTranspose", IN_BATCH_KEEPING }, { "Cos", IN_SAME_SHAPE },
    { "DequantizeLinear", IN_SAME_SHAPE }, { "Div", IN_BROADCAST }, { "Dropout", IN_SAME_SHAPE },
    { "Elu", IN_SAME_SHAPE }, { "Erf", IN_SAME_SHAPE }, { "Exp", IN_SAME_SHAPE },
    { "Floor", IN_SAME_SHAPE }, { "Gelu", IN_SAME_SHAPE },
    { "GlobalAveragePool", IN_BATCH_KEEPING }, { "GlobalLpPool", IN_BATCH_KEEPING },
    { "GlobalMaxPool", IN_BATCH_KEEPING }, { "HardSigmoid", IN_SAME_SHAPE },
    { "HardSwish", IN_SAME_SHAPE }, { "Identity", IN_SAME_SHAPE },
    { "InstanceNormalization", IN_SAME_SHAPE }, { "LayerNormalization", IN_SAME_SHAPE },
    { "LeakyRelu", IN_SAME_SHAPE }, { "Log", IN_SAME_SHAPE }, { "LogSoftmax", IN_SAME_SHAPE },
    { "LpPool", IN_BATCH_KEEPING }, { "Max", IN_BROADCAST }, { "MaxPool", IN_BATCH_KEEPING },
    { "Mean", IN_BROADCAST }, { "Min", IN_BROADCAST }, { "Mul", IN_BROADCAST },
    { "Neg", IN_SAME_SHAPE }, { "Not", IN_SAME_SHAPE }, { "PRelu", IN_SAME_SHAPE },
    { "Pow", IN_BROADCAST }, { "QuantizeLinear", IN_SAME_SHAPE }, { "Reciprocal", IN_SAME_SHAPE },
    { "ReduceLogSum", IN_REDUCE }, { "ReduceLogSumExp", IN_REDUCE }, { "ReduceMax", IN_REDUCE },
    { "ReduceMean", IN_REDUCE }, { "ReduceMin", IN_REDUCE }, { "ReduceProd", IN_REDUCE },
    { "ReduceSum", IN_REDUCE }, { "ReduceSumSquare", IN_REDUCE }, { "Relu", IN_SAME_SHAPE },
    { "Round", IN_SAME_SHAPE }, { "Selu", IN_SAME_SHAPE }, { "Sigmoid", IN_SAME_SHAPE },
    { "Sign", IN_SAME_SHAPE }, { "Sin", IN_SAME_SHAPE }, { "Softmax", IN_SAME_SHAPE },
    { "Softplus", IN_SAME_SHAPE }, { "Softsign", IN_SAME_SHAPE }, { "Sqrt", IN_SAME_SHAPE },
    { "Sub", IN_BROADCAST }, { "Sum", IN_BROADCAST }, { "Tanh", IN_SAME_SHAPE },
    { "Where", IN_BROADCAST },
};

static unsigned op_lists(const Onnx__NodeProto *p)
{
    const char *t = str_or_empty(p->op_type);
    size_t lo = 0, hi = sizeof listed_ops / sizeof listed_ops[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t, listed_ops[mid].op);
        if (!c)
            return listed_ops[mid].lists;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}

typedef struct shape_query {
    bool cut;         /* an answer was cut short: a value was deferred */
    bool to_input;    /* trace_axis_to_input: see walk_at */
    uint32_t epoch;   /* this round */
    deferred_stack *later;
    /* trace_axis_to_input: the main-graph input the walk found last, and
     * which of its axes the traced dimension is */
    const char *input;
    const value_entry *input_entry; /* its entry in the main graph's index */
    int64_t input_axis;
    /* input 0 of the producer through_producer() last followed: the name
     * (the node's own string, compared by address), the scope it is read
     * in, and what scope_lookup() finds for it, found through the index's
     * node_values: the through_* steps ask for it several times */
    const char *in0;
    const scope *in0_scope, *in0_owner;
    const value_entry *in0_entry;
} shape_query;

/* scope_lookup(), or the answer through_producer() found for input 0. */
static const value_entry *query_lookup(const shape_query *q, const scope *s, const char *value,
                                       const scope **o)
{
    if (value == q->in0 && s == q->in0_scope) {
        *o = q->in0_owner;
        return q->in0_entry;
    }
    return scope_lookup(s, value, o);
}

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

static int64_t rank_at(shape_query *q, const scope *o, const value_entry *e, int depth);

/* Input k of node `node` of o's graph as scope_lookup() finds it (*owner
 * its scope), through the index's node_values: no name hashed. NULL for an
 * empty name or one no scope defines. */
static const value_entry *input_entry(const scope *o, int node, size_t k, const scope **owner)
{
    int id = graph_index_node_inputs(&o->index, (size_t)node)[k];
    if (id < 0)
        return NULL;
    const value_entry *e = &o->index.values[id];
    if (e->producer >= 0 || e->graph_input >= 0 || e->initializer >= 0) {
        *owner = o;
        return e;
    }
    return o->parent ? scope_lookup(o->parent, e->name, owner) : NULL; /* an outer value */
}

/* The rank of input k of node `node` of o's graph. */
static int64_t input_rank(shape_query *q, const scope *o, int node, size_t k, int depth)
{
    const scope *io = NULL;
    const value_entry *ie = input_entry(o, node, k, &io);
    return ie ? rank_at(q, io, ie, depth) : -1;
}

/* The largest rank of the inputs of node `node` (p) of o's graph, or -1
 * when one is not known. */
static int64_t rank_of_broadcast(shape_query *q, const scope *o, int node,
                                 const Onnx__NodeProto *p, int depth)
{
    int64_t rank = -1;
    for (size_t i = 0; i < p->n_input; i++) {
        int64_t r = input_rank(q, o, node, i, depth + 1);
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
    /* a dimension, even inside an input trace */
    shape_query dims = { .epoch = q->epoch, .later = q->later };
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
    unsigned in = op_lists(p);
    if ((in & IN_SAME_SHAPE) || node_op_is(p, "Transpose") || node_op_is(p, "Concat") ||
        node_op_is(p, "Slice") || (in & IN_BATCH_KEEPING) || node_op_is(p, "Pad") ||
        node_op_is(p, "Tile") || node_op_is(p, "Resize"))
        return input_rank(q, o, e->producer, 0, depth + 1);
    if (node_op_is(p, "MatMul") || (in & IN_BROADCAST))
        return rank_of_broadcast(q, o, e->producer, p, depth);
    if (node_op_is(p, "Gemm"))
        return 2;
    int64_t *vals = NULL, rank = -1;
    size_t n = 0;
    if ((in & IN_REDUCE) && node_attr_int(p, "keepdims", 1) != 0) {
        rank = input_rank(q, o, e->producer, 0, depth + 1);
    } else if ((in & IN_REDUCE) && node_ints(o, p, "axes", 1, &vals, &n)) {
        int64_t r = input_rank(q, o, e->producer, 0, depth + 1);
        rank = r >= (int64_t)n ? r - (int64_t)n : -1;
    } else if ((node_op_is(p, "Squeeze") || node_op_is(p, "Unsqueeze")) &&
               node_ints(o, p, "axes", 1, &vals, &n)) {
        int64_t r = input_rank(q, o, e->producer, 0, depth + 1);
        if (r >= 0)
            rank = node_op_is(p, "Squeeze") ? r - (int64_t)n : r + (int64_t)n;
    } else if (node_op_is(p, "Shape") || node_op_is(p, "Range")) {
        rank = 1;
    } else if (node_op_is(p, "Gather") && p->n_input > 1) {
        int64_t data = input_rank(q, o, e->producer, 0, depth + 1), idx = input_rank(q, o, e->producer, 1, depth + 1);
        rank = data >= 1 && idx >= 0 ? data + idx - 1 : -1;
    } else if ((node_op_is(p, "Reshape") || node_op_is(p, "Expand")) && p->n_input > 1) {
        rank = shape_length(q, o, node_input(p, 1), depth);
        if (node_op_is(p, "Expand")) { /* broadcast: the larger rank */
            int64_t r = input_rank(q, o, e->producer, 0, depth + 1);
            rank = rank < 0 || r < 0 ? -1 : r > rank ? r : rank;
        }
    } else if (node_op_is(p, "ConstantOfShape")) {
        rank = shape_length(q, o, in0, depth);
    }
    free(vals);
    return rank;
}

/* The rank of `value`, or -1 when unknown; memoized. */
static int64_t rank_of(shape_query *q, const scope *s, const char *value, int depth)
{
    const scope *o;
    const value_entry *e = query_lookup(q, s, value, &o);
    return e ? rank_at(q, o, e, depth) : -1;
}

/* A value reached deeper than SHAPE_STACK_DEPTH whose answer is not known
 * for good (memo head h, NULL when out of memory): deferred to the driver,
 * and the query cut short; or, when it is queued already and waiting for
 * what it deferred, a cycle: not known. */
static void defer(shape_query *q, memo_head *h, query_kind kind, const scope *o,
                  const value_entry *e, int64_t axis)
{
    if (h && h->queued)
        return;
    q->cut = true;
    deferred_stack *st = q->later;
    if (!h || st->oom) {
        st->oom = true;
        return;
    }
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 16;
        deferred *v = realloc(st->v, cap * sizeof *v);
        if (!v) {
            oom_note();
            st->oom = true;
            return;
        }
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = (deferred){ o, e, kind, (int)axis };
}

/* An answer computed at `depth` goes into its memo: final unless cut short
 * (the `queued` mark stays: the driver owns it). */
static void memo_settle(memo_head *h, const shape_query *q, int depth, bool done)
{
    h->state = done ? MEMO_DONE : MEMO_NONE;
    h->cut = q->cut;
    h->depth = (unsigned)depth;
    h->epoch = q->epoch;
}

/* rank_of() of the value found (entry e of scope o). */
static int64_t rank_at(shape_query *q, const scope *o, const value_entry *e, int depth)
{
    rank_memo *m = rank_memo_of(o, e);
    if (m && m->h.state == MEMO_BUSY)
        return -1; /* a cycle */
    if (m && head_reusable(&m->h, q->epoch, depth)) {
        q->cut |= m->h.cut;
        return m->rank;
    }
    if (depth > SHAPE_STACK_DEPTH) {
        defer(q, m ? &m->h : NULL, Q_RANK, o, e, 0);
        return -1;
    }
    if (m)
        m->h.state = MEMO_BUSY;
    bool outer_cut = q->cut;
    q->cut = false;
    int64_t rank = compute_rank(q, o, e, depth);
    if (m) {
        memo_settle(&m->h, q, depth, true);
        m->rank = rank;
    }
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
static bool through_broadcast(shape_query *q, const scope *s, int node, const Onnx__NodeProto *p,
                              int64_t axis, int depth, dim_info *out)
{
    int64_t out_rank = rank_of_broadcast(q, s, node, p, depth);
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
    q->in0 = in0;
    q->in0_scope = o;
    q->in0_owner = NULL;
    q->in0_entry = input_entry(o, e->producer, 0, &q->in0_owner);
    if (node_op_is(p, "Slice") && (q->to_input || !slice_cuts(o, p, axis)))
        return infer_dim_at(q, o, in0, axis, depth + 1, out); /* the same axis (shorter) */
    if (recurrent_op_of(p))
        return through_recurrent(q, o, p, slot, axis, depth, out);
    unsigned in = op_lists(p);
    if ((in & IN_SAME_SHAPE))
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    if ((in & IN_BATCH_KEEPING))
        return axis == 0 ? infer_dim_at(q, o, in0, axis, depth + 1, out)
                         : through_window(q, o, p, axis, depth, out);
    if (node_op_is(p, "Pad"))
        return through_pad(q, o, p, axis, depth, out);
    if ((in & IN_REDUCE))
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
    if ((in & IN_BROADCAST))
        return through_broadcast(q, o, e->producer, p, axis, depth, out);
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
    *to = (dim_info){ from->h.known, from->value, NULL };
    if (!from->param || (to->param = strdup(from->param)) != NULL)
        return true;
    oom_note();
    return false;
}

static bool dim_to_memo(dim_memo *to, const dim_info *from)
{
    dim_memo_forget(to);
    to->h.known = from->known;
    to->value = from->value;
    if (!from->param || (to->param = strdup(from->param)) != NULL)
        return true;
    oom_note();
    return false;
}

/* The main graph's scope, around scope o. */
static const scope *root_of(const scope *o)
{
    while (o->parent)
        o = o->parent;
    return o;
}

/* trace_axis_to_input's step: a main-graph input ends the walk, anything
 * else is followed through its producer. */
static bool walk_step(shape_query *q, const char *value, const scope *o,
                      const value_entry *e, int64_t axis, int depth, dim_info *out)
{
    if (o->parent == NULL && e->graph_input >= 0 && e->initializer < 0) {
        q->input = e->name;
        q->input_entry = e;
        q->input_axis = axis;
        return true;
    }
    return through_producer(q, o, e, value, axis, depth, out);
}

/* A memoized walk replayed: the input it found (if any) is the last found
 * so far, and *out holds what it knew. */
static void walk_from_memo(shape_query *q, const scope *o, const walk_memo *m, dim_info *out)
{
    const scope *root = m->input ? root_of(o) : NULL;
    if (root && m->input <= root->index.n_values) {
        q->input_entry = &root->index.values[m->input - 1];
        q->input = q->input_entry->name;
        q->input_axis = m->input_axis;
    }
    if (m->h.known) {
        out->known = true;
        out->value = m->value;
    }
}

/* Keeps a walk's answer: the input it found last (q->input_entry, when
 * q->input), *out what it knew. False when it cannot be kept (a name on the
 * way: never so far). */
static bool walk_to_memo(walk_memo *m, const scope *o, const shape_query *q, const dim_info *out)
{
    if (out->param)
        return false;
    m->h.known = out->known;
    m->value = out->value;
    m->input = q->input ? (uint32_t)(q->input_entry - root_of(o)->index.values) + 1 : 0;
    m->input_axis = q->input_axis;
    return true;
}

/* trace_axis_to_input's walk from one axis of a value, through the ops
 * infer_dim follows (past declared shapes) to a main-graph input. Each walk
 * is memoized (its answer depends on the value and axis alone): the input
 * it found last, as the walks of a broadcast's operands each may find one
 * and the last one stands. */
static bool walk_at(shape_query *q, const char *value, const scope *o, const value_entry *e,
                    int64_t axis, int depth, dim_info *out)
{
    walk_memo *m = axis < MEMO_AXES ? walk_memo_of(o, e, axis) : NULL;
    if (m && m->h.state == MEMO_BUSY)
        return true; /* a cycle */
    if (m && head_reusable(&m->h, q->epoch, depth)) {
        q->cut |= m->h.cut;
        walk_from_memo(q, o, m, out);
        return true;
    }
    if (depth > SHAPE_STACK_DEPTH) {
        if (axis < MEMO_AXES)
            defer(q, m ? &m->h : NULL, Q_WALK, o, e, axis);
        return true;
    }
    const char *outer_input = q->input;
    const value_entry *outer_entry = q->input_entry;
    int64_t outer_axis = q->input_axis;
    bool outer_cut = q->cut;
    q->input = NULL;
    q->cut = false;
    if (m)
        m->h.state = MEMO_BUSY;
    bool ok = walk_step(q, value, o, e, axis, depth, out);
    if (m)
        memo_settle(&m->h, q, depth, ok && walk_to_memo(m, o, q, out));
    if (!q->input) {
        q->input = outer_input;
        q->input_entry = outer_entry;
        q->input_axis = outer_axis;
    }
    q->cut |= outer_cut;
    return ok;
}

/* Dimension `axis` of the value found (entry e of scope o) into *out,
 * which holds nothing known yet; memoized for the first MEMO_AXES axes.
 * False when out of memory. */
static bool dim_at(shape_query *q, const char *value, const scope *o, const value_entry *e,
                   int64_t axis, int depth, dim_info *out)
{
    if (q->to_input)
        return walk_at(q, value, o, e, axis, depth, out);
    dim_memo *m = axis < MEMO_AXES ? dim_memo_of(o, e, axis) : NULL;
    if (m && m->h.state == MEMO_BUSY)
        return true; /* a cycle */
    if (m && head_reusable(&m->h, q->epoch, depth)) {
        q->cut |= m->h.cut;
        return dim_from_memo(out, m);
    }
    if (depth > SHAPE_STACK_DEPTH) {
        if (axis < MEMO_AXES)
            defer(q, m ? &m->h : NULL, Q_DIM, o, e, axis);
        return true;
    }
    if (!m)
        return compute_dim(q, value, o, e, axis, depth, out);
    dim_memo_forget(m);
    m->h.state = MEMO_BUSY;
    bool outer_cut = q->cut;
    q->cut = false;
    bool ok = compute_dim(q, value, o, e, axis, depth, out);
    memo_settle(&m->h, q, depth, ok && dim_to_memo(m, out));
    q->cut |= outer_cut;
    return ok && m->h.state == MEMO_DONE;
}

static bool infer_dim_at(shape_query *q, const scope *s, const char *value, int64_t axis,
                         int depth, dim_info *out)
{
    const scope *o;
    const value_entry *e = query_lookup(q, s, value, &o);
    return !e || axis < 0 || dim_at(q, value, o, e, axis, depth, out);
}

/* ---- the driver: a question, and the values it deferred ---- */

/* The memo head of a deferred value (made when it was deferred). */
static memo_head *deferred_head(const deferred *d)
{
    if (d->kind == Q_RANK)
        return memo_entry_find(d->o, d->e, MEMO_SLOT_RANK, 0);
    return memo_entry_find(d->o, d->e, MEMO_SLOT_SHAPE,
                           d->kind == Q_WALK ? WALK_KEY(d->axis) : d->axis);
}

/* Answers a deferred value from depth 0. False when out of memory. */
static bool answer_deferred(shape_query *q, const deferred *d)
{
    if (d->kind == Q_RANK) {
        rank_at(q, d->o, d->e, 0);
        return true;
    }
    dim_info unused = { 0 };
    q->to_input = d->kind == Q_WALK;
    bool ok = dim_at(q, d->e->name, d->o, d->e, d->axis, 0, &unused);
    dim_info_clear(&unused);
    return ok;
}

/* The question itself, asked again each round with a fresh query. */
typedef bool (*shape_question)(shape_query *q, void *arg);

/* Asks `ask` until it is answered without a cut: each time it defers
 * values, they are answered first, the last deferred first (each may defer
 * values of its own). False when out of memory. */
static bool shape_drive(bool to_input, shape_question ask, void *arg)
{
    deferred_stack later = { 0 };
    bool ok = true;
    for (;;) {
        shape_query q = { .to_input = to_input, .epoch = next_epoch(), .later = &later };
        if (!later.n) {
            ok = ask(&q, arg);
            if (!ok || !q.cut || !later.n || later.oom)
                break;
            continue;
        }
        deferred d = later.v[later.n - 1];
        memo_head *h = deferred_head(&d);
        if (!h || (h->state == MEMO_DONE && !h->cut)) { /* answered since */
            later.n--;
            if (h)
                h->queued = false;
            continue;
        }
        size_t before = later.n;
        if (!(ok = answer_deferred(&q, &d)) || later.oom)
            break;
        h->queued = later.n > before; /* it waits for what it deferred */
        if (!h->queued)
            later.n = before - 1;
    }
    for (size_t i = 0; i < later.n; i++) { /* out of memory: no value stays queued */
        memo_head *h = deferred_head(&later.v[i]);
        if (h)
            h->queued = false;
    }
    free(later.v);
    return ok;
}

typedef struct dim_question {
    const scope *s;
    const char *value;
    int64_t axis;
    dim_info *out;
} dim_question;

static bool ask_dim(shape_query *q, void *arg)
{
    dim_question *d = arg;
    dim_info_clear(d->out);
    return infer_dim_at(q, d->s, d->value, d->axis, 0, d->out);
}

typedef struct trace_question {
    dim_question dim;
    const char *input;
    int64_t input_axis;
} trace_question;

static bool ask_trace(shape_query *q, void *arg)
{
    trace_question *t = arg;
    bool ok = ask_dim(q, &t->dim);
    t->input = q->input;
    t->input_axis = q->input_axis;
    return ok;
}

bool trace_axis_to_input(const scope *s, const char *value, int64_t axis, const char **input,
                         int64_t *input_axis)
{
    dim_info unused = { 0 };
    trace_question t = { { s, value, axis, &unused }, NULL, -1 };
    bool ok = shape_drive(true, ask_trace, &t);
    dim_info_clear(&unused);
    *input = ok ? t.input : NULL;
    *input_axis = ok && t.input ? t.input_axis : -1;
    return ok;
}

bool infer_dim(const scope *s, const char *value, int64_t axis, dim_info *out)
{
    dim_question d = { s, value, axis, out };
    return shape_drive(false, ask_dim, &d);
}

typedef struct rank_question {
    const scope *o;
    const value_entry *e;
    int64_t rank;
} rank_question;

static bool ask_rank(shape_query *q, void *arg)
{
    rank_question *r = arg;
    r->rank = rank_at(q, r->o, r->e, 0);
    return true;
}

int64_t infer_rank_of(const scope *o, const value_entry *e)
{
    /* asked of every input of every node by the stream analysis: a final
     * answer is read without a driver */
    const rank_memo *m = memo_entry_find(o, e, MEMO_SLOT_RANK, 0);
    if (m && m->h.state == MEMO_DONE && !m->h.cut)
        return m->rank;
    rank_question r = { o, e, -1 };
    shape_drive(false, ask_rank, &r);
    return r.rank;
}

int64_t infer_rank(const scope *s, const char *value)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    return e ? infer_rank_of(o, e) : -1;
}
