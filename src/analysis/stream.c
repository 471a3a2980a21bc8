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
#include "array.h"
#include "recurrent_ops.h"
#include "strbuf.h"

static time_state *state_of(stream_walk *w, const scope *s, const char *value)
{
    const scope *o;
    const value_entry *e = *value ? scope_lookup(s, value, &o) : NULL;
    if (!e)
        return NULL;
    time_state *t = memo_entry(o, e, MEMO_SLOT_STREAM, sizeof(time_state), NULL);
    if (!t)
        w->oom = true; /* the walk needs the state: out of memory ends the analysis */
    return t;
}

/* The time state of a value; none for an unknown name (or out of memory). */
time_state get_state(stream_walk *w, const scope *s, const char *value)
{
    time_state *t = state_of(w, s, value);
    return t ? *t : (time_state){ .kind = T_NONE };
}

void set_state(stream_walk *w, const scope *s, const char *value, time_state t)
{
    time_state *slot = state_of(w, s, value);
    if (slot)
        *slot = t;
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
    for (size_t i = 0; i < v->n->n_output; i++)
        set_state(w, v->s, node_output(v->n, i), t);
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

static void visit_node(stream_walk *w, const scope *s, const Onnx__NodeProto *n)
{
    node_view v = { .s = s, .n = n };
    bool unknown_input = false;
    for (size_t i = 0; i < n->n_input; i++) {
        time_state t = get_state(w, s, node_input(n, i));
        if (!carries_time(&t))
            continue;
        if (!v.time_inputs++ || i == 0)
            v.in0 = t; /* input 0's, else the first that carries time */
        unknown_input |= t.kind == T_UNKNOWN;
    }
    if (has_subgraph(n)) {
        subgraph_probe probe = { w, s, false };
        for_each_subgraph(n, probe_subgraph, &probe);
        if (probe.time || v.time_inputs)
            return unknown_op(w, &v, "a subgraph op on time-carrying values is not analysed");
        return;
    }
    if (!v.time_inputs)
        return; /* nothing here varies along time */
    if (unknown_input)
        return set_outputs(w, &v, (time_state){ .kind = T_UNKNOWN });
    const recurrent_op *op = recurrent_op_of(n);
    if (op)
        return on_recurrent(w, &v, op);
    node_handler h = handler_of(n);
    if (!h) {
        char why[160];
        snprintf(why, sizeof why, "the analysis does not know how %.64s treats the time axis",
                 op_name(n));
        return unknown_op(w, &v, why);
    }
    /* a Slice may keep the last frames of a cache Concat (the model's own cache) */
    bool window = h == on_conv || h == on_pad || h == on_slice;
    if (!window && refuse_padded(w, &v, &v.in0))
        return;
    bool first_is_time = carries_time(&(time_state){ .kind = get_state(w, s, node_input(n, 0)).kind });
    if (!first_is_time && h != on_elementwise && h != on_matmul && h != on_concat)
        return unknown_op(w, &v, "time reaches it through an input other than its first");
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
        visit_node(&w, main_scope, main_scope->graph->node[k]);
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
