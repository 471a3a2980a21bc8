#include "name_registry.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void name_registry_init(name_registry *reg, const scope_tree *tree)
{
    *reg = (name_registry){ .tree = tree, .names = STRMAP_INIT, .next_suffix = STRMAP_INIT };
}

void name_registry_free(name_registry *reg)
{
    strmap_free(&reg->names);
    strmap_free(&reg->next_suffix);
}

static bool register_name(name_registry *reg, const char *name)
{
    return !name || !*name || strmap_put(&reg->names, name, 1);
}

/* One graph's names: its values from the index (each name once, whatever
 * the number of reads) unless `values` is false, its nodes and sparse
 * initializers from the graph. */
static bool add_graph(name_registry *reg, const graph_index *gi, bool values)
{
    const Onnx__GraphProto *g = gi->graph;
    size_t more = (values ? gi->n_values : 0) + g->n_node;
    if (!strmap_reserve(&reg->names, reg->names.count + more))
        return false;
    for (size_t v = 0; values && v < gi->n_values; v++)
        if (!register_name(reg, gi->values[v].name))
            return false;
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *s = g->sparse_initializer[i];
        if (s->values && !register_name(reg, s->values->name))
            return false;
    }
    for (size_t n = 0; n < g->n_node; n++)
        if (!register_name(reg, g->node[n]->name))
            return false;
    return true;
}

/* The main graph's values, usually most of the names, are not copied:
 * they are looked up in its index, which holds every one of them whenever
 * names are asked for (no value leaves the main graph before the state pass
 * ends, and a rebuilt index has every value the graph has). */
static bool fill(name_registry *reg)
{
    for (size_t i = 0; !reg->filled && i < reg->tree->n; i++)
        if (!add_graph(reg, &reg->tree->scopes[i]->index, i > 0))
            return false;
    reg->filled = true;
    return true;
}

static bool taken(const name_registry *reg, const char *name)
{
    return strmap_get(&reg->names, name) >= 0 ||
           (*name && strmap_get(&reg->tree->scopes[0]->index.by_name, name) >= 0);
}

/* The suffix to try next is remembered per base name, so that many nodes
 * asking for one base (a template without {k}) take linear time, not
 * quadratic. */
char *name_registry_unique(name_registry *reg, const char *base)
{
    if (!fill(reg))
        return NULL;
    size_t cap = strlen(base) + 24;
    char *name = malloc(cap);
    if (!name)
        return NULL;
    snprintf(name, cap, "%s", base);
    int k = strmap_get(&reg->next_suffix, base);
    if (k < 1)
        k = 1;
    while (taken(reg, name) && k < INT_MAX)
        snprintf(name, cap, "%s_%d", base, k++);
    if (!register_name(reg, name) || !strmap_put(&reg->next_suffix, base, k)) {
        free(name);
        return NULL;
    }
    return name;
}
