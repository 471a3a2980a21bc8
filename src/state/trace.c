/* Tracing state values through the graphs.
 *
 * Every walk is memoized per (scope, value): the answer for a value (is it a
 * uniform constant, which main-graph output does it reach, its rank, its
 * first dimensions) is computed once per index and kept in the index's
 * `analysis` slot, so the whole analysis takes time linear in the size of
 * the graphs whatever their shape (a chain of Concat(c, c) nodes, which a
 * plain walk visits 2^N times, is walked once), and shared inputs cost
 * nothing the second time. Recursion is bounded by MAX_TRACE_DEPTH steps; a
 * value whose answer was cut short by that bound is computed again only when
 * it is reached nearer the start of a walk, so each value is computed at
 * most MAX_TRACE_DEPTH times and answers do not depend on the order of the
 * queries. A value met again while its own answer is being computed (a
 * cycle, in an invalid graph) is "not known". */
#include "state/trace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

#define MAX_VIEW_STEPS 4096    /* steps of one walk back along views, If branches included */
#define MAX_BRANCH_SCANS 65536 /* scopes one final-state walk looks at for branch reads */

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
                                                 "Expand", NULL };

/* ---- memo ------------------------------------------------------------- */

typedef enum memo_state { MEMO_NONE, MEMO_BUSY, MEMO_DONE } memo_state;

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

typedef struct rank_memo {
    unsigned char state;
    bool cut;
    int depth;
    int64_t rank;
} rank_memo;

#define MEMO_AXES 4 /* dims of axes 0..3 are memoized (states have rank 3, Y rank 4) */

typedef struct dim_memo {
    unsigned char state;
    bool cut;
    int depth;
    dim_info dim; /* owns its param */
} dim_memo;

typedef struct value_memo {
    uniform_memo uniform;
    reach_memo reach;
    rank_memo rank;
    dim_memo dims[MEMO_AXES];
} value_memo;

/* One per index: a memo per value entry, allocated when first needed, so an
 * index costs one pointer per value and a memo per value actually visited. */
typedef struct trace_cache {
    value_memo **memo;
    size_t n;
} trace_cache;

static void trace_cache_free(void *analysis)
{
    trace_cache *c = analysis;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->memo[i])
            continue;
        for (int a = 0; a < MEMO_AXES; a++)
            dim_info_clear(&c->memo[i]->dims[a].dim);
        free(c->memo[i]);
    }
    free(c->memo);
    free(c);
}

/* The memo of entry `e` of scope `o`'s index, or NULL when out of memory
 * (the caller then computes without one). The cache is logically part of
 * the index, which the analysis otherwise only reads: hence the casts. */
static value_memo *memo_of(const scope *o, const value_entry *e)
{
    graph_index *gi = (graph_index *)&o->index;
    trace_cache *c = gi->analysis;
    if (!c) {
        c = calloc(1, sizeof *c);
        value_memo **memo = c ? calloc(gi->n_values ? gi->n_values : 1, sizeof *memo) : NULL;
        if (!memo) {
            free(c);
            return NULL;
        }
        *c = (trace_cache){ memo, gi->n_values };
        gi->analysis = c;
        gi->analysis_free = trace_cache_free;
    }
    size_t at = (size_t)(e - gi->values);
    if (at >= c->n)
        return NULL;
    if (!c->memo[at])
        c->memo[at] = calloc(1, sizeof *c->memo[at]);
    return c->memo[at];
}

/* A finished answer may be reused at `depth` unless the depth bound cut it
 * short and this walk has more room left than the one that computed it. */
static bool memo_reusable(unsigned char state, bool cut, int computed_at, int depth)
{
    return state == MEMO_DONE && (!cut || depth >= computed_at);
}

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

/* The declarations of a value, in the order they are trusted: graph input,
 * value_info, graph output. Fills `out` and returns how many there are. */
static size_t declarations(const scope *o, const value_entry *e,
                           const Onnx__ValueInfoProto *out[3])
{
    const Onnx__GraphProto *g = o->graph;
    size_t n = 0;
    if (e->graph_input >= 0)
        out[n++] = g->input[e->graph_input];
    if (e->value_info >= 0)
        out[n++] = g->value_info[e->value_info];
    if (e->graph_output >= 0)
        out[n++] = g->output[e->graph_output];
    return n;
}

/* The declared shape of a value (graph input, value_info or output). */
static const Onnx__TensorShapeProto *declared_shape(const scope *o, const value_entry *e)
{
    const Onnx__ValueInfoProto *decl[3];
    const Onnx__TensorShapeProto *sh = NULL;
    for (size_t i = 0, n = declarations(o, e, decl); !sh && i < n; i++)
        sh = value_info_shape(decl[i]);
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
    const Onnx__ValueInfoProto *decl[3];
    int32_t t = 0;
    for (size_t i = 0, n = declarations(o, e, decl); !t && i < n; i++)
        t = value_info_elem_type(decl[i]);
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

/* The row a Gather on axis 0 reads with a constant non-negative scalar (or
 * one-element) index. */
static bool gather_row(const scope *s, const Onnx__NodeProto *g, int64_t *row)
{
    if (!op_is(g, "Gather") || g->n_input < 2 || node_attr_int(g, "axis", 0) != 0)
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
    if (!op_is(sc, "ScatterND") || !default_domain(sc) || sc->n_input < 3)
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
    static const char *const branches[2] = { "then_branch", "else_branch" };
    const char *input = NULL;
    for (int b = 0; b < 2; b++) {
        const Onnx__AttributeProto *a = node_attr(if_node, branches[b]);
        const scope *bs = a && a->g ? scope_of_graph(w->tree, a->g) : NULL;
        if (!bs || slot < 0 || (size_t)slot >= a->g->n_output)
            return NULL;
        trace_path ignored = { .n = 0 };
        const char *in =
            view_chain_input(w, bs, str_or_empty(a->g->output[slot]->name), &ignored);
        if (!in || (input && strcmp(in, input)))
            return NULL;
        input = in;
    }
    return input;
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
        if (default_domain(p) && op_is(p, "If") && w->tree) {
            path_push(path, p);
            return view_through_if(w, p, e->producer_slot);
        }
        if (!default_domain(p) || !op_in(p, view_ops) || p->n_input == 0)
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
    if (!default_domain(p))
        return;
    if (op_is(p, "Constant")) {
        m->ok = constant_node_uniform(p, &m->u);
    } else if (op_is(p, "ConstantOfShape")) {
        m->ok = constant_of_shape_uniform(p, &m->u);
    } else if (p->n_input == 0) {
        return;
    } else if (op_in(p, uniform_keeping_ops)) {
        const uniform_memo *in = resolve_uniform(o, str_or_empty(p->input[0]), depth + 1);
        m->ok = in->ok;
        m->cut = in->cut;
        m->u = in->u;
        m->from = in->ok ? in : NULL;
        m->blocker = in->blocker ? in->blocker : p;
    } else if (op_is(p, "Cast")) {
        resolve_cast(m, o, p, depth);
    } else if (op_is(p, "Concat")) {
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
    value_memo *vm = memo_of(o, e);
    if (!vm)
        return &not_uniform;
    uniform_memo *m = &vm->uniform;
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
    const uniform_memo *m = resolve_uniform(s, value, 0);
    if (m->ok) {
        out->kind = SOURCE_CONSTANT;
        out->node = p;
        out->uniform = true;
        out->elem_type = m->u.elem_type;
        memcpy(out->fill, m->u.bytes, m->u.size);
        uniform_path(m, &path);
        path_describe(&path, out->chain, sizeof out->chain);
        return true;
    }
    const Onnx__NodeProto *blocker = m->blocker ? m->blocker : p;
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
        if (!default_domain(n) || !op_in(n, data_movement_ops))
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
    value_memo *vm = memo_of(s, e);
    if (!vm)
        return NULL;
    reach_memo *m = &vm->reach;
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
/* Ops on [N, C, spatial...] whose output keeps input 0's rank and batch N
 * (axis 0); the other axes change. */
static const char *const batch_keeping_ops[] = { "Conv", "ConvTranspose", "ConvInteger",
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
     * and record which of its axes the traced dimension is. Those walks are
     * not memoized (their answer is not a dimension); a step budget bounds
     * each. */
    bool to_input;
    int budget;
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
 * a recurrent node). */
static const Onnx__NodeProto *shape_producer(const scope *s, const char *value,
                                             const scope **owner, int *slot)
{
    const value_entry *e = scope_lookup(s, value, owner);
    if (!e || e->producer < 0)
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

static int64_t compute_rank(shape_query *q, const scope *s, const char *value,
                            const scope *o, const value_entry *e, int depth)
{
    const Onnx__TensorShapeProto *sh = declared_shape(o, e);
    if (sh)
        return (int64_t)sh->n_dim;
    const Onnx__TensorProto *t = constant_tensor(s, value);
    if (t)
        return (int64_t)t->n_dims;
    int slot;
    const Onnx__NodeProto *p = shape_producer(s, value, &o, &slot);
    if (!p || p->n_input == 0)
        return -1;
    const char *in0 = str_or_empty(p->input[0]);
    if (recurrent_op_of(p))
        return slot == 0 ? 4 : 3;
    if (op_in(p, same_shape_ops) || op_is(p, "Transpose") || op_is(p, "Concat") ||
        op_is(p, "Slice") || op_in(p, batch_keeping_ops))
        return infer_rank(q, o, in0, depth + 1);
    if (op_is(p, "MatMul") || op_in(p, broadcast_ops))
        return rank_of_broadcast(q, o, p, depth);
    if (op_is(p, "Gemm"))
        return 2;
    int64_t *vals = NULL, rank = -1;
    size_t n = 0;
    if (op_in(p, reduce_ops) && node_attr_int(p, "keepdims", 1) != 0) {
        rank = infer_rank(q, o, in0, depth + 1);
    } else if (op_in(p, reduce_ops) && int_list(o, p, "axes", 1, &vals, &n)) {
        int64_t r = infer_rank(q, o, in0, depth + 1);
        rank = r >= (int64_t)n ? r - (int64_t)n : -1;
    } else if ((op_is(p, "Squeeze") || op_is(p, "Unsqueeze")) &&
               int_list(o, p, "axes", 1, &vals, &n)) {
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

/* The rank of `value`, or -1 when unknown; memoized. */
static int64_t infer_rank(shape_query *q, const scope *s, const char *value, int depth)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e)
        return -1;
    if (depth > MAX_TRACE_DEPTH) {
        q->cut = true;
        return -1;
    }
    value_memo *vm = memo_of(o, e);
    rank_memo *m = vm ? &vm->rank : NULL;
    if (m && m->state == MEMO_BUSY)
        return -1; /* a cycle */
    if (m && memo_reusable(m->state, m->cut, m->depth, depth)) {
        q->cut |= m->cut;
        return m->rank;
    }
    if (m)
        m->state = MEMO_BUSY;
    bool outer_cut = q->cut;
    q->cut = false;
    int64_t rank = compute_rank(q, s, value, o, e, depth);
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
    *rank = infer_rank(q, s, str_or_empty(p->input[0]), depth + 1);
    return *rank >= 0 && int_list(s, p, "axes", 1, axes, n);
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

/* For a broadcasting op: an operand of the output's rank whose dimension is
 * a name or larger than 1 gives the output's (the others are equal or 1);
 * one where every operand has 1 is 1. Constants count like the others. */
static bool through_broadcast(shape_query *q, const scope *s, const Onnx__NodeProto *p,
                              int64_t axis, int depth, dim_info *out)
{
    int64_t out_rank = rank_of_broadcast(q, s, p, depth);
    if (out_rank < 0)
        return true;
    size_t ones = 0, operands = 0;
    for (size_t i = 0; i < p->n_input; i++) {
        const char *in = str_or_empty(p->input[i]);
        int64_t r = infer_rank(q, s, in, depth + 1);
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
    const Onnx__NodeProto *p = shape_producer(s, value, &o, &slot);
    if (!p || p->n_input == 0)
        return true;
    const char *in0 = str_or_empty(p->input[0]);
    if (recurrent_op_of(p))
        return through_recurrent(q, o, p, slot, axis, depth, out);
    if (op_in(p, same_shape_ops))
        return infer_dim_at(q, o, in0, axis, depth + 1, out);
    if (op_in(p, batch_keeping_ops))
        return axis != 0 || infer_dim_at(q, o, in0, 0, depth + 1, out);
    if (op_in(p, reduce_ops))
        return through_removed_axes(q, o, p, node_attr_int(p, "keepdims", 1) != 0, axis, depth,
                                    out);
    if (op_is(p, "Squeeze"))
        return through_removed_axes(q, o, p, false, axis, depth, out);
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

/* Dimension `axis` of `value` (entry e of scope o) into *out (cleared);
 * false when out of memory. */
static bool compute_dim(shape_query *q, const scope *s, const char *value, const scope *o,
                        const value_entry *e, int64_t axis, int depth, dim_info *out)
{
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

static bool dim_copy(dim_info *to, const dim_info *from)
{
    dim_info_clear(to);
    *to = *from;
    to->param = NULL;
    return !from->param || (to->param = strdup(from->param)) != NULL;
}

/* trace_axis_to_input's step: a main-graph input ends the walk, anything
 * else is followed through its producer. */
static bool walk_to_input(shape_query *q, const scope *s, const char *value, const scope *o,
                          const value_entry *e, int64_t axis, int depth, dim_info *out)
{
    if (--q->budget <= 0)
        return true;
    if (o->parent == NULL && e->graph_input >= 0 && e->initializer < 0) {
        q->input = e->name;
        q->input_axis = axis;
        return true;
    }
    return through_producer(q, s, value, axis, depth, out);
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
    if (depth > MAX_TRACE_DEPTH) {
        q->cut = true;
        return true;
    }
    if (q->to_input)
        return walk_to_input(q, s, value, o, e, axis, depth, out);
    value_memo *vm = axis < MEMO_AXES ? memo_of(o, e) : NULL;
    dim_memo *m = vm ? &vm->dims[axis] : NULL;
    if (m && m->state == MEMO_BUSY)
        return true; /* a cycle */
    if (m && memo_reusable(m->state, m->cut, m->depth, depth)) {
        q->cut |= m->cut;
        return dim_copy(out, &m->dim);
    }
    if (!m)
        return compute_dim(q, s, value, o, e, axis, depth, out);
    dim_info_clear(&m->dim);
    m->state = MEMO_BUSY;
    bool outer_cut = q->cut;
    q->cut = false;
    bool ok = compute_dim(q, s, value, o, e, axis, depth, out);
    m->cut = q->cut;
    m->depth = depth;
    q->cut |= outer_cut;
    m->state = ok && dim_copy(&m->dim, out) ? MEMO_DONE : MEMO_NONE;
    return ok && m->state == MEMO_DONE;
}

bool trace_axis_to_input(const scope *s, const char *value, int64_t axis, const char **input,
                         int64_t *input_axis)
{
    shape_query q = { .to_input = true, .budget = 10000 };
    dim_info unused = { 0 };
    bool ok = infer_dim_at(&q, s, value, axis, 0, &unused);
    dim_info_clear(&unused);
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
