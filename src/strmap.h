/* strmap: an open-addressing hash map from strings to non-negative ints.
 *
 * The map owns copies of its keys, so it stays valid when the strings it was
 * filled from are freed (passes delete nodes while names are still tracked).
 * Lookups and inserts are O(1) on average, which keeps graph indexing linear in
 * the number of values. */
#ifndef RNNSTATE_STRMAP_H
#define RNNSTATE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct strmap {
    char **keys;
    int *vals;
    size_t cap;   /* a power of two, or 0 */
    size_t count;
} strmap;

#define STRMAP_INIT { NULL, NULL, 0, 0 }

void strmap_free(strmap *m);
/* Returns the value stored under key, or -1. */
int strmap_get(const strmap *m, const char *key);
/* Stores val under key (replacing any value). Returns false when out of memory. */
bool strmap_put(strmap *m, const char *key, int val);

#endif
