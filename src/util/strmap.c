#include "util/strmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- the keyed hash ------------------------------------------------------ */

/* A seed and two secrets, drawn once per process, and the state every
 * hash starts from (worked out once from them, not at every call). */
static uint64_t hash_key[4];
static pthread_once_t hash_key_once = PTHREAD_ONCE_INIT;
static atomic_bool hash_key_ready; /* spares pthread_once() on every hash */

__extension__ typedef unsigned __int128 hash_u128;

/* The folded multiply: both halves of the 128-bit product, xored. */
static uint64_t fold_mul(uint64_t a, uint64_t b)
{
    hash_u128 r = (hash_u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* getrandom() has no failure mode worth stopping for on Linux >= 3.17: a
 * request of up to 256 bytes is never short and, once the kernel's pool is
 * initialised, never interrupted (getrandom(2)), so one call is made, with
 * no retry loop. Where it fails (old kernels, seccomp, a signal while the
 * pool fills at early boot), the clock and addresses still make a key that
 * is not known in advance. */
static void draw_hash_key(void)
{
    ssize_t got = getrandom(hash_key, sizeof hash_key, 0);
    if (got != (ssize_t)sizeof hash_key) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        hash_key[0] ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)&ts;
        hash_key[1] ^= (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&got;
        hash_key[2] ^= (uint64_t)ts.tv_nsec * 0xc2b2ae3d27d4eb4fULL ^ (uint64_t)(uintptr_t)&got;
    }
    hash_key[3] = hash_key[0] ^ fold_mul(hash_key[0] ^ hash_key[1], hash_key[2]);
    atomic_store_explicit(&hash_key_ready, true, memory_order_release);
}

/* Words are read in the host's byte order: the hash only has to be
 * unpredictable within this process, not the same on every machine. */
static uint64_t read64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t read32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* wyhash's construction (as Go's runtime and Zig's hash maps use it, under a
 * per-process random seed): 16 bytes per folded multiply, each word xored
 * with a secret first, so that an input cannot aim at a zero product without
 * knowing the secrets; the last 16 bytes (or the 1 to 16 there are) read
 * with overlapping loads rather than byte by byte. Several times fewer
 * instructions than SipHash-1-3 on names of 10 to 40 bytes, the lookups of
 * every index and name table. */
uint64_t strmap_hash(const void *data, size_t len)
{
    if (!atomic_load_explicit(&hash_key_ready, memory_order_acquire))
        pthread_once(&hash_key_once, draw_hash_key);
    const unsigned char *p = data;
    const uint64_t s1 = hash_key[1];
    uint64_t h = hash_key[3];
    uint64_t a, b;
    if (len <= 16) {
        if (len >= 4) {
            size_t mid = (len >> 3) << 2; /* 0 for 4 to 7 bytes, 4 for 8 to 16 */
            a = (read32(p) << 32) | read32(p + mid);
            b = (read32(p + len - 4) << 32) | read32(p + len - 4 - mid);
        } else if (len > 0) {
            a = ((uint64_t)p[0] << 16) | ((uint64_t)p[len >> 1] << 8) | p[len - 1];
            b = 0;
        } else {
            a = b = 0;
        }
    } else {
        size_t i = len;
        for (; i > 16; i -= 16, p += 16)
            h = fold_mul(read64(p) ^ s1, read64(p + 8) ^ h);
        a = read64(p + i - 16);
        b = read64(p + i - 8);
    }
    return fold_mul(s1 ^ len, fold_mul(a ^ s1, b ^ h));
}

/* ---- key storage ------------------------------------------------------- */

struct strmap_block {
    struct strmap_block *next;
    size_t used, cap;
    char data[];
};

/* Copies key into the newest block, starting a larger one when it is full:
 * blocks double up to 64 KiB, so a small map (one per subgraph) stays small
 * and a large one makes few allocations. */
static const char *store_key(strmap *m, const char *key, size_t len)
{
    struct strmap_block *b = m->blocks;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = b ? (b->cap < 65536 ? b->cap * 2 : b->cap) : 128;
        if (cap < len + 1)
            cap = len + 1;
        struct strmap_block *fresh = malloc(sizeof *fresh + cap);
        if (!fresh)
            return NULL;
        *fresh = (struct strmap_block){ .next = b, .used = 0, .cap = cap };
        m->blocks = b = fresh;
    }
    char *copy = b->data + b->used;
    memcpy(copy, key, len + 1);
    b->used += len + 1;
    return copy;
}

/* ---- the table --------------------------------------------------------- */

void strmap_free(strmap *m)
{
    for (struct strmap_block *b = m->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(m->slots);
    *m = (strmap)STRMAP_INIT;
}

void strmap_clear(strmap *m)
{
    for (struct strmap_block *b = m->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    m->blocks = NULL;
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
}

static size_t find_slot(const strmap *m, const char *key, uint32_t hash)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash & mask;
    while (m->slots[i].key &&
           (m->slots[i].hash != hash || strcmp(m->slots[i].key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

/* Hashes of 32 bits address tables of up to 2^32 slots. */
static uint32_t key_hash(const char *key, size_t len)
{
    return (uint32_t)strmap_hash(key, len);
}

uint32_t strmap_key_hash(const char *key, size_t len)
{
    return key_hash(key, len);
}

void strmap_prefetch(const strmap *m, uint32_t hash)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[hash & (m->cap - 1)]);
}

int strmap_get(const strmap *m, const char *key)
{
    if (!m->cap)
        return -1;
    size_t i = find_slot(m, key, key_hash(key, strlen(key)));
    return m->slots[i].key ? m->slots[i].val : -1;
}

int strmap_get_key(const strmap *m, const char *key, const char **stored)
{
    if (!m->cap)
        return -1;
    size_t i = find_slot(m, key, key_hash(key, strlen(key)));
    *stored = m->slots[i].key;
    return m->slots[i].key ? m->slots[i].val : -1;
}

/* Re-places every slot in a table of `cap` slots (a power of two). */
static bool resize(strmap *m, size_t cap)
{
    if ((uint64_t)cap > ((uint64_t)1 << 32) || cap > SIZE_MAX / sizeof(strmap_slot))
        return false;
    strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < m->cap; i++) {
        const strmap_slot *s = &m->slots[i];
        if (!s->key)
            continue;
        size_t j = (size_t)s->hash & (cap - 1);
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = *s; /* the key stays where it is: no rehash, no copy */
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

static bool grow(strmap *m)
{
    return resize(m, m->cap ? m->cap * 2 : 8);
}

bool strmap_reserve(strmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 8;
    while (cap / 2 < n) {
        if ((uint64_t)cap >= ((uint64_t)1 << 32))
            return false;
        cap *= 2;
    }
    return cap == m->cap || resize(m, cap);
}

int strmap_intern_hashed(strmap *m, const char *key, size_t len, uint32_t hash, int val)
{
    if ((m->count + 1) * 2 > m->cap && !grow(m))
        return -1;
    size_t i = find_slot(m, key, hash);
    if (m->slots[i].key)
        return m->slots[i].val;
    const char *copy = store_key(m, key, len);
    if (!copy)
        return -1;
    m->slots[i] = (strmap_slot){ copy, hash, val };
    m->count++;
    return val;
}

bool strmap_put(strmap *m, const char *key, int val)
{
    /* keep the load factor under one half so probes stay short */
    if ((m->count + 1) * 2 > m->cap && !grow(m))
        return false;
    size_t len = strlen(key);
    uint32_t hash = key_hash(key, len);
    size_t i = find_slot(m, key, hash);
    if (!m->slots[i].key) {
        const char *copy = store_key(m, key, len);
        if (!copy)
            return false;
        m->slots[i] = (strmap_slot){ copy, hash, val };
        m->count++;
    }
    m->slots[i].val = val;
    return true;
}
