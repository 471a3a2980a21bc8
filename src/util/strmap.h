/* strmap: an open-addressing hash map from strings to non-negative ints.
 *
 * The map owns copies of its keys, so it stays valid when the strings it was
 * filled from are freed (passes delete nodes while names are still tracked).
 * The copies live in a few large blocks per map, not one allocation each,
 * and every slot keeps its key's hash, so growing never hashes again.
 *
 * Names come from the input, so the hash must not be one an attacker can
 * aim at: keys are hashed with wyhash's folded multiply under a seed and
 * two secrets (192 bits) drawn from getrandom() once per process. Colliding
 * names cannot be computed without them, so probes stay short (O(1) expected per operation) whatever the
 * names; the load factor is kept at or under one half. A map holds at most
 * 2^31 keys (the table is indexed with 32 bits of the hash). */
#ifndef RNNSTATE_STRMAP_H
#define RNNSTATE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 16 bytes, so that four slots share a cache line: large maps are probed
 * at random, and their cost is the cache misses. */
typedef struct strmap_slot {
    const char *key; /* NULL: empty; else points into the map's key blocks */
    uint32_t hash;   /* the low 32 bits of the key's hash: placing a slot and
                        ruling out most keys without reading them */
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
/* Removes every key, keeping the table for the keys to come. */
void strmap_clear(strmap *m);
/* Makes room for `n` keys in all, so that filling a map whose size is known
 * does not grow (and re-place) its table step by step. False when out of
 * memory (the map is unchanged). */
bool strmap_reserve(strmap *m, size_t n);
/* Returns the value stored under key, or -1. */
int strmap_get(const strmap *m, const char *key);
/* strmap_get, also giving the map's own copy of the key when it is there
 * (valid until the map is cleared or freed). */
int strmap_get_key(const strmap *m, const char *key, const char **stored);
/* Stores val under key (replacing any value). Returns false when out of memory. */
bool strmap_put(strmap *m, const char *key, int val);
/* Get-or-insert, for a caller that knows the keys it will intern next (the
 * index walks the nodes in order): the hash a key's slot is chosen by
 * (`len` is strlen(key)), a hint that brings that slot into the cache while
 * other work goes on (a large map's probes are cache misses), and interning:
 * the value stored under key; if there is none, stores val and returns it;
 * -1 when out of memory. One probe. */
uint32_t strmap_key_hash(const char *key, size_t len);
void strmap_prefetch(const strmap *m, uint32_t hash);
int strmap_intern_hashed(strmap *m, const char *key, size_t len, uint32_t hash, int val);

/* SipHash-1-3 of `len` bytes under the process's random key. */
uint64_t strmap_hash(const void *data, size_t len);

#endif
