/* The per-index memo tables of the analyses (analysis/memo.h).
 *
 * A table has one part per key; a part keeps one 32-bit id per value and
 * the entries themselves in slabs, so an entry costs its own size and no
 * malloc header, and a value never asked for costs four bytes (nothing for
 * a key never asked for). A slab never moves once allocated (the analyses
 * keep pointers to entries across their recursion, and trace.c's answers
 * point at one another), so slabs are not reallocated: each new one is
 * twice the last, up to SLAB_BYTES, and never larger than what the part can
 * still hand out (a two-value If branch gets a two-entry slab). */
#include "analysis/memo.h"

#include <stdint.h>
#include <stdlib.h>

#include "error.h"

/* A slab holds at most this many bytes (once past the first doublings) and
 * at most 65,536 entries: an id is (slab + 1) << 16 | index in the slab. */
#define SLAB_BYTES (64u * 1024u)
#define SLAB_MAX_ENTRIES 65536u
#define SLAB_FIRST 8u

typedef struct memo_slab {
    unsigned char *entries;
    size_t cap;
} memo_slab;

/* The entries of one key (all of one size). */
typedef struct memo_part {
    uint32_t *ids; /* per value: 0 until asked for; NULL until the key is */
    size_t entry_size;
    memo_slab *slabs;
    size_t n_slabs;
    size_t used;   /* entries of the last slab handed out */
    size_t handed; /* entries of all slabs */
} memo_part;

typedef struct memo_table {
    size_t n_values;
    int n_keys;
    memo_entry_clear clear;
    memo_part parts[]; /* n_keys */
} memo_table;

static void memo_part_free(memo_part *p, memo_entry_clear clear)
{
    for (size_t s = 0; s < p->n_slabs; s++) {
        size_t n = s + 1 == p->n_slabs ? p->used : p->slabs[s].cap;
        for (size_t i = 0; clear && i < n; i++)
            clear(p->slabs[s].entries + i * p->entry_size);
        free(p->slabs[s].entries);
    }
    free(p->slabs);
    free(p->ids);
}

static void memo_table_free(void *table)
{
    memo_table *t = table;
    for (int k = 0; k < t->n_keys; k++)
        memo_part_free(&t->parts[k], t->clear);
    free(t);
}

static memo_table *memo_table_of(graph_index *gi, int slot, int n_keys, memo_entry_clear clear)
{
    if (gi->memo[slot])
        return gi->memo[slot];
    memo_table *t = calloc(1, sizeof *t + (size_t)n_keys * sizeof t->parts[0]);
    if (!t)
        return NULL;
    t->n_values = gi->n_values;
    t->n_keys = n_keys;
    t->clear = clear;
    gi->memo[slot] = t;
    gi->memo_free[slot] = memo_table_free;
    return t;
}

/* Room for one more entry: the ids on first use, a new slab when the last
 * is full. False when out of memory (or past what ids can name, more
 * entries than the index has values, which cannot happen). */
static bool memo_room(memo_part *p, size_t n_values, size_t entry_size)
{
    if (!p->ids) {
        if (!(p->ids = calloc(n_values ? n_values : 1, sizeof *p->ids)))
            return false;
        p->entry_size = entry_size;
    }
    if (p->n_slabs && p->used < p->slabs[p->n_slabs - 1].cap)
        return true;
    if (p->n_slabs >= 0xffffu || p->handed >= n_values)
        return false;
    size_t cap = p->n_slabs ? 2 * p->slabs[p->n_slabs - 1].cap : SLAB_FIRST;
    size_t most = SLAB_BYTES / p->entry_size;
    cap = cap > most ? most : cap;
    cap = cap > SLAB_MAX_ENTRIES ? SLAB_MAX_ENTRIES : cap;
    cap = cap > n_values - p->handed ? n_values - p->handed : cap;
    cap = cap ? cap : 1;
    memo_slab *slabs = realloc(p->slabs, (p->n_slabs + 1) * sizeof *slabs);
    if (!slabs)
        return false;
    p->slabs = slabs;
    unsigned char *entries = calloc(cap, p->entry_size);
    if (!entries)
        return false;
    p->slabs[p->n_slabs++] = (memo_slab){ entries, cap };
    p->handed += cap;
    p->used = 0;
    return true;
}

static void *memo_at(const memo_part *p, uint32_t id)
{
    return p->slabs[(id >> 16) - 1].entries + (size_t)(id & 0xffffu) * p->entry_size;
}

void *memo_entry_keyed(const scope *o, const value_entry *e, int slot, int key, int n_keys,
                       size_t entry_size, memo_entry_clear clear)
{
    graph_index *gi = (graph_index *)&o->index;
    if (slot < 0 || slot >= GRAPH_INDEX_MEMOS || key < 0 || key >= n_keys)
        return NULL;
    memo_table *t = memo_table_of(gi, slot, n_keys, clear);
    if (!t) {
        oom_note();
        return NULL;
    }
    size_t at = (size_t)(e - gi->values);
    if (at >= t->n_values || key >= t->n_keys)
        return NULL;
    memo_part *p = &t->parts[key];
    if (p->ids && p->ids[at])
        return memo_at(p, p->ids[at]);
    if (!memo_room(p, t->n_values, entry_size)) {
        oom_note();
        return NULL;
    }
    p->ids[at] = (uint32_t)(p->n_slabs << 16 | p->used++);
    return memo_at(p, p->ids[at]);
}

void *memo_entry(const scope *o, const value_entry *e, int slot, size_t entry_size,
                 memo_entry_clear clear)
{
    return memo_entry_keyed(o, e, slot, 0, 1, entry_size, clear);
}

void *memo_entry_find(const scope *o, const value_entry *e, int slot, int key)
{
    const graph_index *gi = &o->index;
    const memo_table *t = slot >= 0 && slot < GRAPH_INDEX_MEMOS ? gi->memo[slot] : NULL;
    size_t at = (size_t)(e - gi->values);
    if (!t || key < 0 || key >= t->n_keys || at >= t->n_values || !t->parts[key].ids)
        return NULL;
    const memo_part *p = &t->parts[key];
    return p->ids[at] ? memo_at(p, p->ids[at]) : NULL;
}
