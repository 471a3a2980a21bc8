/* strmap: an open-addressing hash map from strings to non-negative ints.
 *
 * The map owns copies of its keys, so it stays valid when the strings it was
 * filled from are freed (passes delete nodes while names are still tracked).
 * The copies live in a few large blocks per map, not one allocation each,
 * and every slot keeps its key's hash, so growing never hashes again.
 *
 * Names come from the input, so the hash must not be one an attacker can
 * aim at: keys are hashed with SipHash-1-3 under a 128-bit key drawn from
 * getrandom() once per process. Colliding names cannot be computed without
 * that key, so probes stay short (O(1) expected per operation) whatever the
 * names; the load factor is kept at or under one half. */
#ifndef RNNSTATE_STRMAP_H
#define RNNSTATE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct strmap_slot {
    const char *key; /* NULL: empty; else points into the map's key blocks */
    uint64_t hash;
    int val;
} strmap_slot;

struct strmap_block;

typedef struct strmap {
    strmap_slot *slots;
    size_t cap;   /* a power of two, or 0 */
    size_t count;
    struct strmap_block *blocks; /* key storage, newest first */
} strmap;

#define STRMAP_INIT { NULL, 0, 0, NULL }

void strmap_free(strmap *m);
/* Returns the value stored under key, or -1. */
int strmap_get(const strmap *m, const char *key);
/* Stores val under key (replacing any value). Returns false when out of memory. */
bool strmap_put(strmap *m, const char *key, int val);
/* The value stored under key; if there is none, stores val and returns it.
 * -1 when out of memory. One hash and one probe, for get-or-insert. */
int strmap_intern(strmap *m, const char *key, int val);

/* SipHash-1-3 of `len` bytes under the process's random key. */
uint64_t strmap_hash(const void *data, size_t len);

#endif
