/* The context caches a model already carries (see own_caches.h).
 *
 * Two walks over the main graph, each value visited a bounded number of
 * times:
 *   1. forward from every candidate input along the data input (input 0) of
 *      view ops and of ScatterND: every value found is "from" that input
 *      (each value has one data input, so it is from one input at most);
 *   2. back from every candidate output through data-movement ops, memoized
 *      per value: it must be made of tails of cache Concats and of values
 *      from one input, with at least one tail. */
#include "state/own_caches.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "state/contract.h"
#include "tensor_util.h"

/* Ops whose output is (part of) their input 0, unchanged in value. */
static const char *const view_ops[] = { "Slice",     "Gather",   "Squeeze", "Unsqueeze",
                                        "Reshape",   "Identity", "Cast",    "Split",
                                        "Transpose", NULL };
/* Ops that move data without computing on it (the final-state walk's). */
static const char *const data_movement_ops[] = { "Concat", "Squeeze", "Unsqueeze", "Reshape",
                                                 "Transpose", "Identity", "Cast", "ScatterND",
                                                 "Expand", NULL };

/* What the backward walk found for one value. */
typedef struct made_of {
    unsigned char state; /* memo_state */
    bool ok;             /* only tails and values from `from` */
    bool tail;           /* at least one tail among them */
    bool cut;            /* not ok only because of the depth bound */
    int depth;
    int from;            /* the input (position in the main graph's inputs) */
} made_of;

typedef struct cache_walk {
    rewrite_ctx *ctx;
    const scope *s;          /* the main graph */
    const graph_index *gi;
    int *from;               /* per value: the candidate input it is from, or -1 */
    made_of *memo;           /* per value */
    bool oom;
} cache_walk;

static size_t value_at(const cache_walk *w, const value_entry *e)
{
    return (size_t)(e - w->gi->values);
}

static int from_of(const cache_walk *w, const char *value)
{
    const value_entry *e = graph_index_find(w->gi, value);
    return e ? w->from[value_at(w, e)] : -1;
}

static const Onnx__NodeProto *producer_of(const cache_walk *w, const char *value)
{
    const value_entry *e = graph_index_find(w->gi, value);
    return e && e->producer >= 0 ? w->s->graph->node[e->producer] : NULL;
}

/* ---- 1. what comes from each candidate input ---------------------------- */

/* Marks everything reached from `input` (number k) through the data input of
 * view ops and ScatterND. `stack` has room for every value. */
static void mark_from_input(cache_walk *w, const value_entry *input, int k, size_t *stack)
{
    size_t n = 0;
    w->from[value_at(w, input)] = k;
    stack[n++] = value_at(w, input);
    while (n) {
        const value_entry *e = &w->gi->values[stack[--n]];
        for (size_t c = 0; c < e->n_consumers; c++) {
            const Onnx__NodeProto *node = w->s->graph->node[e->consumers[c]];
            bool view = node_op_in(node, view_ops) || node_op_is(node, "ScatterND");
            if (!view || !node_default_domain(node) || node->n_input == 0 ||
                strcmp(str_or_empty(node->input[0]), e->name))
                continue;
            const int *outs = graph_index_node_outputs(w->gi, (size_t)e->consumers[c]);
            for (size_t o = 0; o < node->n_output; o++)
                if (outs[o] >= 0 && w->from[outs[o]] < 0) {
                    w->from[outs[o]] = k;
                    stack[n++] = (size_t)outs[o];
                }
        }
    }
}

/* ---- tails of cache Concats ---------------------------------------------- */

/* One int64 from attribute `attr` or constant input `input` of `p`: 1 when
 * read, 0 when absent or not a single constant, -1 out of memory. */
static int read_one_int(cache_walk *w, const Onnx__NodeProto *p, const char *attr, size_t input,
                        int64_t *v)
{
    const Onnx__AttributeProto *a = *attr ? node_attr(p, attr) : NULL;
    bool present = (a && a->n_ints) ||
                   (input < p->n_input && constant_tensor(w->s, str_or_empty(p->input[input])));
    int64_t *vals = NULL;
    size_t n = 0;
    if (!present)
        return 0;
    if (!node_ints(w->s, p, attr, input, &vals, &n)) {
        w->oom = true;
        return -1;
    }
    int got = n == 1;
    if (got)
        *v = vals[0];
    free(vals);
    return got;
}

/* The length along `axis` of the Concat inputs [first, last), or -1 when one
 * is not a known number. */
static int64_t concat_length(cache_walk *w, const Onnx__NodeProto *concat, size_t first,
                             size_t last, int64_t axis)
{
    int64_t total = 0;
    for (size_t i = first; i < last; i++) {
        dim_info d = { 0 };
        if (!infer_dim(w->s, str_or_empty(concat->input[i]), axis, &d)) {
            w->oom = true;
            return -1;
        }
        bool number = d.known && !d.param && d.value >= 0;
        int64_t v = d.value;
        dim_info_clear(&d);
        if (!number || total > INT64_MAX - v)
            return -1;
        total += v;
    }
    return total;
}

/* A cache Concat: inputs from one candidate input first (the cached frames,
 * `front` of them), then at least one input neither from it nor constant
 * (this call's frames). Its axis in *axis, its rank in *rank; returns the
 * candidate input, or -1. */
static int cache_concat(cache_walk *w, const Onnx__NodeProto *concat, size_t *front,
                        int64_t *axis, int64_t *rank)
{
    if (!concat || !node_op_is(concat, "Concat") || !node_default_domain(concat) ||
        concat->n_input < 2 || concat->n_output < 1)
        return -1;
    int k = from_of(w, str_or_empty(concat->input[0]));
    size_t f = 0;
    while (k >= 0 && f < concat->n_input && from_of(w, str_or_empty(concat->input[f])) == k)
        f++;
    if (k < 0 || f == concat->n_input)
        return -1;
    for (size_t i = f; i < concat->n_input; i++) {
        const char *in = str_or_empty(concat->input[i]);
        if (!*in || from_of(w, in) == k || constant_tensor(w->s, in))
            return -1;
    }
    *rank = infer_rank(w->s, str_or_empty(concat->output[0]));
    const Onnx__AttributeProto *a = node_attr(concat, "axis");
    if (*rank <= 0 || !a || !a->has_i || a->i < -*rank || a->i >= *rank)
        return -1;
    *axis = a->i < 0 ? a->i + *rank : a->i;
    *front = f;
    return k;
}

/* Slice `p` of cache Concat `concat` keeps exactly its newest `front_len`
 * frames along `axis`: one axis sliced, step 1, to the end, from -front_len
 * or from the length of this call's frames. */
static bool slice_is_tail(cache_walk *w, const Onnx__NodeProto *p, const Onnx__NodeProto *concat,
                          size_t front, int64_t axis, int64_t rank)
{
    int64_t start, end, sliced = 0, step = 1;
    if (read_one_int(w, p, "starts", 1, &start) != 1 || read_one_int(w, p, "ends", 2, &end) != 1)
        return false;
    bool has_axes = node_attr(p, "axes") || (p->n_input > 3 && *str_or_empty(p->input[3]));
    if (has_axes && read_one_int(w, p, "axes", 3, &sliced) != 1)
        return false;
    if (p->n_input > 4 && *str_or_empty(p->input[4]) && read_one_int(w, p, "", 4, &step) != 1)
        return false;
    if (sliced < 0)
        sliced += rank;
    if (sliced != axis || step != 1)
        return false;
    int64_t front_len = concat_length(w, concat, 0, front, axis);
    int64_t new_len = concat_length(w, concat, front, concat->n_input, axis);
    bool to_end = end >= INT32_MAX ||
                  (front_len >= 0 && new_len >= 0 && end >= front_len + new_len);
    if (!to_end || front_len <= 0)
        return false;
    return start < 0 ? start == -front_len : start > 0 && start == new_len;
}

/* Gather `p` of cache Concat `concat` along `axis` reads its newest
 * `front_len` frames, in order: indices -front_len .. -1 (a scalar -1 for
 * one frame). */
static bool gather_is_tail(cache_walk *w, const Onnx__NodeProto *p, const Onnx__NodeProto *concat,
                           size_t front, int64_t axis, int64_t rank)
{
    int64_t along = node_attr_int(p, "axis", 0);
    if (along < 0)
        along += rank;
    const Onnx__TensorProto *t =
        p->n_input > 1 ? scope_tensor_data(w->s, constant_tensor(w->s, str_or_empty(p->input[1])))
                       : NULL;
    int64_t *idx = NULL;
    size_t n = 0;
    if (along != axis || !t || t->n_dims > 1)
        return false;
    if (!tensor_read_int64s(t, &idx, &n)) {
        w->oom = true;
        return false;
    }
    int64_t front_len = concat_length(w, concat, 0, front, axis);
    bool ok = n > 0 && front_len == (int64_t)n;
    for (size_t i = 0; ok && i < n; i++)
        ok = idx[i] == (int64_t)i - (int64_t)n;
    free(idx);
    return ok;
}

/* The candidate input whose cache `p` is a tail of, or -1. */
static int tail_of(cache_walk *w, const Onnx__NodeProto *p)
{
    bool slice = node_op_is(p, "Slice"), gather = node_op_is(p, "Gather");
    if ((!slice && !gather) || !node_default_domain(p) || p->n_input < 2)
        return -1;
    const Onnx__NodeProto *concat = producer_of(w, str_or_empty(p->input[0]));
    size_t front;
    int64_t axis, rank;
    int k = cache_concat(w, concat, &front, &axis, &rank);
    if (k < 0)
        return -1;
    bool tail = slice ? slice_is_tail(w, p, concat, front, axis, rank)
                      : gather_is_tail(w, p, concat, front, axis, rank);
    return tail ? k : -1;
}

/* ---- 2. what an output is made of ---------------------------------------- */

static const made_of *made_of_value(cache_walk *w, const char *value, int depth);

/* Combines the answers for the data inputs of data-movement node `p` into m. */
static void made_of_inputs(cache_walk *w, made_of *m, const Onnx__NodeProto *p, int depth)
{
    bool scatter = node_op_is(p, "ScatterND"), concat = node_op_is(p, "Concat");
    m->ok = p->n_input > 0;
    for (size_t i = 0; m->ok && i < p->n_input; i++) {
        if (i > 0 && !concat && !(scatter && i == 2))
            continue; /* shapes, indices, permutations: not data */
        const made_of *in = made_of_value(w, str_or_empty(p->input[i]), depth + 1);
        m->cut |= in->cut;
        m->ok = in->ok && (i == 0 || in->from == m->from);
        m->from = i == 0 ? in->from : m->from;
        m->tail |= in->tail;
    }
}

/* What `value` is made of, memoized (analysis/memo.h's depth rule). */
static const made_of *made_of_value(cache_walk *w, const char *value, int depth)
{
    static const made_of unknown = { .state = MEMO_DONE };
    static const made_of cut_short = { .state = MEMO_DONE, .cut = true };
    const value_entry *e = graph_index_find(w->gi, value);
    if (!e)
        return &unknown;
    if (depth >= MAX_TRACE_DEPTH)
        return &cut_short;
    made_of *m = &w->memo[value_at(w, e)];
    if (m->state == MEMO_BUSY)
        return &unknown; /* a cycle */
    if (memo_reusable(m->state, m->cut, m->depth, depth))
        return m;
    *m = (made_of){ .state = MEMO_BUSY, .depth = depth, .from = -1 };
    const Onnx__NodeProto *p = e->producer >= 0 ? w->s->graph->node[e->producer] : NULL;
    int k = p ? tail_of(w, p) : -1;
    if (e->graph_input >= 0 && w->from[value_at(w, e)] >= 0) {
        m->ok = true; /* the input itself */
        m->from = w->from[value_at(w, e)];
    } else if (k >= 0) {
        m->ok = m->tail = true;
        m->from = k;
    } else if (p && node_default_domain(p) && node_op_in(p, data_movement_ops)) {
        made_of_inputs(w, m, p, depth);
    } else if (w->from[value_at(w, e)] >= 0) {
        m->ok = true; /* a view of the input: frames passed through untouched */
        m->from = w->from[value_at(w, e)];
    }
    m->state = MEMO_DONE;
    return m;
}

/* ---- pairing ---------------------------------------------------------------- */

/* I and O declare one element type and one fully known shape. */
static bool same_declared(const pair_end *in, const pair_end *out)
{
    if (!in->elem_type || in->elem_type != out->elem_type || !in->rank || in->rank != out->rank)
        return false;
    for (size_t d = 0; d < in->rank; d++) {
        const dim_info *a = &in->dims[d], *b = &out->dims[d];
        if (!a->known || !b->known || !a->param != !b->param)
            return false;
        if (a->param ? strcmp(a->param, b->param) != 0 : a->value != b->value)
            return false;
    }
    return true;
}

static rnnstate_status record(cache_walk *w, const value_entry *in, const char *output)
{
    rewrite_ctx *ctx = w->ctx;
    pair_end a, b;
    pair_end_declared(ctx, in->name, false, &a);
    pair_end_declared(ctx, output, true, &b);
    rnnstate_status st = RNNSTATE_OK;
    if (same_declared(&a, &b)) {
        bool has_default = in->initializer >= 0;
        bool required = ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_REQUIRED;
        if (has_default && required) {
            /* like a recurrent state input's: removed when the pass ends */
            if (!strmap_put(&ctx->dropped, in->name, 1))
                st = ctx_oom(ctx);
            ctx->changed = true;
        }
        report_add_pair(&ctx->report, in->name, output, a.dims, a.rank, a.elem_type, -1,
                        has_default && !required, false, RNNSTATE_PAIR_CONTEXT);
    }
    pair_end_clear(&a);
    pair_end_clear(&b);
    return st;
}

/* Names of the inputs and outputs the report's pairs already use. */
static bool paired_names(const rnnstate_report *r, strmap *inputs, strmap *outputs)
{
    for (size_t i = 0; i < r->n_pairs; i++)
        if (!strmap_put(inputs, r->pairs[i].input, 1) ||
            !strmap_put(outputs, r->pairs[i].output, 1))
            return false;
    return true;
}

/* Steps 1 and 2, then one pair per input that exactly one output is made
 * from. */
static rnnstate_status find_pairs(cache_walk *w, const strmap *paired_in,
                                  const strmap *paired_out)
{
    const Onnx__GraphProto *g = w->s->graph;
    size_t *stack = malloc((w->gi->n_values ? w->gi->n_values : 1) * sizeof *stack);
    int *claims = malloc((g->n_input ? g->n_input : 1) * sizeof *claims); /* output, -1, -2 */
    if (!stack || !claims) {
        free(stack);
        free(claims);
        return ctx_oom(w->ctx);
    }
    for (size_t i = 0; i < g->n_input; i++) {
        claims[i] = -1;
        const value_entry *e = graph_index_find(w->gi, str_or_empty(g->input[i]->name));
        if (e && e->graph_input == (int)i && strmap_get(paired_in, e->name) < 0)
            mark_from_input(w, e, (int)i, stack);
    }
    free(stack);
    for (size_t o = 0; !w->oom && o < g->n_output; o++) {
        const char *name = str_or_empty(g->output[o]->name);
        const value_entry *e = graph_index_find(w->gi, name);
        if (!e || e->graph_output != (int)o || e->graph_input >= 0 ||
            strmap_get(paired_out, name) >= 0)
            continue;
        const made_of *m = made_of_value(w, name, 0);
        if (m->ok && m->tail && m->from >= 0)
            claims[m->from] = claims[m->from] == -1 ? (int)o : -2; /* two outputs: neither */
    }
    rnnstate_status st = w->oom ? ctx_oom(w->ctx) : RNNSTATE_OK;
    for (size_t i = 0; st == RNNSTATE_OK && i < g->n_input; i++)
        if (claims[i] >= 0)
            st = record(w, graph_index_find(w->gi, str_or_empty(g->input[i]->name)),
                        str_or_empty(g->output[claims[i]]->name));
    free(claims);
    return st;
}

rnnstate_status report_own_caches(rewrite_ctx *ctx)
{
    const scope *s = ctx->scopes.scopes[0];
    cache_walk w = { .ctx = ctx, .s = s, .gi = &s->index };
    size_t n = s->index.n_values ? s->index.n_values : 1;
    strmap paired_in = STRMAP_INIT, paired_out = STRMAP_INIT;
    w.from = malloc(n * sizeof *w.from);
    w.memo = calloc(n, sizeof *w.memo);
    rnnstate_status st = RNNSTATE_OK;
    if (!w.from || !w.memo || !paired_names(ctx->report.report, &paired_in, &paired_out)) {
        st = ctx_oom(ctx);
    } else {
        for (size_t i = 0; i < n; i++)
            w.from[i] = -1;
        st = find_pairs(&w, &paired_in, &paired_out);
    }
    free(w.from);
    free(w.memo);
    strmap_free(&paired_in);
    strmap_free(&paired_out);
    return st;
}

bool own_caches_possible(const Onnx__GraphProto *main_graph)
{
    for (size_t i = 0; i < main_graph->n_node; i++)
        if (node_op_is(main_graph->node[i], "Concat") && node_default_domain(main_graph->node[i]))
            return true;
    return false;
}
