#include "util/ptrmap.h"

#include <stdint.h>
#include <stdlib.h>

/* splitmix64's finalizer: every address bit reaches the low bits used as index. */
static size_t slot_of(const void *key, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)key;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (size_t)x & (cap - 1);
}

void ptrmap_free(ptrmap *m)
{
    free(m->keys); /* the values share its block */
    *m = (ptrmap)PTRMAP_INIT;
}

static size_t find(const ptrmap *m, const void *key)
{
    size_t i = slot_of(key, m->cap);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static bool grow(ptrmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 8;
    if (cap > SIZE_MAX / (sizeof *m->keys + sizeof *m->vals))
        return false;
    const void **keys = calloc(cap, sizeof *m->keys + sizeof *m->vals);
    if (!keys)
        return false;
    ptrmap bigger = { keys, (uint32_t *)(keys + cap), cap, m->count };
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i]) {
            size_t j = find(&bigger, m->keys[i]);
            bigger.keys[j] = m->keys[i];
            bigger.vals[j] = m->vals[i];
        }
    }
    free(m->keys);
    *m = bigger;
    return true;
}

bool ptrmap_put(ptrmap *m, const void *key, size_t val)
{
    if (val > UINT32_MAX || ((m->count + 1) * 4 > m->cap * 3 && !grow(m)))
        return false;
    size_t i = find(m, key);
    m->count += !m->keys[i];
    m->keys[i] = key;
    m->vals[i] = (uint32_t)val;
    return true;
}

bool ptrmap_get(const ptrmap *m, const void *key, size_t *val)
{
    if (!m->cap)
        return false;
    size_t i = find(m, key);
    if (!m->keys[i])
        return false;
    *val = m->vals[i];
    return true;
}

/* Linear probing without tombstones: the entries after the hole that probe
 * past it are moved back (Knuth's algorithm R). */
void ptrmap_remove(ptrmap *m, const void *key)
{
    if (!m->cap)
        return;
    size_t mask = m->cap - 1, hole = find(m, key);
    if (!m->keys[hole])
        return;
    m->keys[hole] = NULL;
    m->count--;
    for (size_t i = (hole + 1) & mask; m->keys[i]; i = (i + 1) & mask) {
        size_t home = slot_of(m->keys[i], m->cap);
        /* move it when its home is not in (hole, i] cyclically */
        bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (!stays) {
            m->keys[hole] = m->keys[i];
            m->vals[hole] = m->vals[i];
            m->keys[i] = NULL;
            hole = i;
        }
    }
}
