/* Tracing state values through the graphs: where an initial state comes
 * from, where a final state goes.
 *
 * Every walk is memoized per (scope, value) in the index's MEMO_SLOT_STATE
 * table (analysis/memo.h says why and how the depth bound works): is a value
 * a uniform constant, which main-graph output does it reach. Shapes and
 * constants come from analysis/shape.h. */
#include "state/trace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tensor_util.h"

#define MAX_VIEW_STEPS 4096    /* steps of one walk back along views, If branches included */
#define MAX_BRANCH_SCANS 65536 /* scopes one final-state walk looks at for branch reads */

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
                                                 "Expand", NULL };

/* ---- memo ------------------------------------------------------------- */

typedef struct uniform_value {
    int32_t elem_type;
    size_t size;
    unsigned char bytes[16];
} uniform_value;

/* Is the value a data-independent tensor whose elements all equal one value? */
typedef struct uniform_memo {
    unsigned char state;
    bool ok;
    bool cut;   /* failed only because the walk reached MAX_TRACE_DEPTH */
    int depth;  /* the depth it was computed at */
    uniform_value u;
    const Onnx__NodeProto *node;    /* ok: the producer (NULL: an initializer) */
    const Onnx__NodeProto *blocker; /* !ok: the node that made it data-dependent, or NULL */
    const struct uniform_memo *from; /* ok: the answer of the input it came from, or NULL */
} uniform_memo;

/* The main-graph output the value reaches through data-movement ops. */
typedef struct reach_memo {
    unsigned char state;
    bool cut;
    int depth;
    const char *output;
} reach_memo;

/* The two answers of a value are two keys of the slot, each allocated only
 * when asked for (most values are asked only one of them). */
enum { MEMO_KEY_UNIFORM, MEMO_KEY_REACH, MEMO_KEYS };

/* The answers of entry `e` of scope `o`'s index, or NULL when out of memory. */
static uniform_memo *uniform_memo_of(const scope *o, const value_entry *e)
{
    return memo_entry_keyed(o, e, MEMO_SLOT_STATE, MEMO_KEY_UNIFORM, MEMO_KEYS,
                            sizeof(uniform_memo), NULL);
}

static reach_memo *reach_memo_of(const scope *o, const value_entry *e)
{
    return memo_entry_keyed(o, e, MEMO_SLOT_STATE, MEMO_KEY_REACH, MEMO_KEYS, sizeof(reach_memo),
                            NULL);
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

/* out->chain: the path's ops, source first, cut at 255 bytes. */
static void path_describe(const trace_path *path, state_source *src)
{
    char out[256];
    size_t size = sizeof out, used = 0;
    out[0] = '\0';
    for (int i = path->n - 1; i >= 0 && used < size; i--) {
        int w = snprintf(out + used, size - used, "%s%s '%s'", i == path->n - 1 ? "" : " -> ",
                         str_or_empty(path->nodes[i]->op_type),
                         str_or_empty(path->nodes[i]->name));
        if (w < 0)
            break;
        used += (size_t)w;
    }
    free(src->chain);
    src->chain = strdup(out);
    src->oom |= !src->chain;
}

void state_source_clear(state_source *s)
{
    free(s->chain);
    s->chain = NULL;
}

/* The row a Gather on axis 0 reads with a constant non-negative scalar (or
 * one-element) index. */
static bool gather_row(const scope *s, const Onnx__NodeProto *g, int64_t *row)
{
    if (!node_op_is(g, "Gather") || g->n_input < 2 || node_attr_int(g, "axis", 0) != 0)
        return false;
    const Onnx__TensorProto *t = scope_tensor_data(s, constant_tensor(s, node_input(g, 1)));
    int64_t *v = NULL;
    size_t n = 0;
    bool ok = t && tensor_read_int64s(t, &v, &n) && n == 1 && v[0] >= 0;
    if (ok)
        *row = v[0];
    free(v);
    return ok;
}

/* True when ScatterND node `sc` writes whole rows of axis 0 only (constant
 * non-negative indices of shape [n, 1]) and `row` is not one of them: that
 * row of its output is the row of its data input, untouched. */
static bool scatter_spares_row(const scope *s, const Onnx__NodeProto *sc, int64_t row)
{
    if (!node_op_is(sc, "ScatterND") || !node_default_domain(sc) || sc->n_input < 3)
        return false;
    const Onnx__TensorProto *t = scope_tensor_data(s, constant_tensor(s, node_input(sc, 1)));
    int64_t *v = NULL;
    size_t n = 0;
    /* a cache has few rows: larger index lists are not read (hostile models) */
    bool ok = t && t->n_dims == 2 && t->dims[1] == 1 && t->dims[0] >= 0 && t->dims[0] <= 4096 &&
              tensor_read_int64s(t, &v, &n);
    for (size_t i = 0; ok && i < n; i++)
        ok = v[i] >= 0 && v[i] != row;
    free(v);
    return ok;
}

/* A Gather of one row reads through the ScatterNDs that write other rows
 * (GTCRN updates its cache row by row and reads the next row from the
 * updated cache): returns the value whose row it really reads. */
static const char *skip_sparing_scatters(const scope **s, const Onnx__NodeProto *gather,
                                         trace_path *path)
{
    const char *value = str_or_empty(gather->input[0]);
    int64_t row;
    if (!gather_row(*s, gather, &row))
        return value;
    for (int depth = 0; depth < MAX_TRACE_DEPTH; depth++) {
        const scope *o;
        const value_entry *e = scope_lookup(*s, value, &o);
        const Onnx__NodeProto *p = e && e->producer >= 0 ? o->graph->node[e->producer] : NULL;
        if (!p || !scatter_spares_row(o, p, row))
            break;
        path_push(path, p);
        value = str_or_empty(p->input[0]);
        *s = o;
    }
    return value;
}

/* One walk back along view ops; `steps` bounds it across the If branches
 * it enters (each If doubles the work). */
typedef struct view_walk {
    const scope_tree *tree;
    int steps;
} view_walk;

static const char *view_chain_input(view_walk *w, const scope *s, const char *value,
                                    trace_path *path);

/* Output `slot` of an If is a view of a main-graph input when that output of
 * both branches is a view of that same input (Silero v5 picks its state out
 * of `state` in either branch of an If). */
static const char *view_through_if(view_walk *w, const Onnx__NodeProto *if_node, int slot)
{
    const char *input = NULL;
    for (int b = 0; b < 2; b++) {
        const scope *bs = scope_if_branch(w->tree, if_node, b);
        if (!bs || slot < 0 || (size_t)slot >= bs->graph->n_output)
            return NULL;
        trace_path ignored = { .n = 0 };
        const char *in =
            view_chain_input(w, bs, str_or_empty(bs->graph->output[slot]->name), &ignored);
        if (!in || (input && strcmp(in, input)))
            return NULL;
        input = in;
    }
    return input;
}

/* A state input completed by its default (state/defaults.h):
 * Concat(state, Expand(constant, shape)). The state is input 0. */
static bool is_state_or_fill(const scope *s, const Onnx__NodeProto *p)
{
    if (!node_op_is(p, "Concat") || p->n_input != 2)
        return false;
    const Onnx__NodeProto *fill = value_producer(s, str_or_empty(p->input[1]), NULL);
    return fill && node_default_domain(fill) && node_op_is(fill, "Expand") && fill->n_input == 2 &&
           constant_tensor(s, str_or_empty(fill->input[0])) != NULL;
}

/* Follows view ops from `value` back to an input of the main graph. */
static const char *view_chain_input(view_walk *w, const scope *s, const char *value,
                                    trace_path *path)
{
    while (w->steps-- > 0) {
        const scope *o;
        const value_entry *e = scope_lookup(s, value, &o);
        if (!e)
            return NULL;
        if (e->graph_input >= 0)
            return o->parent ? NULL : e->name;
        if (e->producer < 0)
            return NULL;
        const Onnx__NodeProto *p = o->graph->node[e->producer];
        if (node_is_if(p) && w->tree) {
            path_push(path, p);
            return view_through_if(w, p, e->producer_slot);
        }
        if (!node_default_domain(p) || p->n_input == 0 ||
            !(node_op_in(p, view_ops) || is_state_or_fill(o, p)))
            return NULL;
        path_push(path, p);
        s = o;
        value = skip_sparing_scatters(&s, p, path);
    }
    return NULL;
}

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

static const uniform_memo *resolve_uniform(const scope *s, const char *value, int depth);

/* The answer for a value with no memo: not uniform (and not worth keeping). */
static const uniform_memo not_uniform = { .state = MEMO_DONE };

static void resolve_cast(uniform_memo *m, const scope *o, const Onnx__NodeProto *p, int depth)
{
    /* a cast keeps zero exactly; other values would need converting */
    int64_t to = node_attr_int(p, "to", 0);
    const uniform_memo *in = resolve_uniform(o, str_or_empty(p->input[0]), depth + 1);
    size_t width = dtype_size((int32_t)to);
    m->cut = in->cut;
    if (!in->ok) {
        m->blocker = in->blocker ? in->blocker : p;
        return;
    }
    if (!all_zero(&in->u) || !width || width > sizeof m->u.bytes)
        return; /* m->blocker is p */
    m->ok = true;
    m->u = in->u;
    m->u.elem_type = (int32_t)to;
    m->u.size = width;
    m->from = in;
}

static void resolve_concat(uniform_memo *m, const scope *o, const Onnx__NodeProto *p, int depth)
{
    const uniform_memo *first = resolve_uniform(o, str_or_empty(p->input[0]), depth + 1);
    m->cut = first->cut;
    if (!first->ok) {
        m->blocker = first->blocker ? first->blocker : p;
        return;
    }
    for (size_t i = 1; i < p->n_input; i++) {
        const uniform_memo *next = resolve_uniform(o, str_or_empty(p->input[i]), depth + 1);
        m->cut |= next->cut;
        if (!next->ok || next->u.elem_type != first->u.elem_type ||
            memcmp(next->u.bytes, first->u.bytes, first->u.size))
            return; /* m->blocker is p */
    }
    m->ok = true;
    m->u = first->u;
    m->from = first; /* the chain shown follows the first input */
}

/* Fills m for the value produced by p (in scope o). */
static void resolve_produced(uniform_memo *m, const scope *o, const Onnx__NodeProto *p, int depth)
{
    m->node = p;
    m->blocker = p;
    if (!node_default_domain(p))
        return;
    if (node_op_is(p, "Constant")) {
        m->ok = constant_node_uniform(p, &m->u);
    } else if (node_op_is(p, "ConstantOfShape")) {
        m->ok = constant_of_shape_uniform(p, &m->u);
    } else if (p->n_input == 0) {
        return;
    } else if (node_op_in(p, uniform_keeping_ops)) {
        const uniform_memo *in = resolve_uniform(o, str_or_empty(p->input[0]), depth + 1);
        m->ok = in->ok;
        m->cut = in->cut;
        m->u = in->u;
        m->from = in->ok ? in : NULL;
        m->blocker = in->blocker ? in->blocker : p;
    } else if (node_op_is(p, "Cast")) {
        resolve_cast(m, o, p, depth);
    } else if (node_op_is(p, "Concat")) {
        resolve_concat(m, o, p, depth);
    }
}

/* Whether `value` is a data-independent tensor whose elements all equal one
 * value; when not, the answer's blocker is the node that made it
 * data-dependent (NULL: the value itself, e.g. a graph input). */
static const uniform_memo *resolve_uniform(const scope *s, const char *value, int depth)
{
    static const uniform_memo cut_short = { .state = MEMO_DONE, .cut = true };
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || e->graph_input >= 0)
        return &not_uniform;
    if (depth >= MAX_TRACE_DEPTH)
        return &cut_short;
    uniform_memo *m = uniform_memo_of(o, e);
    if (!m)
        return &not_uniform;
    if (m->state == MEMO_BUSY)
        return &not_uniform; /* a cycle */
    if (memo_reusable(m->state, m->cut, m->depth, depth))
        return m;
    *m = (uniform_memo){ .state = MEMO_BUSY, .depth = depth };
    if (e->initializer >= 0)
        m->ok = tensor_uniform(scope_tensor_data(o, o->graph->initializer[e->initializer]), &m->u);
    else if (e->producer >= 0)
        resolve_produced(m, o, o->graph->node[e->producer], depth);
    if (m->ok)
        m->blocker = NULL;
    m->state = MEMO_DONE;
    return m;
}

/* The chain shown for a uniform value: the producers along the inputs its
 * value came from, nearest first. */
static void uniform_path(const uniform_memo *m, trace_path *path)
{
    for (; m; m = m->from)
        if (m->node)
            path_push(path, m->node);
}

/* Case d: the slot is an Expand whose data is a constant. */
static bool classify_expand(const scope *s, const Onnx__NodeProto *p, state_source *out)
{
    if (!p || !node_op_is(p, "Expand") || !node_default_domain(p) || p->n_input != 2)
        return false;
    const Onnx__TensorProto *data =
        scope_tensor_data(s, constant_tensor(s, str_or_empty(p->input[0])));
    if (!data)
        return false;
    trace_path path = { .n = 0 };
    path_push(&path, p);
    const Onnx__NodeProto *src = value_producer(s, str_or_empty(p->input[0]), NULL);
    if (src)
        path_push(&path, src);
    path_describe(&path, out);
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
    const Onnx__NodeProto *p = value_producer(s, value, &o);
    if (classify_expand(o, p, out))
        return true;
    trace_path path = { .n = 0 };
    const uniform_memo *m = resolve_uniform(s, value, 0);
    if (m->ok) {
        out->kind = SOURCE_CONSTANT;
        out->node = p;
        out->uniform = true;
        out->elem_type = m->u.elem_type;
        memcpy(out->fill, m->u.bytes, m->u.size);
        uniform_path(m, &path);
        path_describe(&path, out);
        return true;
    }
    const Onnx__NodeProto *blocker = m->blocker ? m->blocker : p;
    const Onnx__TensorProto *t = constant_tensor(s, value);
    if (t && p && node_op_is(p, "Constant")) {
        /* a Constant of any value: it serves as the default if its shape fits */
        out->kind = SOURCE_CONSTANT;
        out->node = p;
        out->elem_type = t->data_type;
        out->pattern = t;
        path.n = 0;
        path_push(&path, p);
        path_describe(&path, out);
        return true;
    }
    out->node = blocker;
    out->too_far = m->cut;
    return false;
}

bool trace_initial_state(const scope_tree *tree, const scope *s, const char *value,
                         state_source *out)
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
    view_walk walk = { tree, MAX_VIEW_STEPS };
    const char *input = view_chain_input(&walk, s, value, &path);
    if (input) {
        out->kind = SOURCE_VIEW_OF_INPUT;
        out->input = input;
        path_describe(&path, out);
        return !out->oom;
    }
    if (!classify_constant(s, value, out))
        out->kind = SOURCE_DATA_DEPENDENT;
    return !out->oom;
}

/* ---- final state ------------------------------------------------------- */

typedef struct reach {
    const scope *sc;
    const char *value;
} reach;

/* A branch output of an If continues as the If's output in the parent. */
static bool leave_branch(const scope *s, const value_entry *e, reach *next)
{
    const Onnx__NodeProto *node = scope_if_node(s);
    if (!node || (size_t)e->graph_output >= node->n_output)
        return false;
    next->sc = s->parent;
    next->value = str_or_empty(node->output[e->graph_output]);
    return *next->value != '\0';
}

/* One walk forward from a final state: `tree` to enter the If branches that
 * read a value, `budget` the scopes it may look at for that. */
typedef struct reach_walk {
    const scope_tree *tree;
    int budget;
} reach_walk;

static const char *reach_output(reach_walk *w, const scope *s, const char *value, int depth,
                                bool *cut);

/* Where the outputs of the consumers of `e` lead (the last consumer's last
 * output first, the order of the walk this replaces). */
static const char *reach_through_consumers(reach_walk *w, const scope *s, const value_entry *e,
                                           int depth, bool *cut)
{
    for (size_t c = e->n_consumers; c-- > 0;) {
        const Onnx__NodeProto *n = s->graph->node[e->consumers[c]];
        if (!node_default_domain(n) || !node_op_in(n, data_movement_ops))
            continue;
        for (size_t o = n->n_output; o-- > 0;) {
            const char *r = *str_or_empty(n->output[o])
                                ? reach_output(w, s, n->output[o], depth + 1, cut)
                                : NULL;
            if (r)
                return r;
        }
    }
    return NULL;
}

static bool inside(const scope *sc, const scope *ancestor)
{
    for (const scope *p = sc->parent; p; p = p->parent)
        if (p == ancestor)
            return true;
    return false;
}

/* Where the If branches inside `s`, at any depth, that read `value` as an
 * outer-scope value lead (Silero v5 moves its final state through nested Ifs
 * that only Squeeze or pass it). */
static const char *reach_through_branches(reach_walk *w, const scope *s, const char *value,
                                          int depth, bool *cut)
{
    for (size_t i = 0; w->tree && i < w->tree->n; i++) {
        if (w->budget-- <= 0) {
            *cut = true;
            return NULL;
        }
        const scope *c = w->tree->scopes[i];
        if (c->in_loop || !inside(c, s))
            continue;
        const value_entry *e = graph_index_find(&c->index, value);
        if (!e || e->producer >= 0 || e->graph_input >= 0 || e->initializer >= 0)
            continue;
        const char *r = reach_output(w, c, value, depth + 1, cut);
        if (r)
            return r;
    }
    return NULL;
}

/* The main-graph output `value` (defined in scope `s`, or read there from an
 * enclosing scope) reaches, memoized. */
static const char *reach_output(reach_walk *w, const scope *s, const char *value, int depth,
                                bool *cut)
{
    const value_entry *e = graph_index_find(&s->index, value);
    if (!e)
        return NULL;
    if (e->graph_output >= 0 && !s->parent)
        return e->name;
    if (depth >= MAX_TRACE_DEPTH) {
        *cut = true;
        return NULL;
    }
    reach_memo *m = reach_memo_of(s, e);
    if (!m)
        return NULL;
    if (m->state == MEMO_BUSY)
        return NULL; /* a cycle */
    if (memo_reusable(m->state, m->cut, m->depth, depth)) {
        *cut |= m->cut;
        return m->output;
    }
    *m = (reach_memo){ .state = MEMO_BUSY, .depth = depth };
    bool my_cut = false;
    const char *r = reach_through_consumers(w, s, e, depth, &my_cut);
    reach up;
    if (!r && e->graph_output >= 0 && leave_branch(s, e, &up))
        r = reach_output(w, up.sc, up.value, depth + 1, &my_cut);
    if (!r && e->read_by_subgraph)
        r = reach_through_branches(w, s, value, depth, &my_cut);
    *m = (reach_memo){ .state = MEMO_DONE, .cut = my_cut, .depth = depth, .output = r };
    *cut |= my_cut;
    return r;
}

const char *trace_final_state(const scope_tree *tree, const scope *s, const char *value,
                              bool direct)
{
    if (!direct) {
        bool cut = false;
        reach_walk w = { tree, MAX_BRANCH_SCANS };
        return reach_output(&w, s, value, 0, &cut);
    }
    /* the value itself, or the If outputs it becomes on the way out */
    for (int depth = 0; depth < MAX_TRACE_DEPTH; depth++) {
        const value_entry *e = graph_index_find(&s->index, value);
        reach up;
        if (!e || e->graph_output < 0)
            return NULL;
        if (!s->parent)
            return e->name;
        if (!leave_branch(s, e, &up))
            return NULL;
        s = up.sc;
        value = up.value;
    }
    return NULL;
}

