#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_string(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void strmap_free(strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}

static size_t find_slot(const strmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash_string(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

int strmap_get(const strmap *m, const char *key)
{
    if (!m->cap)
        return -1;
    size_t i = find_slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

static bool grow(strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    strmap bigger = { calloc(cap, sizeof(char *)), calloc(cap, sizeof(int)), cap, 0 };
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = find_slot(&bigger, m->keys[i]);
        bigger.keys[j] = m->keys[i]; /* ownership moves */
        bigger.vals[j] = m->vals[i];
        bigger.count++;
    }
    free(m->keys);
    free(m->vals);
    *m = bigger;
    return true;
}

bool strmap_put(strmap *m, const char *key, int val)
{
    /* keep the load factor under one half so probes stay short */
    if ((m->count + 1) * 2 > m->cap && !grow(m))
        return false;
    size_t i = find_slot(m, key);
    if (!m->keys[i]) {
        char *copy = strdup(key);
        if (!copy)
            return false;
        m->keys[i] = copy;
        m->count++;
    }
    m->vals[i] = val;
    return true;
}
