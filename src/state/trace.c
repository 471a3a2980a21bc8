/* Tracing state values through the graphs. Every walk is bounded
 * (MAX_TRACE_DEPTH steps back, MAX_VISITS forward, a step budget for shape
 * queries) so that a hostile graph cannot make the analysis recurse without
 * end or take quadratic time. */
#include "state/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

#define MAX_TRACE_DEPTH 64
#define MAX_VISITS 4096

static bool op_is(const Onnx__NodeProto *node, const char *op)
{
    return strcmp(str_or_empty(node->op_type), op) == 0;
}

static bool op_in(const Onnx__NodeProto *node, const char *const *ops)
{
    for (; *ops; ops++)
        if (op_is(node, *ops))
            return true;
    return false;
}

static bool default_domain(const Onnx__NodeProto *node)
{
    const char *d = str_or_empty(node->domain);
    return !*d || !strcmp(d, "ai.onnx");
}

/* Ops that pass (part of) input 0 through unchanged in value. */
static const char *const view_ops[] = { "Slice", "Gather", "Squeeze", "Unsqueeze", "Reshape",
                                        "Identity", "Cast", "Split", "Expand", "Transpose",
                                        NULL };
/* Ops that keep a uniform tensor uniform (they only rearrange input 0). */
static const char *const uniform_keeping_ops[] = { "Expand", "Slice", "Gather", "Squeeze",
                                                   "Unsqueeze", "Reshape", "Identity", "Split",
                                                   "Tile", "Transpose", "Flatten", NULL };
/* Ops that move data without computing on it, for the final-state walk. */
static const char *const data_movement_ops[] = { "Concat", "Squeeze", "Unsqueeze", "Reshape",
                                                 "Transpose", "Identity", "Cast", "ScatterND",
                                                 NULL };

/* The node producing `value` as seen from `s`, or NULL. */
static const Onnx__NodeProto *producer(const scope *s, const char *value, const scope **owner)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || e->producer < 0)
        return NULL;
    if (owner)
        *owner = o;
    return o->graph->node[e->producer];
}

const Onnx__TensorProto *constant_tensor(const scope *s, const char *value)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || e->graph_input >= 0)
        return NULL; /* a graph input can be overridden: not a constant */
    if (e->initializer >= 0)
        return o->graph->initializer[e->initializer];
    if (e->producer < 0)
        return NULL;
    const Onnx__NodeProto *p = o->graph->node[e->producer];
    if (!op_is(p, "Constant"))
        return NULL;
    const Onnx__AttributeProto *a = node_attr(p, "value");
    return a ? a->t : NULL;
}

/* The declared shape of a value (graph input, value_info or output). */
static const Onnx__TensorShapeProto *declared_shape(const scope *o, const value_entry *e)
{
    const Onnx__GraphProto *g = o->graph;
    const Onnx__TensorShapeProto *sh = NULL;
    if (e->graph_input >= 0)
        sh = value_info_shape(g->input[e->graph_input]);
    if (!sh && e->value_info >= 0)
        sh = value_info_shape(g->value_info[e->value_info]);
    if (!sh && e->graph_output >= 0)
        sh = value_info_shape(g->output[e->graph_output]);
    return sh;
}

int32_t declared_elem_type(const scope *s, const char *value)
{
    const scope *o = NULL;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e) {
        /* declared in value_info only, e.g. an output of a node elsewhere */
        e = graph_index_find(&s->index, value);
        o = s;
    }
    if (!e)
        return 0;
    const Onnx__GraphProto *g = o->graph;
    int32_t t = 0;
    if (e->graph_input >= 0)
        t = value_info_elem_type(g->input[e->graph_input]);
    if (!t && e->value_info >= 0)
        t = value_info_elem_type(g->value_info[e->value_info]);
    if (!t && e->graph_output >= 0)
        t = value_info_elem_type(g->output[e->graph_output]);
    if (!t && e->initializer >= 0)
        t = g->initializer[e->initializer]->data_type;
    return t;
}

/* ---- initial state ----------------------------------------------------- */

typedef struct trace_path {
    const Onnx__NodeProto *nodes[MAX_TRACE_DEPTH];
    int n;
} trace_path;

static void path_push(trace_path *path, const Onnx__NodeProto *node)
{
    if (path->n < MAX_TRACE_DEPTH)
        path->nodes[path->n++] = node;
}

static void path_describe(const trace_path *path, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = path->n - 1; i >= 0 && used < size; i--) {
        int w = snprintf(out + used, size - used, "%s%s '%s'", i == path->n - 1 ? "" : " -> ",
                         str_or_empty(path->nodes[i]->op_type),
                         str_or_empty(path->nodes[i]->name));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Follows view ops from `value` back to an input of the main graph. */
static const char *view_chain_input(const scope *s, const char *value, trace_path *path)
{
    for (int depth = 0; depth < MAX_TRACE_DEPTH; depth++) {
        const scope *o;
        const value_entry *e = scope_lookup(s, value, &o);
        if (!e)
            return NULL;
        if (e->graph_input >= 0)
            return o->parent ? NULL : e->name;
        if (e->producer < 0)
            return NULL;
        const Onnx__NodeProto *p = o->graph->node[e->producer];
        if (!default_domain(p) || !op_in(p, view_ops) || p->n_input == 0)
            return NULL;
        path_push(path, p);
        value = str_or_empty(p->input[0]);
        s = o;
    }
    return NULL;
}

typedef struct uniform_value {
    int32_t elem_type;
    size_t size;
    unsigned char bytes[16];
} uniform_value;

static bool tensor_uniform(const Onnx__TensorProto *t, uniform_value *u)
{
    unsigned char *bytes;
    size_t size, width = t ? dtype_size(t->data_type) : 0;
    if (!width || width > sizeof u->bytes || !tensor_read_bytes(t, &bytes, &size))
        return false;
    bool ok = size >= width && bytes_uniform(bytes, size, width);
    if (ok) {
        memset(u, 0, sizeof *u);
        u->elem_type = t->data_type;
        u->size = width;
        memcpy(u->bytes, bytes, width);
    }
    free(bytes);
    return ok;
}

static bool all_zero(const uniform_value *u)
{
    for (size_t i = 0; i < u->size; i++)
        if (u->bytes[i])
            return false;
    return true;
}

static bool constant_node_uniform(const Onnx__NodeProto *p, uniform_value *u)
{
    const Onnx__AttributeProto *a;
    if ((a = node_attr(p, "value")) && a->t)
        return tensor_uniform(a->t, u);
    memset(u, 0, sizeof *u);
    if ((a = node_attr(p, "value_float")) && a->has_f) {
        u->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        u->size = 4;
        memcpy(u->bytes, &a->f, 4);
        return true;
    }
    if ((a = node_attr(p, "value_int")) && a->has_i) {
        u->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        u->size = 8;
        memcpy(u->bytes, &a->i, 8);
        return true;
    }
    return false;
}

/* ConstantOfShape fills with its `value` (one element), or float 0. */
static bool constant_of_shape_uniform(const Onnx__NodeProto *p, uniform_value *u)
{
    const Onnx__AttributeProto *a = node_attr(p, "value");
    if (a && a->t)
        return tensor_uniform(a->t, u);
    memset(u, 0, sizeof *u);
    u->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    u->size = 4;
    return true;
}

static bool resolve_uniform(const scope *s, const char *value, int depth, trace_path *path,
                            uniform_value *u, const Onnx__NodeProto **blocker);

static bool resolve_cast(const scope *s, const Onnx__NodeProto *p, int depth, trace_path *path,
                         uniform_value *u, const Onnx__NodeProto **blocker)
{
    /* a cast keeps zero exactly; other values would need converting */
    int64_t to = node_attr_int(p, "to", 0);
    if (!resolve_uniform(s, str_or_empty(p->input[0]), depth + 1, path, u, blocker))
        return false;
    size_t width = dtype_size((int32_t)to);
    if (!all_zero(u) || !width || width > sizeof u->bytes) {
        *blocker = p;
        return false;
    }
    u->elem_type = (int32_t)to;
    u->size = width;
    return true;
}

static bool resolve_concat(const scope *s, const Onnx__NodeProto *p, int depth, trace_path *path,
                           uniform_value *u, const Onnx__NodeProto **blocker)
{
    uniform_value first, next;
    if (!resolve_uniform(s, str_or_empty(p->input[0]), depth + 1, path, &first, blocker))
        return false;
    for (size_t i = 1; i < p->n_input; i++) {
        if (!resolve_uniform(s, str_or_empty(p->input[i]), depth + 1, path, &next, blocker) ||
            next.elem_type != first.elem_type || memcmp(next.bytes, first.bytes, first.size)) {
            *blocker = p;
            return false;
        }
    }
    *u = first;
    return true;
}

/* True when `value` is a data-independent tensor whose elements all equal
 * one value; on false, *blocker is the node that made it data-dependent. */
static bool resolve_uniform(const scope *s, const char *value, int depth, trace_path *path,
                            uniform_value *u, const Onnx__NodeProto **blocker)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || e->graph_input >= 0 || depth >= MAX_TRACE_DEPTH)
        return false;
    if (e->initializer >= 0)
        return tensor_uniform(scope_tensor_data(o, o->graph->initializer[e->initializer]), u);
    if (e->producer < 0)
        return false;
    const Onnx__NodeProto *p = o->graph->node[e->producer];
    *blocker = p;
    if (!default_domain(p))
        return false;
    path_push(path, p);
    if (op_is(p, "Constant"))
        return constant_node_uniform(p, u);
    if (op_is(p, "ConstantOfShape"))
        return constant_of_shape_uniform(p, u);
    if (p->n_input == 0)
        return false;
    if (op_in(p, uniform_keeping_ops))
        return resolve_uniform(o, str_or_empty(p->input[0]), depth + 1, path, u, blocker);
    if (op_is(p, "Cast"))
        return resolve_cast(o, p, depth, path, u, blocker);
    if (op_is(p, "Concat"))
        return resolve_concat(o, p, depth, path, u, blocker);
    return false;
}

/* Case d: the slot is an Expand whose data is a constant. */
static bool classify_expand(const scope *s, const Onnx__NodeProto *p, state_source *out)
{
    if (!p || !op_is(p, "Expand") || !default_domain(p) || p->n_input != 2)
        return false;
    const Onnx__TensorProto *data =
        scope_tensor_data(s, constant_tensor(s, str_or_empty(p->input[0])));
    if (!data)
        return false;
    trace_path path = { .n = 0 };
    path_push(&path, p);
    const Onnx__NodeProto *src = producer(s, str_or_empty(p->input[0]), NULL);
    if (src)
        path_push(&path, src);
    path_describe(&path, out->chain, sizeof out->chain);
    out->kind = SOURCE_CONSTANT;
    out->via_expand = true;
    out->node = p;
    out->elem_type = data->data_type;
    uniform_value u;
    if (tensor_uniform(data, &u)) {
        out->uniform = true;
        memcpy(out->fill, u.bytes, u.size);
    } else {
        out->pattern = data;
    }
    return true;
}

static bool classify_constant(const scope *s, const char *value, state_source *out)
{
    const scope *o = s;
    const Onnx__NodeProto *p = producer(s, value, &o);
    if (classify_expand(o, p, out))
        return true;
    trace_path path = { .n = 0 };
    uniform_value u;
    const Onnx__NodeProto *blocker = p;
    if (resolve_uniform(s, value, 0, &path, &u, &blocker)) {
        out->kind = SOURCE_CONSTANT;
        out->node = p;
        out->uniform = true;
        out->elem_type = u.elem_type;
        memcpy(out->fill, u.bytes, u.size);
        path_describe(&path, out->chain, sizeof out->chain);
        return true;
    }
    const Onnx__TensorProto *t = constant_tensor(s, value);
    if (t && p && op_is(p, "Constant")) {
        /* a Constant of any value: it serves as the default if its shape fits */
        out->kind = SOURCE_CONSTANT;
        out->node = p;
        out->elem_type = t->data_type;
        out->pattern = t;
        path.n = 0;
        path_push(&path, p);
        path_describe(&path, out->chain, sizeof out->chain);
        return true;
    }
    out->node = blocker;
    return false;
}

bool trace_initial_state(const scope *s, const char *value, state_source *out)
{
    memset(out, 0, sizeof *out);
    if (!value || !*value) {
        out->kind = SOURCE_ABSENT;
        return true;
    }
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (e && e->graph_input >= 0 && !o->parent) {
        out->kind = SOURCE_GRAPH_INPUT;
        out->input = e->name;
        return true;
    }
    if (e && e->initializer >= 0) {
        out->kind = SOURCE_INITIALIZER;
        out->input = e->name;
        out->owner = o;
        return true;
    }
    trace_path path = { .n = 0 };
    const char *input = view_chain_input(s, value, &path);
    if (input) {
        out->kind = SOURCE_VIEW_OF_INPUT;
        out->input = input;
        path_describe(&path, out->chain, sizeof out->chain);
        return true;
    }
    if (!classify_constant(s, value, out))
        out->kind = SOURCE_DATA_DEPENDENT;
    return true;
}

/* ---- final state ------------------------------------------------------- */

typedef struct reach {
    const scope *sc;
    const char *value;
} reach;

/* A branch output of an If continues as the If's output in the parent. */
static bool leave_branch(const scope *s, const value_entry *e, reach *next)
{
    if (!s->parent || s->in_loop)
        return false;
    const Onnx__NodeProto *node = s->parent->graph->node[s->parent_node];
    if (!op_is(node, "If") || (size_t)e->graph_output >= node->n_output)
        return false;
    next->sc = s->parent;
    next->value = str_or_empty(node->output[e->graph_output]);
    return *next->value != '\0';
}

const char *trace_final_state(const scope *s, const char *value, bool direct)
{
    reach stack[MAX_TRACE_DEPTH];
    int top = 0, visits = 0;
    stack[top++] = (reach){ s, value };
    while (top > 0 && visits++ < MAX_VISITS) {
        reach r = stack[--top];
        const value_entry *e = graph_index_find(&r.sc->index, r.value);
        if (!e)
            continue;
        if (e->graph_output >= 0) {
            reach up;
            if (!r.sc->parent)
                return e->name;
            if (leave_branch(r.sc, e, &up) && top < MAX_TRACE_DEPTH)
                stack[top++] = up;
        }
        for (size_t c = 0; !direct && c < e->n_consumers; c++) {
            const Onnx__NodeProto *n = r.sc->graph->node[e->consumers[c]];
            if (!default_domain(n) || !op_in(n, data_movement_ops))
                continue;
            for (size_t o = 0; o < n->n_output && top < MAX_TRACE_DEPTH; o++)
                if (*str_or_empty(n->output[o]))
                    stack[top++] = (reach){ r.sc, n->output[o] };
        }
    }
    return NULL;
}

/* ---- shapes ------------------------------------------------------------ */

/* Ops whose output has input 0's shape. */
static const char *const same_shape_ops[] = {
    "Identity", "Cast", "Dropout", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",
    "HardSigmoid", "Tanh", "Softplus", "Softsign", "Abs", "Neg", "Exp", "Log", "Sqrt",
    "Reciprocal", "Clip", "Erf", "Gelu", "HardSwish", "Softmax", "LogSoftmax", "Not", "Floor",
    "Ceil", "Round", "Sign", "Sin", "Cos", "LayerNormalization", "BatchNormalization",
    "InstanceNormalization", "QuantizeLinear", "DequantizeLinear", NULL
};
static const char *const broadcast_ops[] = { "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
                                             "Sum", "Mean", "Where", NULL };

typedef struct shape_query {
    int budget; /* total steps for one query, so broadcasts cannot blow up */
    /* trace_axis_to_input: walk past declared shapes to a main-graph input,
     * and record which of its axes the traced dimension is */
    bool to_input;
    const char *input;
    int64_t input_axis;
} shape_query;

static int64_t infer_rank(shape_query *q, const scope *s, const char *value, int depth);
static bool infer_dim_at(shape_query *q, const scope *s, const char *value, int64_t axis,
                         int depth, dim_info *out);

/* A list of int64 from an attribute, or from a constant input. */
static bool int_list(const scope *s, const Onnx__NodeProto *p, const char *attr, size_t input,
                     int64_t **vals, size_t *n)
{
    const Onnx__AttributeProto *a = *attr ? node_attr(p, attr) : NULL;
    if (a && a->n_ints) {
        *vals = malloc(a->n_ints * sizeof **vals);
        if (!*vals)
            return false;
        memcpy(*vals, a->ints, a->n_ints * sizeof **vals);
        *n = a->n_ints;
        return true;
    }
    const Onnx__TensorProto *t =
        input < p->n_input ? constant_tensor(s, str_or_empty(p->input[input])) : NULL;
    t = scope_tensor_data(s, t);
    return t && tensor_read_int64s(t, vals, n);
}

/* The producer of `value` for a shape query (within the default domain, or
 * a recurrent node), charging the budget. */
static const Onnx__NodeProto *shape_producer(shape_query *q, const scope *s, const char *value,
                                             const scope **owner, int *slot)
{
    const value_entry *e = scope_lookup(s, value, owner);
    if (!e || e->producer < 0 || --q->budget <= 0)
        return NULL;
    const Onnx__NodeProto *p = (*owner)->graph->node[e->producer];
    *slot = e->producer_slot;
    return default_domain(p) || recurrent_op_of(p) ? p : NULL;
}

static int64_t rank_of_broadcast(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                                 int depth)
{
    int64_t rank = -1;
    for (size_t i = 0; i < p->n_input; i++) {
        int64_t r = infer_rank(q, s, str_or_empty(p->input[i]), depth + 1);
        if (r < 0)
            return -1;
        rank = r > rank ? r : rank;
    }
    return rank;
}

static int64_t infer_rank(shape_query *q, const scope *s, const char *value, int depth)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || depth > MAX_TRACE_DEPTH)
        return -1;
    const Onnx__TensorShapeProto *sh = declared_shape(o, e);
    if (sh)
        return (int64_t)sh->n_dim;
    const Onnx__TensorProto *t = constant_tensor(s, value);
    if (t)
        return (int64_t)t->n_dims;
    int slot;
    const Onnx__NodeProto *p = shape_producer(q, s, value, &o, &slot);
    if (!p || p->n_input == 0)
        return -1;
    const char *in0 = str_or_empty(p->input[0]);
    if (recurrent_op_of(p))
        return slot == 0 ? 4 : 3;
    if (op_in(p, same_shape_ops) || op_is(p, "Transpose") || op_is(p, "Concat") ||
        op_is(p, "Slice"))
        return infer_rank(q, o, in0, depth + 1);
    if (op_is(p, "MatMul") || op_in(p, broadcast_ops))
        return rank_of_broadcast(q, o, p, depth);
    if (op_is(p, "Gemm"))
        return 2;
    int64_t *vals = NULL, rank = -1;
    size_t n = 0;
    if ((op_is(p, "Squeeze") || op_is(p, "Unsqueeze")) && int_list(o, p, "axes", 1, &vals, &n)) {
        int64_t r = infer_rank(q, o, in0, depth + 1);
        if (r >= 0)
            rank = op_is(p, "Squeeze") ? r - (int64_t)n : r + (int64_t)n;
    } else if (op_is(p, "Reshape") && p->n_input > 1) {
        const Onnx__TensorProto *shape = constant_tensor(o, str_or_empty(p->input[1]));
        if (shape && shape->n_dims == 1)
            rank = shape->dims[0];
    }
    free(vals);
    return rank;
}

/* Squeeze and Unsqueeze: the rank of input 0 and the axes (attribute or
 * input 1), or false when either is unknown. */
static bool rank_and_axes(shape_query *q, const scope *s, const Onnx__NodeProto *p, int depth,
                          int64_t *rank, int64_t **axes, size_t *n)
{
    *axes = NULL;
    *n = 0;
    *rank = infer_rank(q, s, str_or_empty(p->input[0]), depth + 1);
    return *rank >= 0 && int_list(s, p, "axes", 1, axes, n);
}

/* Squeeze: output axis `axis` is the axis-th input axis not squeezed. */
static bool through_squeeze(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                            int64_t axis, int depth, dim_info *out)
{
    const char *in0 = str_or_empty(p->input[0]);
    int64_t *axes, r;
    size_t n;
    if (!rank_and_axes(q, s, p, depth, &r, &axes, &n))
        return true; /* unknown */
    int64_t kept = -1, in_axis = -1;
    for (int64_t i = 0; i < r && in_axis < 0; i++) {
        bool squeezed = false;
        for (size_t k = 0; k < n; k++)
            squeezed |= (axes[k] < 0 ? axes[k] + r : axes[k]) == i;
        if (!squeezed && ++kept == axis)
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
    int64_t r = infer_rank(q, s, in0, depth + 1); /* no perm: axes reversed */
    return r < 0 || infer_dim_at(q, s, in0, r - 1 - axis, depth + 1, out);
}

static bool through_reshape(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                            int64_t axis, int depth, dim_info *out)
{
    int64_t *shape = NULL;
    size_t n = 0;
    if (p->n_input < 2 || !int_list(s, p, "", 1, &shape, &n) || (size_t)axis >= n) {
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

/* Recurrent outputs: Y is [T, D, B, H] (layout 0) or [B, T, D, H] (layout 1);
 * Y_h and Y_c are [D, B, H] or [B, D, H]. Only X-derived dims are traced. */
static bool through_recurrent(shape_query *q, const scope *s, const Onnx__NodeProto *p, int slot,
                              int64_t axis, int depth, dim_info *out)
{
    const char *x = str_or_empty(p->input[0]);
    bool batch_first = node_attr_int(p, "layout", 0) == 1;
    int64_t x_axis = -1;
    if (slot == 0)
        x_axis = batch_first ? (axis <= 1 ? axis : -1) : (axis == 0 ? 0 : axis == 2 ? 1 : -1);
    else
        x_axis = (batch_first ? axis == 0 : axis == 1) ? (batch_first ? 0 : 1) : -1;
    return x_axis < 0 || infer_dim_at(q, s, x, x_axis, depth + 1, out);
}

/* For a broadcasting op, follow the one operand that is not a constant. */
static bool through_broadcast(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                              int64_t axis, int depth, dim_info *out)
{
    const char *variable = NULL;
    for (size_t i = 0; i < p->n_input; i++) {
        const char *in = str_or_empty(p->input[i]);
        if (constant_tensor(s, in))
            continue;
        if (variable)
            return true; /* two data operands: broadcasting could change the dim */
        variable = in;
    }
    int64_t out_rank = rank_of_broadcast(q, s, p, depth);
    if (!variable || out_rank < 0 || infer_rank(q, s, variable, depth + 1) != out_rank)
        return true;
    return infer_dim_at(q, s, variable, axis, depth + 1, out);
}

static bool through_matmul(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                           const char *value, int64_t axis, int depth, dim_info *out)
{
    /* every axis but the last comes from A (Gemm: unless transA) */
    const char *in0 = str_or_empty(p->input[0]);
    int64_t r = infer_rank(q, s, value, depth + 1);
    if (r < 1 || axis >= r - 1 || node_attr_int(p, "transA", 0) != 0 ||
        infer_rank(q, s, in0, depth + 1) != r)
        return true;
    return infer_dim_at(q, s, in0, axis, depth + 1, out);
}

static bool through_producer(shape_query *q, const scope *s, const char *value, int64_t axis,
                             int depth, dim_info *out)
{
    const scope *o;
    int slot;
    const Onnx__NodeProto *p = shape_producer(q, s, value, &o, &slot);
    if (!p || p->n_input == 0)
        return true;
    const char *in0 = str_or_empty(p->input[0]);
    if (recurrent_op_of(p))
        return through_recurrent(q, o, p, slot, axis, depth, out);
    if (op_in(p, same_shape_ops))
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    if (op_is(p, "Squeeze"))
        return through_squeeze(q, o, p, axis, depth, out);
    if (op_is(p, "Unsqueeze"))
        return through_unsqueeze(q, o, p, axis, depth, out);
    if (op_is(p, "Transpose"))
        return through_transpose(q, o, p, axis, depth, out);
    if (op_is(p, "Reshape"))
        return through_reshape(q, o, p, axis, depth, out);
    if (op_is(p, "MatMul") || op_is(p, "Gemm"))
        return through_matmul(q, o, p, value, axis, depth, out);
    if (op_in(p, broadcast_ops))
        return through_broadcast(q, o, p, axis, depth, out);
    if (op_is(p, "Concat")) {
        int64_t r = infer_rank(q, o, in0, depth + 1), c = node_attr_int(p, "axis", 0);
        if (r < 0 || (c < 0 ? c + r : c) == axis)
            return true;
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    }
    return true;
}

static bool infer_dim_at(shape_query *q, const scope *s, const char *value, int64_t axis,
                         int depth, dim_info *out)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || axis < 0 || depth > MAX_TRACE_DEPTH || q->budget <= 0)
        return true;
    if (q->to_input) {
        if (o->parent == NULL && e->graph_input >= 0 && e->initializer < 0) {
            q->input = e->name;
            q->input_axis = axis;
            return true;
        }
        return through_producer(q, s, value, axis, depth, out);
    }
    const Onnx__TensorShapeProto *sh = declared_shape(o, e);
    if (sh && (size_t)axis < sh->n_dim) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[axis];
        dim_from_proto(d, out);
        if (out->known)
            return true;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
            d->dim_param && d->dim_param[0])
            return false; /* strdup failed */
    }
    const Onnx__TensorProto *t = constant_tensor(s, value);
    if (t) {
        if ((size_t)axis < t->n_dims && t->dims[axis] >= 0) {
            out->known = true;
            out->value = t->dims[axis];
        }
        return true;
    }
    return through_producer(q, s, value, axis, depth, out);
}

bool trace_axis_to_input(const scope *s, const char *value, int64_t axis, const char **input,
                         int64_t *input_axis)
{
    shape_query q = { .budget = 10000, .to_input = true };
    dim_info unused = { 0 };
    bool ok = infer_dim_at(&q, s, value, axis, 0, &unused);
    dim_info_clear(&unused);
    *input = ok ? q.input : NULL;
    *input_axis = ok && q.input ? q.input_axis : -1;
    return ok;
}

bool infer_dim(const scope *s, const char *value, int64_t axis, dim_info *out)
{
    shape_query q = { .budget = 10000 };
    dim_info_clear(out);
    return infer_dim_at(&q, s, value, axis, 0, out);
}
