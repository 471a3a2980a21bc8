/* graph_index: who produces and who reads every value of one graph.
 *
 * Invariants: an index describes its graph as it was when graph_index_build()
 * ran; the `name` pointers are the index's own copies. A pass that changes the
 * graph rebuilds the index (graph_index_build() again) before relying on it.
 * Indices (node, input, initializer, ...) are positions in the GraphProto's
 * arrays; -1 means "none". Building is linear in the size of the graph. */
#ifndef RNNSTATE_GRAPH_INDEX_H
#define RNNSTATE_GRAPH_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "util/strmap.h"

typedef struct value_entry {
    const char *name;    /* the index's own copy (valid while the index is,
                            also after a pass renamed or freed the graph's) */
    int *consumers;      /* node indices (a slice of the index's consumer_store) */
    int producer;        /* node producing the value */
    int producer_slot;   /* which of its outputs */
    int graph_input;
    int initializer;
    int graph_output;
    int value_info;
    uint32_t n_consumers;  /* reads by nodes of this graph, one per input slot */
    bool read_by_subgraph; /* named by a node inside a subgraph (outer-scope use) */
} value_entry; /* 48 bytes: a large graph has one per value */

/* The analyses that keep answers per value of an index, one slot each. */
typedef enum graph_index_memo_slot {
    MEMO_SLOT_SHAPE,  /* analysis/shape.c: dimensions */
    MEMO_SLOT_RANK,   /* analysis/shape.c: ranks (asked of far more values than
                         dimensions: 16 bytes each, not a dimension entry) */
    MEMO_SLOT_STATE,  /* state/trace.c: uniform constants, outputs reached */
    MEMO_SLOT_STREAM, /* analysis/stream.c: where the time axis is */
    GRAPH_INDEX_MEMOS
} graph_index_memo_slot;

/* One slot of an index's hash table: 8 bytes, the value's position and the
 * low 32 bits of its name's hash (placing the slot and ruling out most
 * names without reading them). The name itself is the entry's. */
typedef struct graph_index_slot {
    uint32_t hash;
    uint32_t at1; /* the value's position + 1; 0: empty */
} graph_index_slot;

typedef struct graph_index {
    Onnx__GraphProto *graph;
    value_entry *values;
    graph_index_slot *slots; /* by name, open addressing, load <= 1/2 */
    char *names;             /* every value's name, one after another */
    /* node_first and node_values, then every value's consumers (one slice
     * after another), share one allocation (at node_first) of node_bytes:
     * a subgraph of one node costs one block. */
    size_t node_bytes;
    /* The value each node's inputs and then outputs name, in node order:
     * node n's are node_values[node_first[n] ...], its inputs first; -1 for
     * an empty name. Walks in node order use them instead of hashing names. */
    int *node_values;
    uint32_t *node_first; /* n_node + 1 offsets */
    /* The first name the graph declares or produces twice (the loader's
     * uniqueness rule, see check.c), or NULL; graph_index_duplicate_kind()
     * says what it is. */
    const char *duplicate;
    uint32_t n_values;
    uint32_t cap_values;
    uint32_t cap_slots;      /* a power of two, or 0 */
    uint32_t names_cap;
    /* The value graph_index_find() found last + 1 (0: none): the analyses
     * ask for the same value several times in a row, and comparing its name
     * costs less than hashing it again. */
    uint32_t recent_at1;
    uint8_t duplicate_code;  /* what `duplicate` is, in graph_index.c's terms */
    /* values, node_first (with node_values and the consumers), slots and
     * names share one exact block at `values` (a small graph, see pack()) */
    bool packed;
    /* that block is part of its owner's allocation (a scope's): not freed
     * with the index */
    bool borrowed;
    /* The analyses' answers memoized per value of this index, one table per
     * analysis (analysis/memo.h); freed with memo_free[] when the index is
     * rebuilt or freed, so they never outlive the graph they describe. */
    void *memo[GRAPH_INDEX_MEMOS];
    void (*memo_free[GRAPH_INDEX_MEMOS])(void *table);
} graph_index; /* 152 bytes: a model of 40,000 Ifs has 80,001 */

/* An index that describes nothing yet (graph_index_build() fills it). */
#define GRAPH_INDEX_INIT { 0 }

/* Indexes `graph`. Returns false when out of memory (the index is then empty). */
bool graph_index_build(graph_index *gi, Onnx__GraphProto *graph);
/* The same, built in `scratch` (an index kept for this, GRAPH_INDEX_INIT at
 * first, freed with graph_index_free()) when gi is new or packed: a small
 * graph's index is then copied once into one exact block, and the scratch
 * keeps its blocks for the next graph, instead of four blocks made, copied
 * and freed per index (10,000 If branches: 40,000 mallocs and frees). A
 * large index takes the scratch's blocks; one rebuilt keeps its own. */
bool graph_index_build_via(graph_index *gi, Onnx__GraphProto *graph, graph_index *scratch);
/* graph_index_build_via() in three steps, for an owner that keeps a small
 * index inside its own allocation (a scope): the index of `graph` built in
 * `scratch` (false when out of memory); the bytes of the one block it
 * packs into, 0 when it is too large to pack; the empty gi made that index,
 * copied into `block` (that many bytes, 8-aligned, which the owner keeps
 * as long as gi and frees itself) or, with block NULL, taking the
 * scratch's blocks. */
bool graph_index_build_scratch(graph_index *scratch, Onnx__GraphProto *graph);
size_t graph_index_packed_size(const graph_index *scratch);
void graph_index_take(graph_index *gi, graph_index *scratch, void *block);
void graph_index_free(graph_index *gi);

/* What the first name given twice is ("graph input", "initializer",
 * "value produced", "graph output"), or NULL when there is none. */
const char *graph_index_duplicate_kind(const graph_index *gi);

/* The entry for a value name, or NULL when the graph does not mention it. */
const value_entry *graph_index_find(const graph_index *gi, const char *name);
/* The position of that entry in gi->values, or -1. */
int graph_index_at(const graph_index *gi, const char *name);

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
