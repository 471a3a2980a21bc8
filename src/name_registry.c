#include "name_registry.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the set of names ------------------------------------------------ */

/* The slot holding `name` (hash `hash`), or the empty one where it goes. */
static name_set_slot *set_slot(const name_set *s, const char *name, uint32_t hash)
{
    size_t mask = s->cap - 1, i = hash & mask;
    while (s->slots[i].at1 &&
           (s->slots[i].hash != hash || strcmp(s->text + s->slots[i].at1 - 1, name) != 0))
        i = (i + 1) & mask;
    return &s->slots[i];
}

/* Room for `n` names in all; the slots are placed again by their hashes. */
static bool set_reserve(name_set *s, size_t n)
{
    size_t cap = s->cap ? s->cap : 16;
    while (cap / 2 < n) {
        if (cap > ((size_t)1 << 30))
            return false;
        cap *= 2;
    }
    if (cap == s->cap)
        return true;
    name_set_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].at1)
            continue;
        size_t j = s->slots[i].hash & (cap - 1);
        while (slots[j].at1)
            j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return true;
}

static bool set_has(const name_set *s, const char *name)
{
    return s->cap && set_slot(s, name, strmap_key_hash(name, strlen(name)))->at1;
}

/* Adds `name` (a copy); false when out of memory. */
static bool set_add(name_set *s, const char *name)
{
    if (!set_reserve(s, s->count + 1))
        return false;
    size_t len = strlen(name);
    uint32_t hash = strmap_key_hash(name, len);
    name_set_slot *slot = set_slot(s, name, hash);
    if (slot->at1)
        return true;
    if (s->used + len + 1 > s->text_cap) {
        size_t cap = s->text_cap ? s->text_cap : 256;
        while (cap < s->used + len + 1)
            cap *= 2;
        char *text = cap < UINT32_MAX ? realloc(s->text, cap) : NULL;
        if (!text)
            return false;
        s->text = text;
        s->text_cap = cap;
    }
    memcpy(s->text + s->used, name, len + 1);
    *slot = (name_set_slot){ hash, (uint32_t)s->used + 1 };
    s->used += len + 1;
    s->count++;
    return true;
}

static void set_free(name_set *s)
{
    free(s->slots);
    free(s->text);
    *s = (name_set){ 0 };
}

/* ---- the registry ----------------------------------------------------- */

void name_registry_init(name_registry *reg, const scope_tree *tree)
{
    *reg = (name_registry){ .tree = tree, .next_suffix = STRMAP_INIT };
}

void name_registry_free(name_registry *reg)
{
    set_free(&reg->names);
    strmap_free(&reg->next_suffix);
}

static bool register_name(name_registry *reg, const char *name)
{
    return !name || !*name || set_add(&reg->names, name);
}

/* One graph's names: its values from the index (each name once, whatever
 * the number of reads) unless `values` is false, its nodes and sparse
 * initializers from the graph. */
static bool add_graph(name_registry *reg, const graph_index *gi, bool values)
{
    const Onnx__GraphProto *g = gi->graph;
    size_t more = (values ? gi->n_values : 0) + g->n_node;
    if (!set_reserve(&reg->names, reg->names.count + more))
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
    return set_has(&reg->names, name) ||
           (*name && graph_index_at(&reg->tree->scopes[0]->index, name) >= 0);
}

/* The suffix to try next is remembered per base name, so that many nodes
 * asking for one base (a template without {k}) take linear time, not
 * quadratic. A base that was free needs no entry: its next try is _1, as
 * for a base never asked for. */
char *name_registry_unique(name_registry *reg, const char *base)
{
    if (!fill(reg))
        return NULL;
    size_t len = strlen(base), cap = len + 24;
    char *name = malloc(cap);
    if (!name)
        return NULL;
    memcpy(name, base, len + 1);
    int was = strmap_get(&reg->next_suffix, base);
    int k = was < 1 ? 1 : was;
    while (taken(reg, name) && k < INT_MAX)
        snprintf(name, cap, "%s_%d", base, k++);
    if (!register_name(reg, name) ||
        (k != (was < 1 ? 1 : was) && !strmap_put(&reg->next_suffix, base, k))) {
        free(name);
        return NULL;
    }
    return name;
}
