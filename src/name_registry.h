/* name_registry: every name used anywhere in a model (values and nodes, in
 * every graph and subgraph), so that the names a pass makes up never collide
 * with one.
 *
 * The names are collected when the first new name is asked for, from the
 * scope tree's indices as they are then (fresh: a pass reading them
 * refreshes them first, and no name leaves a graph before the state pass
 * ends), so that a model that needs no new name (every node skipped or
 * already stateful) costs no second table of its names. The main graph's
 * values are looked up in its index rather than copied; the registry owns
 * copies of every other name. Only the passes up to the state pass may ask
 * for names (cleanup removes names). */
#ifndef RNNSTATE_NAME_REGISTRY_H
#define RNNSTATE_NAME_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "scope.h"
#include "util/strmap.h"

/* A set of names: 8-byte slots (hash, where the name starts + 1) over one
 * growing block of the names, zero-terminated one after another (a strmap
 * takes 16-byte slots and key blocks of at least 128 bytes). */
typedef struct name_set_slot {
    uint32_t hash;
    uint32_t at1; /* 0: empty */
} name_set_slot;

typedef struct name_set {
    name_set_slot *slots;
    size_t cap, count; /* cap: a power of two, or 0; load <= 1/2 */
    char *text;
    size_t used, text_cap;
} name_set;

typedef struct name_registry {
    const scope_tree *tree; /* where the names are collected from */
    bool filled;            /* they have been */
    name_set names;
    strmap next_suffix; /* per base name: the first suffix not yet tried */
} name_registry;

/* A registry of the names of `tree`'s graphs, collected on first use. */
void name_registry_init(name_registry *reg, const scope_tree *tree);
void name_registry_free(name_registry *reg);
/* Returns a new malloc'd name, `base` itself when it is free, else `base_1`,
 * `base_2`, ...; the name is registered so it is never handed out twice.
 * NULL when out of memory. */
char *name_registry_unique(name_registry *reg, const char *base);

#endif
