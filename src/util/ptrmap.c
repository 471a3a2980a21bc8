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
    free(m->slots);
    *m = (ptrmap)PTRMAP_INIT;
}

static size_t find(const ptrmap *m, const void *key)
{
    size_t i = slot_of(key, m->cap);
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static bool grow(ptrmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 8;
    if (cap > SIZE_MAX / sizeof(ptrmap_slot))
        return false;
    ptrmap bigger = { calloc(cap, sizeof(ptrmap_slot)), cap, m->count };
    if (!bigger.slots)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            bigger.slots[find(&bigger, m->slots[i].key)] = m->slots[i];
    free(m->slots);
    *m = bigger;
    return true;
}

bool ptrmap_put(ptrmap *m, const void *key, size_t val)
{
    if ((m->count + 1) * 2 > m->cap && !grow(m))
        return false;
    size_t i = find(m, key);
    m->count += !m->slots[i].key;
    m->slots[i] = (ptrmap_slot){ key, val };
    return true;
}

bool ptrmap_get(const ptrmap *m, const void *key, size_t *val)
{
    if (!m->cap)
        return false;
    size_t i = find(m, key);
    if (!m->slots[i].key)
        return false;
    *val = m->slots[i].val;
    return true;
}

/* Linear probing without tombstones: the entries after the hole that probe
 * past it are moved back (Knuth's algorithm R). */
void ptrmap_remove(ptrmap *m, const void *key)
{
    if (!m->cap)
        return;
    size_t mask = m->cap - 1, hole = find(m, key);
    if (!m->slots[hole].key)
        return;
    m->slots[hole].key = NULL;
    m->count--;
    for (size_t i = (hole + 1) & mask; m->slots[i].key; i = (i + 1) & mask) {
        size_t home = slot_of(m->slots[i].key, m->cap);
        /* move it when its home is not in (hole, i] cyclically */
        bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (!stays) {
            m->slots[hole] = m->slots[i];
            m->slots[i].key = NULL;
            hole = i;
        }
    }
}
