/* ptrmap: an open-addressing hash map from object addresses to indices, for
 * O(1) questions about objects the program holds ("which scope holds this
 * graph?", "is this initializer a lazy stub?"). Keys are addresses the
 * allocator chose, not input, so a fixed mixing function spreads them well;
 * the load factor is kept at or under one half. An object must be removed
 * (or the map rebuilt) before it is freed, since a later object may get its
 * address. */
#ifndef RNNSTATE_PTRMAP_H
#define RNNSTATE_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ptrmap_slot {
    const void *key; /* NULL: empty */
    size_t val;
} ptrmap_slot;

typedef struct ptrmap {
    ptrmap_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t count;
} ptrmap;

#define PTRMAP_INIT { NULL, 0, 0 }

void ptrmap_free(ptrmap *m);
/* Stores val under key (not NULL), replacing any value; false when out of memory. */
bool ptrmap_put(ptrmap *m, const void *key, size_t val);
/* True and *val set when key is present. */
bool ptrmap_get(const ptrmap *m, const void *key, size_t *val);
/* Removes key if present. */
void ptrmap_remove(ptrmap *m, const void *key);

#endif
