/* ptrmap: an open-addressing hash map from object addresses to indices, for
 * O(1) questions about objects the program holds ("which scope holds this
 * graph?", "is this initializer a lazy stub?"). Keys are addresses the
 * allocator chose, not input, so a fixed mixing function spreads them well;
 * the load factor is kept at or under three quarters. An object must be removed
 * (or the map rebuilt) before it is freed, since a later object may get its
 * address. */
#ifndef RNNSTATE_PTRMAP_H
#define RNNSTATE_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ptrmap {
    /* cap keys (NULL: empty), then cap 4-byte values, in one block: 12 bytes
     * a slot, not 16 (a model of 40,000 Ifs has 80,001 graphs to map) */
    const void **keys;
    uint32_t *vals;
    size_t cap; /* a power of two, or 0 */
    size_t count;
} ptrmap;

#define PTRMAP_INIT { NULL, NULL, 0, 0 }

void ptrmap_free(ptrmap *m);
/* Stores val under key (not NULL), replacing any value; false when out of
 * memory (or val does not fit in 32 bits: the values are positions in
 * arrays of the model). */
bool ptrmap_put(ptrmap *m, const void *key, size_t val);
/* True and *val set when key is present. */
bool ptrmap_get(const ptrmap *m, const void *key, size_t *val);
/* Removes key if present. */
void ptrmap_remove(ptrmap *m, const void *key);

#endif
