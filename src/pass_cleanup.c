/* The cleanup pass: removes what only fed the initial states the state pass
 * replaced (PyTorch's Shape -> Gather -> Concat -> ConstantOfShape -> Slice
 * chains, Constants, initializers). It starts from the values the state pass
 * detached and walks upstream, so nodes that were dead in the original model
 * are left as the exporter wrote them. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct cleanup {
    rewrite_ctx *ctx;
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
    return strmap_get(&gi->by_name, name);
}

static bool unread(const cleanup *c, int v)
{
    const value_entry *e = &c->ctx->index.values[v];
    return c->readers[v] == 0 && e->graph_output < 0 && e->graph_input < 0 && !e->read_by_subgraph;
}

static bool node_outputs_unread(const cleanup *c, const Onnx__NodeProto *node)
{
    for (size_t o = 0; o < node->n_output; o++) {
        int v = entry_of(&c->ctx->index, str_or_empty(node->output[o]));
        if (v >= 0 && !unread(c, v))
            return false;
    }
    return true;
}

static void kill_node(cleanup *c, int n)
{
    const Onnx__NodeProto *node = c->ctx->graph->node[n];
    c->dead_node[n] = true;
    c->removed_nodes++;
    for (size_t i = 0; i < node->n_input; i++) {
        int v = entry_of(&c->ctx->index, str_or_empty(node->input[i]));
        if (v < 0)
            continue;
        c->readers[v]--;
        c->stack[c->n_stack++] = v;
    }
}

static void examine(cleanup *c, int v)
{
    const value_entry *e = &c->ctx->index.values[v];
    if (!unread(c, v))
        return;
    if (e->producer >= 0 && !c->dead_node[e->producer] &&
        node_outputs_unread(c, c->ctx->graph->node[e->producer]))
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
            protobuf_c_message_free_unpacked(items[i], NULL);
        else
            items[kept++] = items[i];
    }
    return kept;
}

/* value_info entries of removed values would describe nothing: drop them. */
static void drop_stale_value_info(cleanup *c)
{
    Onnx__GraphProto *g = c->ctx->graph;
    bool *dead = calloc(g->n_value_info ? g->n_value_info : 1, sizeof *dead);
    if (!dead)
        return; /* harmless to keep them */
    for (size_t i = 0; i < g->n_value_info; i++) {
        int v = entry_of(&c->ctx->index, str_or_empty(g->value_info[i]->name));
        const value_entry *e = v >= 0 ? &c->ctx->index.values[v] : NULL;
        dead[i] = e && e->producer >= 0 && c->dead_node[e->producer];
    }
    g->n_value_info = compact((void **)g->value_info, g->n_value_info, dead);
    free(dead);
}

static rnnstate_status run_cleanup(cleanup *c)
{
    rewrite_ctx *ctx = c->ctx;
    graph_index *gi = &ctx->index;
    for (size_t v = 0; v < gi->n_values; v++)
        c->readers[v] = gi->values[v].n_consumers;
    for (size_t i = 0; i < ctx->n_detached; i++) {
        int v = entry_of(gi, ctx->detached[i]);
        if (v >= 0)
            c->stack[c->n_stack++] = v;
    }
    while (c->n_stack > 0)
        examine(c, c->stack[--c->n_stack]);
    drop_stale_value_info(c);
    Onnx__GraphProto *g = ctx->graph;
    g->n_node = compact((void **)g->node, g->n_node, c->dead_node);
    g->n_initializer = compact((void **)g->initializer, g->n_initializer, c->dead_init);
    if (c->removed_nodes || c->removed_inits)
        report_note(&ctx->report,
                    "removed %zu node%s and %zu initializer%s that only computed the replaced "
                    "initial states",
                    c->removed_nodes, c->removed_nodes == 1 ? "" : "s", c->removed_inits,
                    c->removed_inits == 1 ? "" : "s");
    return graph_index_build(gi, g) ? RNNSTATE_OK : ctx_oom(ctx);
}

rnnstate_status pass_cleanup(rewrite_ctx *ctx)
{
    if (!ctx->n_detached)
        return RNNSTATE_OK;
    graph_index *gi = &ctx->index;
    size_t reads = ctx->n_detached;
    for (size_t v = 0; v < gi->n_values; v++)
        reads += gi->values[v].n_consumers;
    cleanup c = { .ctx = ctx };
    c.readers = calloc(gi->n_values + 1, sizeof *c.readers);
    c.dead_node = calloc(ctx->graph->n_node + 1, sizeof *c.dead_node);
    c.dead_init = calloc(ctx->graph->n_initializer + 1, sizeof *c.dead_init);
    /* every value is pushed at most once per read of it, plus the seeds */
    c.stack = malloc((reads + 1) * sizeof *c.stack);
    rnnstate_status st = c.readers && c.dead_node && c.dead_init && c.stack ? run_cleanup(&c)
                                                                           : ctx_oom(ctx);
    free(c.readers);
    free(c.dead_node);
    free(c.dead_init);
    free(c.stack);
    return st;
}
