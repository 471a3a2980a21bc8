/* graph_index: who produces and who reads every value of one graph.
 *
 * Invariants: an index describes its graph as it was when graph_index_build()
 * ran; the `name` pointers borrow the graph's strings. A pass that changes the
 * graph rebuilds the index (graph_index_build() again) before relying on it.
 * Indices (node, input, initializer, ...) are positions in the GraphProto's
 * arrays; -1 means "none". Building is linear in the size of the graph. */
#ifndef RNNSTATE_GRAPH_INDEX_H
#define RNNSTATE_GRAPH_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "onnx.pb-c.h"
#include "util/strmap.h"

typedef struct value_entry {
    const char *name;
    int producer;        /* node producing the value */
    int producer_slot;   /* which of its outputs */
    int graph_input;
    int initializer;
    int graph_output;
    int value_info;
    size_t n_consumers;  /* reads by nodes of this graph, one per input slot */
    int *consumers;      /* node indices (a slice of the index's consumer_store) */
    bool read_by_subgraph; /* named by a node inside a subgraph (outer-scope use) */
} value_entry;

/* The analyses that keep answers per value of an index, one slot each. */
typedef enum graph_index_memo_slot {
    MEMO_SLOT_SHAPE,  /* analysis/shape.c: dimensions */
    MEMO_SLOT_RANK,   /* analysis/shape.c: ranks (asked of far more values than
                         dimensions: 16 bytes each, not a dimension entry) */
    MEMO_SLOT_STATE,  /* state/trace.c: uniform constants, outputs reached */
    MEMO_SLOT_STREAM, /* analysis/stream.c: where the time axis is */
    GRAPH_INDEX_MEMOS
} graph_index_memo_slot;

typedef struct graph_index {
    Onnx__GraphProto *graph;
    strmap by_name;
    value_entry *values;
    size_t n_values;
    size_t cap_values;
    int *consumer_store; /* every value's consumers, one slice after another */
    /* The value each node's inputs and then outputs name, in node order:
     * node n's are node_values[node_first[n] ...], its inputs first; -1 for
     * an empty name. Walks in node order use them instead of hashing names. */
    int *node_values;
    size_t *node_first;  /* n_node + 1 offsets */
    /* The first name the graph declares or produces twice (the loader's
     * uniqueness rule, see check.c), or NULL; duplicate_kind says what it
     * is: "graph input", "initializer", "value produced", "graph output". */
    const char *duplicate;
    const char *duplicate_kind;
    /* The name graph_index_find() found last (the map's copy) and its
     * value: the analyses ask for the same value several times in a row,
     * and comparing it costs less than hashing it again. */
    const char *recent_name;
    int recent_at;
    /* The analyses' answers memoized per value of this index, one table per
     * analysis (analysis/memo.h); freed with memo_free[] when the index is
     * rebuilt or freed, so they never outlive the graph they describe. */
    void *memo[GRAPH_INDEX_MEMOS];
    void (*memo_free[GRAPH_INDEX_MEMOS])(void *table);
} graph_index;

/* Indexes `graph`. Returns false when out of memory (the index is then empty). */
bool graph_index_build(graph_index *gi, Onnx__GraphProto *graph);
void graph_index_free(graph_index *gi);

/* The entry for a value name, or NULL when the graph does not mention it. */
const value_entry *graph_index_find(const graph_index *gi, const char *name);

/* The values node n reads: n_input entries (-1 for an empty name). */
const int *graph_index_node_inputs(const graph_index *gi, size_t n);
/* The values node n produces: n_output entries (-1 for an empty name). */
const int *graph_index_node_outputs(const graph_index *gi, size_t n);

/* True when nothing reads the value and it is not a graph output. */
bool graph_index_value_unused(const graph_index *gi, const char *name);

/* Calls visit(graph, ctx) for every subgraph held in a node's attributes
 * (If branches, Loop and Scan bodies), not recursing further. */
typedef bool (*subgraph_visitor)(const Onnx__GraphProto *graph, void *ctx);
bool for_each_subgraph(const Onnx__NodeProto *node, subgraph_visitor visit, void *ctx);

#endif
