/* analysis/memo: answers of graph analyses kept per value of a graph index.
 *
 * An analysis (shapes, state tracing, the stream analysis) walks the graph
 * back or forward from a value; answering each value once per index keeps
 * every analysis linear in the size of the graphs whatever their shape (a
 * chain of Concat(c, c) nodes, which a plain walk visits 2^N times, is walked
 * once). Each analysis owns one slot of every index (graph_index.memo[]):
 * a table of entries per value (one per key, e.g. per axis), allocated from
 * slabs when first asked for, so an index costs four bytes per value and
 * key asked for, and an entry per value and key actually visited.
 * The tables are freed with the index, so an answer never outlives the graph
 * it describes.
 *
 * The state tracing's recursive walks are bounded by MAX_TRACE_DEPTH steps. An answer cut short
 * by that bound records it (`cut`) and the depth it was computed at; it is
 * computed again only when the value is reached nearer the start of a walk,
 * so each value is computed at most MAX_TRACE_DEPTH times and answers do not
 * depend on the order of the queries. A value met again while its own answer
 * is being computed (MEMO_BUSY: a cycle, in an invalid graph) is "not
 * known". */
#ifndef RNNSTATE_ANALYSIS_MEMO_H
#define RNNSTATE_ANALYSIS_MEMO_H

#include <stdbool.h>
#include <stddef.h>

#include "scope.h"

/* The walks of state/trace.c and state/own_caches.c follow at most this
 * many nodes back from a value. analysis/shape.c's walks (ranks,
 * dimensions, the time axis traced to an input) have no depth bound: they
 * defer what lies deeper than their stack allows and answer it first
 * (shape.c's opening comment). */
#define MAX_TRACE_DEPTH 64

typedef enum memo_state { MEMO_NONE, MEMO_BUSY, MEMO_DONE } memo_state;

/* A finished answer may be reused at `depth` unless the depth bound cut it
 * short and this walk has more room left than the one that computed it. */
static inline bool memo_reusable(unsigned char state, bool cut, int computed_at, int depth)
{
    return state == MEMO_DONE && (!cut || depth >= computed_at);
}

/* Frees what one entry owns (not the entry itself); NULL when nothing. */
typedef void (*memo_entry_clear)(void *entry);

/* The zeroed-on-first-use entry of `entry_size` bytes for value `e` of scope
 * `o`'s index, in the table of slot `slot` (one of graph_index_memo_slot);
 * every call for a slot passes the same size and clear function. An entry
 * stays where it is until the index is rebuilt or freed. NULL when out of
 * memory, noted with oom_note() (error.h): the caller then answers as best
 * it can, e.g. without the memo, and the rewrite fails with
 * RNNSTATE_ERR_NOMEM, so that no answer changes. The table is logically part
 * of the index, which the analyses otherwise only read. */
void *memo_entry(const scope *o, const value_entry *e, int slot, size_t entry_size,
                 memo_entry_clear clear);

/* memo_entry() for one of `n_keys` entries of each value (0 <= key <
 * n_keys), e.g. one per axis: only the keys asked for get an entry. Every
 * call for a slot passes the same n_keys and clear function (which gets the
 * entries of every key), and every call for a key the same size; keys may
 * differ in size. */
void *memo_entry_keyed(const scope *o, const value_entry *e, int slot, int key, int n_keys,
                       size_t entry_size, memo_entry_clear clear);

/* The entry of value `e` and key `key` in slot `slot` if one was made, else
 * NULL (nothing is allocated): a reader that finds no entry takes the
 * zeroed one's meaning. */
void *memo_entry_find(const scope *o, const value_entry *e, int slot, int key);

#endif
