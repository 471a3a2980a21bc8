/* The cleanup pass: removes what only fed the initial states the state pass
 * replaced (PyTorch's Shape -> Gather -> Concat -> ConstantOfShape -> Slice
 * chains, Constants, initializers). It starts from the values the state pass
 * detached and walks upstream, in whichever graph defines each value, so
 * nodes that were dead in the original model are left as the exporter wrote
 * them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "util/arena.h"

typedef struct cleanup {
    rewrite_ctx *ctx;
    scope *sc;
    size_t *readers;     /* per index entry: readers that are still alive */
    bool *dead_node;
    bool *dead_init;
    int *stack;          /* index entries to examine */
    size_t n_stack;
    size_t removed_nodes;
    size_t removed_inits;
} cleanup;

static int entry_of(const graph_index *gi, const char *name)
{
    return graph_index_at(gi, name);
}

static bool unread(const cleanup *c, int v)
{
    const value_entry *e = &c->sc->index.values[v];
    return c->readers[v] == 0 && e->graph_output < 0 && e->graph_input < 0 && !e->read_by_subgraph;
}

static bool node_outputs_unread(const cleanup *c, const Onnx__NodeProto *node)
{
    for (size_t o = 0; o < node->n_output; o++) {
        int v = entry_of(&c->sc->index, str_or_empty(node->output[o]));
        if (v >= 0 && !unread(c, v))
            return false;
    }
    return true;
}

static void kill_node(cleanup *c, int n)
{
    const Onnx__NodeProto *node = c->sc->graph->node[n];
    c->dead_node[n] = true;
    c->removed_nodes++;
    for (size_t i = 0; i < node->n_input; i++) {
        int v = entry_of(&c->sc->index, str_or_empty(node->input[i]));
        if (v < 0)
            continue;
        c->readers[v]--;
        c->stack[c->n_stack++] = v;
    }
}

static void examine(cleanup *c, int v)
{
    const value_entry *e = &c->sc->index.values[v];
    if (!unread(c, v))
        return;
    if (e->producer >= 0 && !c->dead_node[e->producer] &&
        node_outputs_unread(c, c->sc->graph->node[e->producer]))
        kill_node(c, e->producer);
    if (e->initializer >= 0 && !c->dead_init[e->initializer]) {
        c->dead_init[e->initializer] = true;
        c->removed_inits++;
    }
}

/* Frees the marked elements of a protobuf-c message array and closes the gaps. */
static size_t compact(void **items, size_t n, const bool *dead)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (dead[i])
            arena_message_free(items[i]);
        else
            items[kept++] = items[i];
    }
    return kept;
}

/* The same for initializers, which may be lazy stubs the model tracks. */
static size_t compact_initializers(rnnstate_model *model, Onnx__TensorProto **items, size_t n,
                                   const bool *dead)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (dead[i])
            model_release_tensor(model, items[i]);
        else
            items[kept++] = items[i];
    }
    return kept;
}

/* value_info entries of removed values would describe nothing: drop them. */
static void drop_stale_value_info(cleanup *c)
{
    Onnx__GraphProto *g = c->sc->graph;
    bool *dead = calloc(g->n_value_info ? g->n_value_info : 1, sizeof *dead);
    if (!dead)
        return; /* harmless to keep them */
    for (size_t i = 0; i < g->n_value_info; i++) {
        int v = entry_of(&c->sc->index, str_or_empty(g->value_info[i]->name));
        const value_entry *e = v >= 0 ? &c->sc->index.values[v] : NULL;
        dead[i] = e && e->producer >= 0 && c->dead_node[e->producer];
    }
    g->n_value_info = compact((void **)g->value_info, g->n_value_info, dead);
    free(dead);
}

/* The detached values grouped by the scope that defines them (it may be
 * one enclosing the scope they were read in): the values of scope i are
 * seeds[first[i] .. first[i + 1]). Grouping them once keeps the pass linear
 * however many scopes and values there are. */
typedef struct seed_groups {
    size_t *first; /* n_scopes + 1 offsets */
    size_t *seeds;
} seed_groups;

static bool group_seeds(const rewrite_ctx *ctx, seed_groups *g)
{
    size_t n = ctx->scopes.n, *owner = malloc((ctx->n_detached + 1) * sizeof *owner);
    g->first = calloc(n + 2, sizeof *g->first);
    g->seeds = malloc((ctx->n_detached + 1) * sizeof *g->seeds);
    if (!owner || !g->first || !g->seeds) {
        free(owner);
        return false;
    }
    for (size_t i = 0; i < ctx->n_detached; i++) {
        const scope *o;
        owner[i] = SIZE_MAX;
        if (scope_lookup(ctx->detached[i].sc, ctx->detached[i].name, &o))
            ptrmap_get(&ctx->scopes.by_graph, o->graph, &owner[i]);
        if (owner[i] < n)
            g->first[owner[i] + 2]++;
    }
    for (size_t i = 2; i <= n + 1; i++)
        g->first[i] += g->first[i - 1];
    for (size_t i = 0; i < ctx->n_detached; i++)
        if (owner[i] < n)
            g->seeds[g->first[owner[i] + 1]++] = i;
    free(owner);
    return true;
}

/* Removes what the detached values defined in `sc` alone kept alive; `seeds`
 * lists those values (indices into ctx->detached). */
static rnnstate_status clean_scope(rewrite_ctx *ctx, scope *sc, const size_t *seeds,
                                   size_t n_seeds, size_t *nodes, size_t *inits)
{
    graph_index *gi = &sc->index;
    size_t reads = n_seeds;
    for (size_t v = 0; v < gi->n_values; v++)
        reads += gi->values[v].n_consumers;
    cleanup c = { .ctx = ctx, .sc = sc };
    c.readers = calloc(gi->n_values + 1, sizeof *c.readers);
    c.dead_node = calloc(sc->graph->n_node + 1, sizeof *c.dead_node);
    c.dead_init = calloc(sc->graph->n_initializer + 1, sizeof *c.dead_init);
    /* every value is pushed at most once per read of it, plus the seeds */
    c.stack = malloc((reads + 1) * sizeof *c.stack);
    bool ok = c.readers && c.dead_node && c.dead_init && c.stack;
    for (size_t v = 0; ok && v < gi->n_values; v++)
        c.readers[v] = gi->values[v].n_consumers;
    for (size_t i = 0; ok && i < n_seeds; i++) {
        int v = entry_of(gi, ctx->detached[seeds[i]].name);
        if (v >= 0)
            c.stack[c.n_stack++] = v;
    }
    while (ok && c.n_stack > 0)
        examine(&c, c.stack[--c.n_stack]);
    if (ok && (c.removed_nodes || c.removed_inits)) {
        drop_stale_value_info(&c);
        Onnx__GraphProto *g = sc->graph;
        g->n_node = compact((void **)g->node, g->n_node, c.dead_node);
        g->n_initializer =
            compact_initializers(sc->model, g->initializer, g->n_initializer, c.dead_init);
    }
    *nodes += c.removed_nodes;
    *inits += c.removed_inits;
    free(c.readers);
    free(c.dead_node);
    free(c.dead_init);
    free(c.stack);
    return ok ? RNNSTATE_OK : ctx_oom(ctx);
}

rnnstate_status pass_cleanup(rewrite_ctx *ctx)
{
    if (!ctx->n_detached)
        return RNNSTATE_OK;
    size_t nodes = 0, inits = 0;
    if (!scope_tree_refresh(&ctx->scopes))
        return ctx_oom(ctx);
    seed_groups groups = { NULL, NULL };
    rnnstate_status st = group_seeds(ctx, &groups) ? RNNSTATE_OK : ctx_oom(ctx);
    /* Inner graphs first: removing a reader there can free a value outside.
     * A scope whose graph changed is marked stale with the scopes around it
     * (scope_mark_changed()): nothing in this pass reads its index again,
     * and the scopes around it are reindexed once, just before they are
     * cleaned, not once per changed scope inside them, which with many
     * subgraphs would be quadratic. */
    for (size_t i = ctx->scopes.n; st == RNNSTATE_OK && i-- > 0;) {
        size_t before = nodes + inits;
        scope *sc = ctx->scopes.scopes[i];
        if (!scope_refresh(sc))
            st = ctx_oom(ctx);
        if (st == RNNSTATE_OK)
            st = clean_scope(ctx, sc, groups.seeds + groups.first[i],
                             groups.first[i + 1] - groups.first[i], &nodes, &inits);
        if (st == RNNSTATE_OK && nodes + inits > before)
            scope_mark_changed(&ctx->scopes, sc);
    }
    free(groups.first);
    free(groups.seeds);
    if (st == RNNSTATE_OK && (nodes || inits))
        report_note(&ctx->report,
                    "removed %zu node%s and %zu initializer%s that only computed the replaced "
                    "initial states",
                    nodes, nodes == 1 ? "" : "s", inits, inits == 1 ? "" : "s");
    return st;
}
