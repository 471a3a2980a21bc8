/* Half-stateful models (AECMOS): recurrent nodes start from row slices of one
 * graph input (h0 [4, B, H]: a bidirectional GRU from rows 0:2, another from
 * rows 2:4) but their final states reach no output. The model gets ONE new
 * output with the input's type and shape, paired with it: the nodes' final
 * states concatenated in row order, the rows no node reads passed through
 * unchanged. A node inside If branches has its final state threaded out, the
 * other branch passing through exactly the rows the node read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "state/contract.h"
#include "state/outputs.h"
#include "state/slices.h"
#include "model/tensor_util.h"
#include "util/arena.h"

/* More rows than any stack of recurrent layers has: such an input is not
 * assembled (the rows passed through are listed in a constant). */
#define MAX_STATE_ROWS 4096

typedef struct sliced {
    pending_slot at;
    int64_t start, end; /* rows [start, end) of the input, along axis 0 */
} sliced;

static bool op_is(const Onnx__NodeProto *n, const char *op)
{
    return !strcmp(str_or_empty(n->op_type), op);
}

/* ---- bounds computed from Shape arithmetic -------------------------------- */

#define MAX_FOLDED 8 /* elements of a folded bound list */
#define FOLD_BUDGET 256 /* values looked at to fold one bound */

typedef struct small_ints {
    int64_t v[MAX_FOLDED];
    size_t n;
} small_ints;

static bool fold_ints(const scope *s, const char *value, small_ints *out, int *budget);

static bool fold_tensor(const Onnx__TensorProto *t, small_ints *out)
{
    int64_t *v = NULL;
    size_t n = 0;
    bool ok = t && tensor_read_int64s(t, &v, &n) && n <= MAX_FOLDED;
    if (ok) {
        memcpy(out->v, v, n * sizeof *v);
        out->n = n;
    }
    free(v);
    return ok;
}

/* Shape of a main-graph input whose dims are all fixed. */
static bool fold_shape(const scope *s, const Onnx__NodeProto *p, small_ints *out)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, node_input(p, 0), &o);
    if (!e || e->graph_input < 0 || o->parent || node_attr(p, "start") || node_attr(p, "end"))
        return false;
    const Onnx__TensorShapeProto *sh = value_info_shape(o->graph->input[e->graph_input]);
    if (!sh || sh->n_dim > MAX_FOLDED)
        return false;
    for (size_t d = 0; d < sh->n_dim; d++) {
        if (sh->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return false;
        out->v[d] = sh->dim[d]->dim_value;
    }
    out->n = sh->n_dim;
    return true;
}

/* Add, Sub, Mul, Div of two lists, one of them possibly a single element,
 * broadcast as ONNX (numpy) does: a single element against an empty list
 * gives an empty list, never a read of the empty one's first element
 * (hostile bounds such as Add(E, [0]) with E an empty initializer). */
static bool fold_arithmetic(const scope *s, const Onnx__NodeProto *p, small_ints *out, int *budget)
{
    small_ints a, b;
    if (p->n_input != 2 || !fold_ints(s, node_input(p, 0), &a, budget) ||
        !fold_ints(s, node_input(p, 1), &b, budget) || (a.n != b.n && a.n != 1 && b.n != 1))
        return false;
    out->n = a.n == b.n ? a.n : a.n == 1 ? b.n : a.n;
    const char *op = str_or_empty(p->op_type);
    for (size_t i = 0; i < out->n; i++) {
        int64_t x = a.v[a.n == 1 ? 0 : i], y = b.v[b.n == 1 ? 0 : i];
        if (x < -(1 << 30) || x > (1 << 30) || y < -(1 << 30) || y > (1 << 30))
            return false; /* bounds of a state are small: no overflow to guard */
        if (!strcmp(op, "Div") && y == 0)
            return false;
        out->v[i] = !strcmp(op, "Add") ? x + y : !strcmp(op, "Sub") ? x - y
                    : !strcmp(op, "Mul") ? x * y : x / y;
    }
    return true;
}

/* Gather on axis 0 of a folded list. */
static bool fold_gather(const scope *s, const Onnx__NodeProto *p, small_ints *out, int *budget)
{
    small_ints data, idx;
    if (p->n_input != 2 || node_attr_int(p, "axis", 0) != 0 ||
        !fold_ints(s, node_input(p, 0), &data, budget) ||
        !fold_ints(s, node_input(p, 1), &idx, budget))
        return false;
    for (size_t i = 0; i < idx.n; i++) {
        int64_t k = idx.v[i] < 0 ? idx.v[i] + (int64_t)data.n : idx.v[i];
        if (k < 0 || k >= (int64_t)data.n)
            return false;
        out->v[i] = data.v[k];
    }
    out->n = idx.n;
    return true;
}

static bool fold_concat(const scope *s, const Onnx__NodeProto *p, small_ints *out, int *budget)
{
    out->n = 0;
    for (size_t i = 0; i < p->n_input; i++) {
        small_ints part;
        if (!fold_ints(s, node_input(p, i), &part, budget) || out->n + part.n > MAX_FOLDED)
            return false;
        memcpy(out->v + out->n, part.v, part.n * sizeof *part.v);
        out->n += part.n;
    }
    return true;
}

/* The integers `value` holds when it is computed from constants and the fixed
 * shapes of graph inputs only (Shape, Gather, Add, Sub, Mul, Div, Concat,
 * and ops that keep the elements: Unsqueeze, Squeeze, Reshape, Cast,
 * Identity). */
static bool fold_ints(const scope *s, const char *value, small_ints *out, int *budget)
{
    const Onnx__TensorProto *t = scope_tensor_data(s, constant_tensor(s, value));
    if (t)
        return fold_tensor(t, out);
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    const Onnx__NodeProto *p = e && e->producer >= 0 ? o->graph->node[e->producer] : NULL;
    if (!p || --*budget < 0 || p->n_input == 0)
        return false;
    if (op_is(p, "Shape"))
        return fold_shape(o, p, out);
    if (op_is(p, "Add") || op_is(p, "Sub") || op_is(p, "Mul") || op_is(p, "Div"))
        return fold_arithmetic(o, p, out, budget);
    if (op_is(p, "Gather"))
        return fold_gather(o, p, out, budget);
    if (op_is(p, "Concat"))
        return node_attr_int(p, "axis", 0) == 0 && fold_concat(o, p, out, budget);
    if (op_is(p, "Unsqueeze") || op_is(p, "Squeeze") || op_is(p, "Reshape") ||
        op_is(p, "Cast") || op_is(p, "Identity"))
        return fold_ints(o, node_input(p, 0), out, budget);
    return false;
}

/* ---- rows a slot reads ------------------------------------------------------ */

/* A list of int64 from an attribute (Slice before opset 10, Unsqueeze before
 * 13) or else an input computed from constants and fixed shapes; *present is
 * false when neither is given. */
static bool int_param(const scope *o, const Onnx__NodeProto *n, const char *attr, size_t input,
                      int64_t **v, size_t *count, bool *present)
{
    const Onnx__AttributeProto *a = node_attr(n, attr);
    *v = NULL;
    *count = 0;
    *present = true;
    if (a && a->n_ints) {
        if (!(*v = malloc(a->n_ints * sizeof **v))) {
            oom_note(); /* not "no constant value" (error.h) */
            return false;
        }
        memcpy(*v, a->ints, a->n_ints * sizeof **v);
        *count = a->n_ints;
        return true;
    }
    if (input >= n->n_input || !*node_input(n, input)) {
        *present = false;
        return true;
    }
    small_ints folded;
    int budget = FOLD_BUDGET;
    if (!fold_ints(o, node_input(n, input), &folded, &budget))
        return false;
    if (!(*v = malloc(MAX_FOLDED * sizeof **v))) {
        oom_note();
        return false;
    }
    memcpy(*v, folded.v, folded.n * sizeof **v);
    *count = folded.n;
    return true;
}

/* One constant value of a parameter, or `fallback` when it is absent. */
static bool single_param(const scope *o, const Onnx__NodeProto *n, const char *attr,
                         size_t input, int64_t fallback, int64_t *out)
{
    int64_t *v;
    size_t count;
    bool present;
    bool ok = int_param(o, n, attr, input, &v, &count, &present);
    ok = ok && (!present || count == 1);
    if (ok)
        *out = present ? v[0] : fallback;
    free(v);
    return ok;
}

/* Rows [start, end) of a Slice along axis 0 (inputs, or attributes before
 * opset 10), normalised like ONNX does for an axis of `rows`. */
static bool slice_rows(const scope *o, const Onnx__NodeProto *s, int64_t rows, int64_t *start,
                       int64_t *end)
{
    int64_t axis, step;
    if (!single_param(o, s, "starts", 1, INT64_MIN, start) ||
        !single_param(o, s, "ends", 2, INT64_MIN, end) ||
        !single_param(o, s, "axes", 3, 0, &axis) || !single_param(o, s, "steps", 4, 1, &step))
        return false;
    if (*start == INT64_MIN || *end == INT64_MIN || axis != 0 || step != 1)
        return false;
    *start = *start < 0 ? *start + rows : *start;
    *end = *end < 0 ? *end + rows : *end > rows ? rows : *end;
    return *start >= 0 && *end > *start;
}

/* Rows [k, k+1) of Unsqueeze(Gather(input, k), axes [0]), k < rows. */
static bool gathered_row(const scope *o, const Onnx__NodeProto *u, const char *input,
                         int64_t rows, int64_t *start, int64_t *end)
{
    int64_t axis, row;
    const scope *go;
    if (!single_param(o, u, "axes", 1, -1, &axis) || axis != 0)
        return false;
    const value_entry *e = scope_lookup(o, node_input(u, 0), &go);
    const Onnx__NodeProto *g = e && e->producer >= 0 ? go->graph->node[e->producer] : NULL;
    if (!g || !op_is(g, "Gather") || strcmp(node_input(g, 0), input) ||
        node_attr_int(g, "axis", 0) != 0 || g->n_input < 2)
        return false;
    const Onnx__TensorProto *t = scope_tensor_data(go, constant_tensor(go, node_input(g, 1)));
    if (!t || t->n_dims != 0 || !single_param(go, g, "", 1, -1, &row) || row < 0 || row >= rows)
        return false;
    *start = row;
    *end = row + 1;
    return true;
}

/* The rows of the input a slot reads: its initial state is a Slice of the
 * input along axis 0, or one row of it gathered and unsqueezed. */
static bool slot_rows(const node_plan *p, int slot, int64_t rows, int64_t *start, int64_t *end)
{
    const char *input = p->slots[slot].source.input;
    const scope *o;
    const value_entry *e =
        scope_lookup(p->rs.sc, node_input(p->rs.node, p->rs.op->initial_state_input[slot]), &o);
    const Onnx__NodeProto *n = e && e->producer >= 0 ? o->graph->node[e->producer] : NULL;
    if (!n)
        return false;
    if (op_is(n, "Slice"))
        return !strcmp(node_input(n, 0), input) && slice_rows(o, n, rows, start, end);
    return op_is(n, "Unsqueeze") && gathered_row(o, n, input, rows, start, end);
}

static int by_start(const void *a, const void *b)
{
    const sliced *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* The declared size of axis 0 of a main-graph input, or -1. */
static int64_t input_rows(rewrite_ctx *ctx, const char *input)
{
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
    const Onnx__TensorShapeProto *sh =
        e && e->graph_input >= 0 ? value_info_shape(ctx->graph->input[e->graph_input]) : NULL;
    if (!sh || sh->n_dim == 0 ||
        sh->dim[0]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
        return -1;
    return sh->dim[0]->dim_value;
}

/* True when the slices do not overlap, stay within the input, and each is
 * its node's state (one row per direction); gaps only when `gaps_unread`. */
static bool slices_fit(const sliced *s, size_t n, int64_t rows, bool gaps_unread)
{
    int64_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].start < next || (s[i].start > next && !gaps_unread) || s[i].end > rows ||
            s[i].end - s[i].start != s[i].at.plan->rs.directions)
            return false;
        next = s[i].end;
    }
    return rows > 0 && rows <= MAX_STATE_ROWS && (next == rows || gaps_unread);
}

static Onnx__NodeProto *new_node(rewrite_ctx *ctx, const char *op, const char *output)
{
    char *name = name_registry_unique(&ctx->names, output);
    Onnx__NodeProto *node = name ? node_new(op, name) : NULL;
    free(name);
    if (node && !append_string(&node->output, &node->n_output, output)) {
        arena_message_free(&node->base);
        node = NULL;
    }
    return node;
}

/* Queues `node` first in the main graph: it reads only a graph input and a
 * Constant, and branches may read its output. Takes the node over. */
static bool queue_first(rewrite_ctx *ctx, Onnx__NodeProto *node, bool ok)
{
    if (!ok || !node) {
        if (node)
            arena_message_free(&node->base);
        return false;
    }
    return scope_queue_node(ctx->scopes.scopes[0], 0, node);
}

/* A new main-graph value holding rows [start, end) of `input` unchanged:
 * Gather(input, Constant([start, ..., end - 1])), which every opset reads
 * the same way. */
static char *input_rows_value(rewrite_ctx *ctx, const char *input, int64_t start, int64_t end)
{
    char base[512];
    snprintf(base, sizeof base, "%s_rows_%lld_%lld", input, (long long)start, (long long)end);
    char *out = name_registry_unique(&ctx->names, base);
    char *idx = out ? name_registry_unique(&ctx->names, "rows_indices") : NULL;
    int64_t *rows = malloc((size_t)(end - start) * sizeof *rows);
    for (int64_t r = start; rows && r < end; r++)
        rows[r - start] = r;
    Onnx__TensorProto *t = rows && idx ? tensor_new_int64s("", rows, (size_t)(end - start)) : NULL;
    free(rows);
    Onnx__NodeProto *c = t ? new_node(ctx, "Constant", idx) : NULL;
    if (!c && t)
        arena_message_free(&t->base);
    /* the attribute takes t over, also when it fails */
    bool ok = queue_first(ctx, c, c && node_add_tensor_attr(c, "value", t));
    Onnx__NodeProto *g = ok ? new_node(ctx, "Gather", out) : NULL;
    ok = queue_first(ctx, g,
                     g && append_string(&g->input, &g->n_input, input) &&
                         append_string(&g->input, &g->n_input, idx) &&
                         node_add_int_attr(g, "axis", 0));
    free(idx);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* The main-graph value of one node's final state: Y_h itself, or Y_h
 * threaded out of the If branches around the node, the other branches
 * passing the rows it read through unchanged. */
static char *final_state_in_main(rewrite_ctx *ctx, const sliced *s, const char *input)
{
    node_plan *p = s->at.plan;
    bool renamed;
    char *final = slot_name(ctx, &p->rs, "Y", s->at.slot);
    char *y = final ? name_final_state(ctx, p, s->at.slot, final, &renamed) : NULL;
    char *main_value = NULL;
    if (y && !p->rs.sc->parent) {
        main_value = y;
        y = NULL;
    } else if (y) {
        char *rows = input_rows_value(ctx, input, s->start, s->end);
        if (rows && thread_out(ctx, p->rs.sc, y, final, rows, &p->rs, false, &main_value) !=
                        RNNSTATE_OK)
            main_value = NULL;
        if (!rows)
            free(y);
        y = NULL;
        free(rows);
    }
    free(y);
    free(final);
    return main_value;
}

/* The Concat's inputs in row order: each slice's final state, and the rows
 * no node reads, unchanged. */
static bool concat_inputs(rewrite_ctx *ctx, Onnx__NodeProto *concat, const char *input,
                          const sliced *s, size_t n, int64_t rows)
{
    int64_t next = 0;
    for (size_t i = 0; i <= n; i++) {
        int64_t gap_end = i < n ? s[i].start : rows;
        char *v = next < gap_end ? input_rows_value(ctx, input, next, gap_end) : NULL;
        bool ok = next >= gap_end || (v && append_string(&concat->input, &concat->n_input, v));
        free(v);
        if (!ok)
            return false;
        if (i == n)
            break;
        v = final_state_in_main(ctx, &s[i], input);
        ok = v && append_string(&concat->input, &concat->n_input, v);
        free(v);
        if (!ok)
            return false;
        next = s[i].end;
    }
    return true;
}

static rnnstate_status concat_states(rewrite_ctx *ctx, const char *input, const sliced *s,
                                     size_t n, int64_t rows, char **out)
{
    char base[512];
    snprintf(base, sizeof base, "%s_out", input);
    *out = name_registry_unique(&ctx->names, base);
    Onnx__NodeProto *concat = *out ? new_node(ctx, "Concat", *out) : NULL;
    bool ok = concat && node_add_int_attr(concat, "axis", 0) &&
              concat_inputs(ctx, concat, input, s, n, rows);
    if (!ok && concat)
        arena_message_free(&concat->base);
    ok = ok && scope_queue_node(ctx->scopes.scopes[0], SIZE_MAX, concat);
    return ok ? RNNSTATE_OK : ctx_oom(ctx);
}

/* Declares the assembled output with the input's own type and shape. */
static rnnstate_status declare_like_input(rewrite_ctx *ctx, const char *input, const char *out)
{
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
    Onnx__ValueInfoProto *src = ctx->graph->input[e->graph_input];
    Onnx__ValueInfoProto *vi = value_info_copy(src, out);
    return vi && scope_add_output(ctx->scopes.scopes[0], vi) ? RNNSTATE_OK : ctx_oom(ctx);
}

static void report_assembled(rewrite_ctx *ctx, const char *input, const char *out,
                             const sliced *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        node_plan *p = s[i].at.plan;
        report_node_decide(&ctx->report, p->report_node,
                           "Y_%s: rows %lld:%lld of %s, assembled with the other rows into new "
                           "graph output %s (Concat in row order%s)",
                           slot_letter[s[i].at.slot], (long long)s[i].start, (long long)s[i].end,
                           input, out,
                           p->rs.sc->parent ? "; threaded out of its If branches" : "");
        report_node_output_added(&ctx->report, p->report_node, out);
    }
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, input);
    const Onnx__TensorShapeProto *sh = value_info_shape(ctx->graph->input[e->graph_input]);
    dim_info dims[8] = { 0 };
    size_t rank = sh && sh->n_dim <= 8 ? sh->n_dim : 0;
    for (size_t d = 0; d < rank; d++)
        dim_from_proto(sh->dim[d], &dims[d]);
    /* rows of the first axis of a layout-0 state: the input has its layout */
    report_add_pair(&ctx->report, input, out, dims, rank, s[0].at.plan->rs.elem_type,
                    pair_batch_axis(&s[0].at.plan->rs, dims, rank, true), e->initializer >= 0,
                    true, RNNSTATE_PAIR_RECURRENT);
    for (size_t d = 0; d < rank; d++)
        dim_info_clear(&dims[d]);
    ctx->changed = true;
}

rnnstate_status assemble_sliced_states(rewrite_ctx *ctx, pending_slot *pending, size_t n,
                                       bool gaps_unread, bool *handled)
{
    *handled = false;
    const char *input = pending[0].plan->slots[pending[0].slot].source.input;
    int64_t rows = input_rows(ctx, input);
    sliced *s = calloc(n, sizeof *s);
    if (!s)
        return ctx_oom(ctx);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        s[i].at = pending[i];
        ok = !pending[i].plan->rs.batch_first &&
             slot_rows(pending[i].plan, pending[i].slot, rows, &s[i].start, &s[i].end);
    }
    if (ok)
        qsort(s, n, sizeof *s, by_start);
    rnnstate_status st = RNNSTATE_OK;
    if (ok && slices_fit(s, n, rows, gaps_unread)) {
        char *out = NULL;
        st = concat_states(ctx, input, s, n, rows, &out);
        if (st == RNNSTATE_OK)
            st = declare_like_input(ctx, input, out);
        if (st == RNNSTATE_OK) {
            report_assembled(ctx, input, out, s, n);
            *handled = true;
        }
        free(out);
    }
    free(s);
    return st;
}
