/* The per-index memo tables of the analyses (analysis/memo.h). */
#include "analysis/memo.h"

#include <stdlib.h>

#include "error.h"

typedef struct memo_table {
    void **entries; /* one per value of the index, NULL until asked for */
    size_t n;
    memo_entry_clear clear;
} memo_table;

static void memo_table_free(void *table)
{
    memo_table *t = table;
    for (size_t i = 0; i < t->n; i++) {
        if (t->entries[i] && t->clear)
            t->clear(t->entries[i]);
        free(t->entries[i]);
    }
    free(t->entries);
    free(t);
}

static memo_table *memo_table_of(graph_index *gi, int slot, memo_entry_clear clear)
{
    if (gi->memo[slot])
        return gi->memo[slot];
    memo_table *t = calloc(1, sizeof *t);
    void **entries = t ? calloc(gi->n_values ? gi->n_values : 1, sizeof *entries) : NULL;
    if (!entries) {
        free(t);
        return NULL;
    }
    *t = (memo_table){ entries, gi->n_values, clear };
    gi->memo[slot] = t;
    gi->memo_free[slot] = memo_table_free;
    return t;
}

void *memo_entry(const scope *o, const value_entry *e, int slot, size_t entry_size,
                 memo_entry_clear clear)
{
    graph_index *gi = (graph_index *)&o->index;
    if (slot < 0 || slot >= GRAPH_INDEX_MEMOS)
        return NULL;
    memo_table *t = memo_table_of(gi, slot, clear);
    size_t at = (size_t)(e - gi->values);
    if (!t) {
        oom_note();
        return NULL;
    }
    if (at >= t->n)
        return NULL;
    if (!t->entries[at] && !(t->entries[at] = calloc(1, entry_size)))
        oom_note();
    return t->entries[at];
}
