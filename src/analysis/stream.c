/* The time axis followed forward (analysis/stream.h): the walk over the
 * main graph in order, the time state of each value, and the findings
 * (blockers, context needs, the chunk multiple). The op handlers are in
 * stream_layout.c and stream_ops.c, dimensions in stream_dims.c.
 *
 * Each value gets a time state: none (it does not vary along time), an axis
 * (time is that axis, intact), merged (time was folded with the dimensions
 * before it into one axis, as a dual-path model folds it into the batch; a
 * Reshape can split it back out), or unknown (past an op the analysis does
 * not know, which is reported once, where it is met). */
#include "analysis/stream_walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/memo.h"
#include "util/array.h"
#include "recurrent_ops.h"
#include "util/strbuf.h"

/* A time state is kept in up to three memo entries of the value
 * (MEMO_SLOT_STREAM), each only where it is not all zeros: key 0 what every
 * state carrying time has (16 bytes), key 1 the frames a Pad added (24), key
 * 2 what only a merged state has (88). A value with none has the zeroed
 * state, T_NONE, and costs no memory: most values of a graph never carry
 * time, and most that do are neither padded nor merged. */
enum { STREAM_CORE, STREAM_PADS, STREAM_MERGED, STREAM_KEYS };

typedef struct time_core {
    unsigned char kind;
    bool front_cached;
    int axis;
    int64_t scale;
} time_core;

typedef struct time_pads {
    int64_t pad_front, pad_back;
    const Onnx__NodeProto *padded_by;
} time_pads;

typedef struct time_merged {
    mono outer, whole;
    const Onnx__NodeProto *merged_by;
} time_merged;

static bool mono_is_zero(const mono *m)
{
    bool zero = !m->ok && !m->n && !m->coef;
    for (int i = 0; i < MONO_SYMBOLS; i++)
        zero &= !m->sym[i];
    return zero;
}

static const value_entry *stream_value(const scope *s, const char *value, const scope **o)
{
    return *value ? scope_lookup(s, value, o) : NULL;
}

/* The time state of entry e of scope o (none when e is NULL). */
static time_state state_at(const scope *o, const value_entry *e)
{
    const time_core *c = e ? memo_entry_find(o, e, MEMO_SLOT_STREAM, STREAM_CORE) : NULL;
    const time_pads *p = e ? memo_entry_find(o, e, MEMO_SLOT_STREAM, STREAM_PADS) : NULL;
    const time_merged *m = e ? memo_entry_find(o, e, MEMO_SLOT_STREAM, STREAM_MERGED) : NULL;
    time_state t = { .kind = T_NONE };
    if (c) {
        t.kind = c->kind;
        t.front_cached = c->front_cached;
        t.axis = c->axis;
        t.scale = c->scale;
    }
    if (p) {
        t.pad_front = p->pad_front;
        t.pad_back = p->pad_back;
        t.padded_by = p->padded_by;
    }
    if (m) {
        t.outer = m->outer;
        t.whole = m->whole;
        t.merged_by = m->merged_by;
    }
    return t;
}

/* The time state of a value; none for an unknown name (or out of memory). */
time_state get_state(stream_walk *w, const scope *s, const char *value)
{
    (void)w;
    const scope *o = NULL;
    const value_entry *e = stream_value(s, value, &o);
    return state_at(o, e);
}

const value_entry *view_value(const node_view *v, size_t k, bool output, const scope **o)
{
    const graph_index *gi = &v->s->index;
    const int *ids = output ? graph_index_node_outputs(gi, v->at)
                            : graph_index_node_inputs(gi, v->at);
    if (ids[k] < 0)
        return NULL;
    const value_entry *e = &gi->values[ids[k]];
    if (e->producer >= 0 || e->graph_input >= 0 || e->initializer >= 0) {
        *o = v->s;
        return e;
    }
    return v->s->parent ? scope_lookup(v->s->parent, e->name, o) : NULL; /* an outer value */
}

time_state view_state(const node_view *v, size_t k)
{
    const scope *o = NULL;
    const value_entry *e = view_value(v, k, false, &o);
    return state_at(o, e);
}

int64_t view_rank(const node_view *v, size_t k)
{
    const scope *o = NULL;
    const value_entry *e = view_value(v, k, false, &o);
    return e ? infer_rank_of(o, e) : -1;
}

/* One part of the state stored: into the entry the value has, or a new one
 * unless the part is all zeros (what no entry means). */
static void *state_part(stream_walk *w, const scope *o, const value_entry *e, int key,
                        size_t size, bool zero)
{
    void *have = memo_entry_find(o, e, MEMO_SLOT_STREAM, key);
    if (have || zero)
        return have;
    have = memo_entry_keyed(o, e, MEMO_SLOT_STREAM, key, STREAM_KEYS, size, NULL);
    if (!have)
        w->oom = true; /* the walk needs the state: out of memory ends the analysis */
    return have;
}

static void set_state_at(stream_walk *w, const scope *o, const value_entry *e, time_state t)
{
    if (!e)
        return;
    time_core *c = state_part(w, o, e, STREAM_CORE, sizeof *c,
                              !t.kind && !t.front_cached && !t.axis && !t.scale);
    if (c)
        *c = (time_core){ t.kind, t.front_cached, t.axis, t.scale };
    time_pads *p = state_part(w, o, e, STREAM_PADS, sizeof *p,
                              !t.pad_front && !t.pad_back && !t.padded_by);
    if (p)
        *p = (time_pads){ t.pad_front, t.pad_back, t.padded_by };
    time_merged *m = state_part(w, o, e, STREAM_MERGED, sizeof *m,
                                mono_is_zero(&t.outer) && mono_is_zero(&t.whole) &&
                                    !t.merged_by);
    if (m)
        *m = (time_merged){ t.outer, t.whole, t.merged_by };
}

void set_state(stream_walk *w, const scope *s, const char *value, time_state t)
{
    const scope *o = NULL;
    const value_entry *e = stream_value(s, value, &o);
    set_state_at(w, o, e, t);
}


int stream_symbol(stream_walk *w, const char *key)
{
    int id = strmap_get(&w->symbols, key);
    if (id >= 0)
        return id;
    size_t at = (size_t)w->n_symbols;
    char *param = strncmp(key, "p:", 2) ? NULL : strdup(key + 2);
    if ((!param && !strncmp(key, "p:", 2)) ||
        !stream_grow((void **)&w->symbol_params, at, sizeof *w->symbol_params)) {
        free(param);
        w->oom = true;
        return SYM_TIME + 1 + (int)at; /* never stored: equal to nothing */
    }
    w->symbol_params[at] = param;
    id = SYM_TIME + 1 + w->n_symbols++;
    if (!strmap_put(&w->symbols, key, id))
        w->oom = true;
    return id;
}

/* ---- findings ---------------------------------------------------------------- */

bool stream_grow(void **array, size_t n, size_t size)
{
    void *grown = owned_array_grow(*array, n, size);
    if (grown)
        *array = grown;
    return grown != NULL;
}

void stream_block(stream_walk *w, const scope *s, const Onnx__NodeProto *node, bool unknown,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

void stream_block(stream_walk *w, const scope *s, const Onnx__NodeProto *node, bool unknown,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *reason = str_vformat(fmt, ap);
    va_end(ap);
    stream_analysis *a = w->out;
    stream_blocker b = { strdup(s->path), strdup(str_or_empty(node->op_type)),
                         strdup(str_or_empty(node->name)), unknown, reason };
    if (!b.graph || !b.op || !b.name || !reason ||
        !stream_grow((void **)&a->blockers, a->n_blockers, sizeof *a->blockers)) {
        free(b.graph);
        free(b.op);
        free(b.name);
        free(reason);
        w->oom = true;
        return;
    }
    a->blockers[a->n_blockers++] = b;
}

static size_t gcd(size_t a, size_t b) { return b ? gcd(b, a % b) : a; }

void need_multiple(stream_walk *w, int64_t k)
{
    size_t m = w->out->chunk_multiple, kk = k > 0 ? (size_t)k : 1;
    w->out->chunk_multiple = m / gcd(m, kk) * kk;
}

int stream_recurrent_class(const stream_analysis *a, const Onnx__NodeProto *node)
{
    size_t c = 0;
    return ptrmap_get(&a->classes, node, &c) ? (int)c : 0;
}

const char *stream_batch_name(const stream_analysis *a, const Onnx__NodeProto *node)
{
    size_t i;
    return ptrmap_get(&a->batch_names, node, &i) ? a->names[i] : NULL;
}

/* ---- node handlers' helpers ---------------------------------------------- */

const char *op_name(const Onnx__NodeProto *n) { return str_or_empty(n->op_type); }

int64_t rank_of_value(const scope *s, const char *value)
{
    return *value ? infer_rank(s, value) : -1;
}

void set_outputs(stream_walk *w, const node_view *v, time_state t)
{
    for (size_t i = 0; i < v->n->n_output; i++) {
        const scope *o;
        const value_entry *e = view_value(v, i, true, &o);
        set_state_at(w, o, e, t);
    }
}

void unknown_op(stream_walk *w, const node_view *v, const char *why)
{
    stream_block(w, v->s, v->n, true, "%s", why);
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
}

/* A padded value reaching anything but a convolution or pool. */
bool refuse_padded(stream_walk *w, const node_view *v, const time_state *t)
{
    if (!t->pad_front && !t->pad_back)
        return false;
    if (t->front_cached)
        stream_block(w, v->s, v->n, false, "reads frames the model's own cache put before the time axis");
    else
        stream_block(w, v->s, v->n, false, "reads the %lld frame(s) a Pad added along time",
              (long long)(t->pad_front + t->pad_back));
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    return true;
}

/* ---- the walk ------------------------------------------------------------------------------ */

static bool subgraph_reads_time(stream_walk *w, const scope *s, const Onnx__GraphProto *g);

typedef struct subgraph_probe {
    stream_walk *w;
    const scope *s;
    bool time;
} subgraph_probe;

static bool probe_subgraph(const Onnx__GraphProto *g, void *ctx)
{
    subgraph_probe *p = ctx;
    p->time |= subgraph_reads_time(p->w, p->s, g);
    return true;
}

/* Does a subgraph read (at any depth) a value of `s` that carries time? */
static bool subgraph_reads_time(stream_walk *w, const scope *s, const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            time_state t = get_state(w, s, node_input(n, k));
            if (carries_time(&t))
                return true;
        }
        subgraph_probe probe = { w, s, false };
        for_each_subgraph(n, probe_subgraph, &probe);
        if (probe.time)
            return true;
    }
    return false;
}

static bool has_subgraph(const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->g || n->attribute[i]->n_graphs)
            return true;
    return false;
}

static void visit_node(stream_walk *w, const scope *s, size_t at)
{
    const Onnx__NodeProto *n = s->graph->node[at];
    node_view v = { .s = s, .n = n, .at = at };
    bool unknown_input = false;
    for (size_t i = 0; i < n->n_input; i++) {
        time_state t = view_state(&v, i);
        if (!carries_time(&t))
            continue;
        if (!v.time_inputs++ || i == 0)
            v.in0 = t; /* input 0's, else the first that carries time */
        unknown_input |= t.kind == T_UNKNOWN;
    }
    if (has_subgraph(n)) {
        subgraph_probe probe = { w, s, false };
        for_each_subgraph(n, probe_subgraph, &probe);
        if (probe.time || v.time_inputs) {
            unknown_op(w, &v, "a subgraph op on time-carrying values is not analysed");
            return;
        }
        return;
    }
    if (!v.time_inputs)
        return; /* nothing here varies along time */
    if (unknown_input) {
        set_outputs(w, &v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    const recurrent_op *op = recurrent_op_of(n);
    if (op) {
        on_recurrent(w, &v, op);
        return;
    }
    node_handler h = handler_of(n);
    if (!h) {
        char why[160];
        snprintf(why, sizeof why, "the analysis does not know how %.64s treats the time axis",
                 op_name(n));
        unknown_op(w, &v, why);
        return;
    }
    /* a Slice may keep the last frames of a cache Concat (the model's own cache) */
    bool window = h == on_conv || h == on_pad || h == on_slice;
    if (!window && refuse_padded(w, &v, &v.in0))
        return;
    bool first_is_time = n->n_input && carries_time(&(time_state){ .kind = view_state(&v, 0).kind });
    if (!first_is_time && h != on_elementwise && h != on_matmul && h != on_concat) {
        unknown_op(w, &v, "time reaches it through an input other than its first");
        return;
    }
    h(w, &v);
}

/* Main-graph outputs must carry time intact (or not at all). */
static void check_outputs(stream_walk *w, const scope *main_scope)
{
    const Onnx__GraphProto *g = main_scope->graph;
    for (size_t i = 0; i < g->n_output; i++) {
        time_state t = get_state(w, main_scope, str_or_empty(g->output[i]->name));
        if (t.kind == T_MERGED && t.merged_by)
            stream_block(w, main_scope, t.merged_by, false,
                  "merges time with another axis for good (output '%s')",
                  str_or_empty(g->output[i]->name));
        else if ((t.pad_front || t.pad_back) && t.padded_by && !t.front_cached)
            stream_block(w, main_scope, t.padded_by, false, "adds frames along time to output '%s'",
                  str_or_empty(g->output[i]->name));
    }
}

static void seed_sources(stream_walk *w, const scope *main_scope,
                         const rnnstate_time_axis *sources, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *name = sources[i].input;
        time_state t = { .kind = T_AXIS, .axis = (int)sources[i].axis, .scale = 1 };
        set_state(w, main_scope, name, t);
    }
}

bool stream_analyse(const scope_tree *tree, int64_t opset, const rnnstate_time_axis *sources,
                    size_t n_sources, stream_analysis *out)
{
    memset(out, 0, sizeof *out);
    out->classes = (ptrmap)PTRMAP_INIT;
    out->batch_names = (ptrmap)PTRMAP_INIT;
    out->chunk_multiple = 1;
    if (!n_sources || !tree->n)
        return true;
    out->analysed = true;
    stream_walk w = { .tree = tree, .opset = opset, .out = out, .symbols = STRMAP_INIT,
                      .shaped_keys = STRMAP_INIT,
                      .chomps = PTRMAP_INIT };
    const scope *main_scope = tree->scopes[0];
    seed_sources(&w, main_scope, sources, n_sources);
    for (size_t k = 0; !w.oom && k < main_scope->graph->n_node; k++) {
        visit_node(&w, main_scope, k);
    }
    if (!w.oom)
        check_outputs(&w, main_scope);
    strmap_free(&w.symbols);
    for (int i = 0; i < w.n_symbols; i++)
        free(w.symbol_params[i]);
    free(w.symbol_params);
    strmap_free(&w.shaped_keys);
    free(w.shaped);
    ptrmap_free(&w.chomps);
    if (w.oom)
        stream_analysis_free(out);
    return !w.oom;
}

void stream_analysis_free(stream_analysis *a)
{
    for (size_t i = 0; i < a->n_blockers; i++) {
        free(a->blockers[i].graph);
        free(a->blockers[i].op);
        free(a->blockers[i].name);
        free(a->blockers[i].reason);
    }
    for (size_t i = 0; i < a->n_needs; i++) {
        free(a->needs[i].op);
        free(a->needs[i].name);
    }
    for (size_t i = 0; i < a->n_names; i++)
        free(a->names[i]);
    free(a->blockers);
    free(a->needs);
    free(a->names);
    ptrmap_free(&a->classes);
    ptrmap_free(&a->batch_names);
    memset(a, 0, sizeof *a);
}
