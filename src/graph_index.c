#include "array.h"
#include "graph_index.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_build.h"

static value_entry *entry_for(graph_index *gi, const char *name)
{
    if (gi->n_values == gi->cap_values) {
        size_t cap = gi->cap_values ? gi->cap_values * 2 : 8;
        value_entry *grown = realloc(gi->values, cap * sizeof *grown);
        if (!grown)
            return NULL;
        gi->values = grown;
        gi->cap_values = cap;
    }
    int at = strmap_intern(&gi->by_name, name, (int)gi->n_values);
    if (at < 0)
        return NULL;
    if ((size_t)at < gi->n_values)
        return &gi->values[at];
    value_entry *e = &gi->values[gi->n_values++];
    *e = (value_entry){ .name = name, .producer = -1, .producer_slot = -1, .graph_input = -1,
                        .initializer = -1, .graph_output = -1, .value_info = -1 };
    return e;
}

/* Marks every value named inside a subgraph (at any depth) as read there.
 * Names that the subgraph defines itself are marked too: over-approximating
 * outer-scope reads only makes the cleanup pass keep a node it could drop. */
static bool mark_subgraph_reads(const Onnx__GraphProto *graph, void *ctx)
{
    graph_index *gi = ctx;
    for (size_t n = 0; n < graph->n_node; n++) {
        const Onnx__NodeProto *node = graph->node[n];
        for (size_t i = 0; i < node->n_input; i++) {
            int at = strmap_get(&gi->by_name, str_or_empty(node->input[i]));
            if (at >= 0)
                gi->values[at].read_by_subgraph = true;
        }
        if (!for_each_subgraph(node, mark_subgraph_reads, gi))
            return false;
    }
    for (size_t o = 0; o < graph->n_output; o++) {
        int at = strmap_get(&gi->by_name, str_or_empty(graph->output[o]->name));
        if (at >= 0)
            gi->values[at].read_by_subgraph = true;
    }
    return true;
}

/* Entries for the non-empty names of one of node n's lists: its outputs
 * (read_value NULL), recorded as produced by it; or its inputs, each read
 * counted and its value stored at read_value[(*k)++]. */
static bool index_node_names(graph_index *gi, char *const *names, size_t n_names, size_t n,
                             int *read_value, size_t *k)
{
    for (size_t slot = 0; slot < n_names; slot++) {
        const char *name = str_or_empty(names[slot]);
        if (!*name)
            continue;
        value_entry *e = entry_for(gi, name);
        if (!e)
            return false;
        if (read_value) {
            e->n_consumers++;
            read_value[(*k)++] = (int)(e - gi->values);
        } else {
            e->producer = (int)n;
            e->producer_slot = (int)slot;
        }
    }
    return true;
}

/* Producers, and which value each read (node input) names, in node order:
 * `read_value` has one entry per non-empty input. */
static bool index_producers(graph_index *gi, Onnx__GraphProto *g, int *read_value)
{
    size_t k = 0;
    for (size_t n = 0; n < g->n_node; n++) {
        const Onnx__NodeProto *node = g->node[n];
        if (!index_node_names(gi, node->output, node->n_output, n, NULL, NULL) ||
            !index_node_names(gi, node->input, node->n_input, n, read_value, &k))
            return false;
    }
    return true;
}

/* Every value's consumers, in node order, as slices of one array
 * (`consumer_store`) rather than an allocation per value. */
static void index_consumers(graph_index *gi, Onnx__GraphProto *g, const int *read_value)
{
    size_t at = 0, k = 0;
    for (size_t v = 0; v < gi->n_values; v++) {
        gi->values[v].consumers = gi->consumer_store + at;
        at += gi->values[v].n_consumers;
        gi->values[v].n_consumers = 0; /* refilled below */
    }
    for (size_t n = 0; n < g->n_node; n++) {
        const Onnx__NodeProto *node = g->node[n];
        for (size_t i = 0; i < node->n_input; i++) {
            if (!*str_or_empty(node->input[i]))
                continue;
            value_entry *e = &gi->values[read_value[k++]];
            e->consumers[e->n_consumers++] = (int)n;
        }
    }
}

static bool index_nodes(graph_index *gi, Onnx__GraphProto *g)
{
    size_t reads = 0;
    for (size_t n = 0; n < g->n_node; n++)
        reads += g->node[n]->n_input;
    int *read_value = malloc((reads ? reads : 1) * sizeof *read_value);
    gi->consumer_store = malloc((reads ? reads : 1) * sizeof *gi->consumer_store);
    bool ok = read_value && gi->consumer_store && index_producers(gi, g, read_value);
    if (ok)
        index_consumers(gi, g, read_value);
    free(read_value);
    return ok;
}

/* Records in the entry for `name` that it stands at position i of a list of
 * the graph; `field` (an offsetof value_entry) is the int that keeps it. */
static bool record_declaration(graph_index *gi, const char *name, size_t field, size_t i)
{
    value_entry *e = entry_for(gi, str_or_empty(name));
    if (!e)
        return false;
    *(int *)((char *)e + field) = (int)i;
    return true;
}

static bool record_value_infos(graph_index *gi, Onnx__ValueInfoProto *const *list, size_t n,
                               size_t field)
{
    for (size_t i = 0; i < n; i++)
        if (!record_declaration(gi, list[i]->name, field, i))
            return false;
    return true;
}

/* Entries are made in this order: inputs, initializers, outputs, value infos. */
static bool index_declarations(graph_index *gi, Onnx__GraphProto *g)
{
    bool ok = record_value_infos(gi, g->input, g->n_input, offsetof(value_entry, graph_input));
    for (size_t i = 0; ok && i < g->n_initializer; i++)
        ok = record_declaration(gi, g->initializer[i]->name, offsetof(value_entry, initializer), i);
    return ok &&
           record_value_infos(gi, g->output, g->n_output, offsetof(value_entry, graph_output)) &&
           record_value_infos(gi, g->value_info, g->n_value_info,
                              offsetof(value_entry, value_info));
}

bool graph_index_build(graph_index *gi, Onnx__GraphProto *graph)
{
    graph_index_free(gi);
    gi->graph = graph;
    bool ok = index_declarations(gi, graph) && index_nodes(gi, graph);
    for (size_t n = 0; ok && n < graph->n_node; n++)
        ok = for_each_subgraph(graph->node[n], mark_subgraph_reads, gi);
    if (!ok)
        graph_index_free(gi);
    return ok;
}

void graph_index_free(graph_index *gi)
{
    if (gi->analysis)
        gi->analysis_free(gi->analysis);
    free(gi->consumer_store);
    free(gi->values);
    strmap_free(&gi->by_name);
    *gi = (graph_index){ .by_name = STRMAP_INIT };
}

const value_entry *graph_index_find(const graph_index *gi, const char *name)
{
    int at = strmap_get(&gi->by_name, name);
    return at >= 0 ? &gi->values[at] : NULL;
}

bool graph_index_value_unused(const graph_index *gi, const char *name)
{
    const value_entry *e = graph_index_find(gi, name);
    return !e || (e->n_consumers == 0 && e->graph_output < 0 && !e->read_by_subgraph);
}

bool for_each_subgraph(const Onnx__NodeProto *node, subgraph_visitor visit, void *ctx)
{
    for (size_t a = 0; a < node->n_attribute; a++) {
        const Onnx__AttributeProto *attr = node->attribute[a];
        if (attr->g && !visit(attr->g, ctx))
            return false;
        for (size_t i = 0; i < attr->n_graphs; i++)
            if (!visit(attr->graphs[i], ctx))
                return false;
    }
    return true;
}

/* ---- name registry ----------------------------------------------------- */

static bool register_name(name_registry *reg, const char *name)
{
    return !name || !*name || strmap_put(&reg->names, name, 1);
}

static bool register_value_infos(name_registry *reg, Onnx__ValueInfoProto **vis, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!register_name(reg, vis[i]->name))
            return false;
    return true;
}

static bool register_graph(const Onnx__GraphProto *g, void *ctx)
{
    name_registry *reg = ctx;
    if (!register_value_infos(reg, g->input, g->n_input) ||
        !register_value_infos(reg, g->output, g->n_output) ||
        !register_value_infos(reg, g->value_info, g->n_value_info))
        return false;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!register_name(reg, g->initializer[i]->name))
            return false;
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *s = g->sparse_initializer[i];
        if (s->values && !register_name(reg, s->values->name))
            return false;
    }
    for (size_t n = 0; n < g->n_node; n++) {
        const Onnx__NodeProto *node = g->node[n];
        if (!register_name(reg, node->name))
            return false;
        for (size_t i = 0; i < node->n_input; i++)
            if (!register_name(reg, node->input[i]))
                return false;
        for (size_t o = 0; o < node->n_output; o++)
            if (!register_name(reg, node->output[o]))
                return false;
        if (!for_each_subgraph(node, register_graph, reg))
            return false;
    }
    return true;
}

bool name_registry_fill(name_registry *reg, const Onnx__GraphProto *graph)
{
    return register_graph(graph, reg);
}

void name_registry_free(name_registry *reg)
{
    strmap_free(&reg->names);
    strmap_free(&reg->next_suffix);
}

bool name_registry_has(const name_registry *reg, const char *name)
{
    return strmap_get(&reg->names, name) >= 0;
}

/* The suffix to try next is remembered per base name, so that many nodes
 * asking for one base (a template without {k}) take linear time, not
 * quadratic. */
char *name_registry_unique(name_registry *reg, const char *base)
{
    size_t cap = strlen(base) + 24;
    char *name = malloc(cap);
    if (!name)
        return NULL;
    snprintf(name, cap, "%s", base);
    int k = strmap_get(&reg->next_suffix, base);
    if (k < 1)
        k = 1;
    while (name_registry_has(reg, name) && k < INT_MAX)
        snprintf(name, cap, "%s_%d", base, k++);
    if (!register_name(reg, name) || !strmap_put(&reg->next_suffix, base, k)) {
        free(name);
        return NULL;
    }
    return name;
}
