#include "util/array.h"
#include "graph_index.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx_build.h"

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* ---- the table of names ------------------------------------------------
 * Slots of 8 bytes (hash, position) over the entries; a name is compared
 * with the entry's own name. While the index is built, the entries' names
 * are the graph's strings; copy_names() then gives them the index's copies
 * in one block, so that the index stays safe to read after a pass renamed
 * or freed a name (the map used before owned 16-byte slots and key blocks
 * of at least 128 bytes: a one-node subgraph paid 300 bytes for them). */

/* The slot holding `name` (hash `hash`), or the empty slot where it goes. */
static graph_index_slot *slot_for(const graph_index *gi, const char *name, uint32_t hash)
{
    size_t mask = gi->cap_slots - 1, i = hash & mask;
    for (;; i = (i + 1) & mask) {
        graph_index_slot *s = &gi->slots[i];
        if (!s->at1 || (s->hash == hash && strcmp(gi->values[s->at1 - 1].name, name) == 0))
            return s;
    }
}

/* A table of `cap` slots (a power of two) holding every entry so far; the
 * hashes are kept, so nothing is hashed again. */
static bool resize_slots(graph_index *gi, size_t cap)
{
    if (cap > ((size_t)1 << 31))
        return false;
    graph_index_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < gi->cap_slots; i++) {
        graph_index_slot s = gi->slots[i];
        size_t j = s.hash & (cap - 1);
        while (s.at1 && slots[j].at1)
            j = (j + 1) & (cap - 1);
        if (s.at1)
            slots[j] = s;
    }
    free(gi->slots);
    gi->slots = slots;
    gi->cap_slots = (uint32_t)cap;
    return true;
}

/* The table's size for `n` names (load <= 1/2), at least 4; 0 when too large. */
static size_t slots_for(size_t n)
{
    size_t cap = 4;
    while (cap / 2 < n) {
        if (cap > ((size_t)1 << 30))
            return 0;
        cap *= 2;
    }
    return cap;
}

/* An empty table sized for `n` names, the old one cleared and kept when it
 * has that size (a graph indexed again after a pass changed it a little is
 * not faulted in a second time), else replaced: an index built in a
 * scratch index after a larger graph gets a table its size, which is what
 * pack() copies. */
static bool size_slots(graph_index *gi, size_t n)
{
    size_t cap = slots_for(n);
    if (!cap)
        return false;
    if (cap == gi->cap_slots) {
        memset(gi->slots, 0, cap * sizeof *gi->slots);
        return true;
    }
    graph_index_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    free(gi->slots);
    gi->slots = slots;
    gi->cap_slots = (uint32_t)cap;
    return true;
}

/* Room in the table for `n` names in all (load <= 1/2). */
static bool reserve_slots(graph_index *gi, size_t n)
{
    size_t cap = gi->cap_slots ? gi->cap_slots : 4;
    while (cap / 2 < n) {
        if (cap > ((size_t)1 << 30))
            return false;
        cap *= 2;
    }
    return cap == gi->cap_slots || resize_slots(gi, cap);
}

static void prefetch_slot(const graph_index *gi, uint32_t hash)
{
    if (gi->cap_slots)
        __builtin_prefetch(&gi->slots[hash & (gi->cap_slots - 1)]);
}

/* Every entry's name copied into one block of the index (reused when an
 * index is rebuilt); the entries and `duplicate` then point there. */
static bool copy_names(graph_index *gi)
{
    size_t total = 0;
    for (size_t v = 0; v < gi->n_values; v++)
        total += strlen(gi->values[v].name) + 1;
    if (total > UINT32_MAX) /* names of 4 GiB: not from a model protobuf can read */
        return false;
    if (total > gi->names_cap || total < gi->names_cap / 2) {
        char *names = realloc(gi->names, total ? total : 1);
        if (!names)
            return false;
        gi->names = names;
        gi->names_cap = (uint32_t)total;
    }
    char *at = gi->names;
    for (size_t v = 0; v < gi->n_values; v++) {
        size_t len = strlen(gi->values[v].name) + 1;
        memcpy(at, gi->values[v].name, len);
        if (gi->duplicate == gi->values[v].name)
            gi->duplicate = at;
        gi->values[v].name = at;
        at += len;
    }
    return true;
}

/* The entry for `name`, whose length and hash (strmap_key_hash) are known. */
static value_entry *entry_for_hashed(graph_index *gi, const char *name, uint32_t hash)
{
    /* the test first: reserve_values() made room for nearly every name */
    if (gi->cap_slots / 2 < (size_t)gi->n_values + 1 && !reserve_slots(gi, gi->n_values + 1))
        return NULL;
    graph_index_slot *s = slot_for(gi, name, hash);
    if (s->at1)
        return &gi->values[s->at1 - 1];
    /* grown only for a new name: entries sized exactly stay so */
    if (gi->n_values == gi->cap_values) {
        size_t cap = gi->cap_values ? (size_t)gi->cap_values * 2 : 8;
        value_entry *grown = cap <= INT_MAX ? realloc(gi->values, cap * sizeof *grown) : NULL;
        if (!grown)
            return NULL;
        gi->values = grown;
        gi->cap_values = (uint32_t)cap;
    }
    *s = (graph_index_slot){ hash, (uint32_t)gi->n_values + 1 };
    value_entry *e = &gi->values[gi->n_values++];
    *e = (value_entry){ .name = name, .producer = -1, .producer_slot = -1, .graph_input = -1,
                        .initializer = -1, .graph_output = -1, .value_info = -1 };
    return e;
}

static value_entry *entry_for(graph_index *gi, const char *name)
{
    return entry_for_hashed(gi, name, strmap_key_hash(name, strlen(name)));
}

/* A node's names (outputs, then inputs; the first AHEAD_NAMES of them)
 * hashed a few nodes ahead of their turn, their slots prefetched: in a
 * large graph every probe of the table misses the cache, and the misses of
 * the next nodes then overlap the work on this one. */
#define AHEAD_NAMES 8
#define AHEAD_NODES 2
typedef struct hashed_names {
    uint32_t hash[AHEAD_NAMES];
    size_t n;
} hashed_names;

static const char *node_name_at(const Onnx__NodeProto *node, size_t i)
{
    return str_or_empty(i < node->n_output ? node->output[i] : node->input[i - node->n_output]);
}

static void hash_ahead(const graph_index *gi, const Onnx__NodeProto *node, hashed_names *h)
{
    h->n = 0;
    for (size_t i = 0; i < node->n_output + node->n_input && h->n < AHEAD_NAMES; i++) {
        const char *name = node_name_at(node, i);
        h->hash[h->n] = strmap_key_hash(name, strlen(name));
        prefetch_slot(gi, h->hash[h->n]);
        h->n++;
    }
}

/* The entry for name number i of a node (node_name_at), hashed ahead when
 * it could be; NULL for an empty name or when out of memory. */
static value_entry *node_entry(graph_index *gi, const Onnx__NodeProto *node, size_t i,
                               const hashed_names *h)
{
    const char *name = node_name_at(node, i);
    if (!*name)
        return NULL;
    return i < h->n ? entry_for_hashed(gi, name, h->hash[i]) : entry_for(gi, name);
}

/* Room for the values a graph usually has: its inputs, initializers and
 * node outputs. Its outputs and value_info entries are not counted: they
 * name values from those as a rule (counting them sized the entries of a
 * value_info'd graph for twice its values), and a name from elsewhere (a
 * value of an enclosing graph) grows the entries and the table. Sizing
 * them once keeps building from re-placing them as they grow. */
static bool reserve_values(graph_index *gi, const Onnx__GraphProto *g)
{
    size_t n = g->n_input + g->n_initializer;
    for (size_t i = 0; i < g->n_node; i++)
        n += g->node[i]->n_output;
    if (n > INT_MAX || !size_slots(gi, n))
        return false;
    if (gi->cap_values >= n && gi->values && gi->cap_values / 2 <= n)
        return true;
    value_entry *values = realloc(gi->values, (n ? n : 1) * sizeof *values);
    if (!values)
        return false;
    gi->values = values;
    gi->cap_values = n ? (uint32_t)n : 1;
    return true;
}

/* What a name given twice is, by the order of precedence of the loader's
 * rule (check.c): inputs first, then initializers, values produced, outputs. */
enum { DUP_INPUT, DUP_INITIALIZER, DUP_PRODUCED, DUP_OUTPUT, DUP_NONE };
static const char *const duplicate_kinds[] = { "graph input", "initializer", "value produced",
                                               "graph output" };

/* Remembers the first name given twice of the highest precedence. */
static void note_duplicate(graph_index *gi, const char *name, int kind)
{
    int current = gi->duplicate ? gi->duplicate_code : DUP_NONE;
    if (kind < current) {
        gi->duplicate = name;
        gi->duplicate_code = (uint8_t)kind;
    }
}

const char *graph_index_duplicate_kind(const graph_index *gi)
{
    return gi->duplicate ? duplicate_kinds[gi->duplicate_code] : NULL;
}

/* Marks every value named inside a subgraph (at any depth) as read there.
 * Names that the subgraph defines itself are marked too: over-approximating
 * outer-scope reads only makes the cleanup pass keep a node it could drop. */
static bool mark_subgraph_reads(const Onnx__GraphProto *graph, void *ctx)
{
    graph_index *gi = ctx;
    for (size_t n = 0; n < graph->n_node; n++) {
        const Onnx__NodeProto *node = graph->node[n];
        for (size_t i = 0; i < node->n_input; i++) {
            int at = graph_index_at(gi, str_or_empty(node->input[i]));
            if (at >= 0)
                gi->values[at].read_by_subgraph = true;
        }
        if (!for_each_subgraph(node, mark_subgraph_reads, gi))
            return false;
    }
    for (size_t o = 0; o < graph->n_output; o++) {
        int at = graph_index_at(gi, str_or_empty(graph->output[o]->name));
        if (at >= 0)
            gi->values[at].read_by_subgraph = true;
    }
    return true;
}

/* Entries for node n's outputs (recorded as produced by it) and inputs
 * (each read counted), their values stored at node_values[*k ...]. */
static bool index_node(graph_index *gi, const Onnx__NodeProto *node, size_t n, size_t *k,
                       const hashed_names *h)
{
    int *inputs = gi->node_values + *k, *outputs = inputs + node->n_input;
    gi->node_first[n] = (uint32_t)*k; /* reserve_node_store() checked the total */
    *k += node->n_input + node->n_output;
    for (size_t slot = 0; slot < node->n_output; slot++) {
        const char *name = str_or_empty(node->output[slot]);
        value_entry *e = node_entry(gi, node, slot, h);
        if (*name && !e)
            return false;
        outputs[slot] = e ? (int)(e - gi->values) : -1;
        if (!e)
            continue;
        if (e->producer >= 0 || e->graph_input >= 0 || e->initializer >= 0)
            note_duplicate(gi, e->name, DUP_PRODUCED);
        e->producer = (int)n;
        e->producer_slot = (int)slot;
    }
    for (size_t slot = 0; slot < node->n_input; slot++) {
        const char *name = str_or_empty(node->input[slot]);
        value_entry *e = node_entry(gi, node, node->n_output + slot, h);
        if (*name && !e)
            return false;
        inputs[slot] = e ? (int)(e - gi->values) : -1;
        if (e)
            e->n_consumers++;
    }
    return true;
}

/* Every value's consumers, in node order, as slices of one array (after
 * node_values in the node block) rather than an allocation per value. */
static void index_consumers(graph_index *gi, Onnx__GraphProto *g)
{
    int *store = gi->node_values + gi->node_first[g->n_node];
    size_t at = 0;
    for (size_t v = 0; v < gi->n_values; v++) {
        gi->values[v].consumers = store + at;
        at += gi->values[v].n_consumers;
        gi->values[v].n_consumers = 0; /* refilled below */
    }
    for (size_t n = 0; n < g->n_node; n++) {
        const int *inputs = graph_index_node_inputs(gi, n);
        for (size_t i = 0; i < g->node[n]->n_input; i++) {
            if (inputs[i] < 0)
                continue;
            value_entry *e = &gi->values[inputs[i]];
            e->consumers[e->n_consumers++] = (int)n;
        }
    }
}

/* node_first, node_values and the consumers carved out of one block
 * (kept across rebuilds unless it is more than twice what is needed). */
static bool reserve_node_store(graph_index *gi, size_t n_node, size_t names, size_t reads)
{
    /* offsets of 32 bits (4 bytes a node, not 8): a protobuf-c model of
     * under 2 GiB names fewer than 2^32 values in its nodes */
    if (n_node >= UINT32_MAX || names >= UINT32_MAX || reads >= UINT32_MAX ||
        n_node + names + reads >= SIZE_MAX / 4 / sizeof(int))
        return false;
    size_t firsts = align8((n_node + 1) * sizeof(uint32_t));
    size_t bytes = firsts + (names + reads) * sizeof(int);
    if (bytes > gi->node_bytes || bytes < gi->node_bytes / 2) {
        void *store = realloc(gi->node_first, bytes);
        if (!store)
            return false;
        gi->node_first = store;
        gi->node_bytes = bytes;
    }
    gi->node_values = (int *)((char *)gi->node_first + firsts);
    return true;
}

static bool index_nodes(graph_index *gi, Onnx__GraphProto *g)
{
    size_t reads = 0, names = 0;
    for (size_t n = 0; n < g->n_node; n++) {
        reads += g->node[n]->n_input;
        names += g->node[n]->n_input + g->node[n]->n_output;
    }
    if (!reserve_node_store(gi, g->n_node, names, reads))
        return false;
    size_t k = 0;
    hashed_names ahead[AHEAD_NODES + 1];
    for (size_t n = 0; n < AHEAD_NODES && n < g->n_node; n++)
        hash_ahead(gi, g->node[n], &ahead[n]);
    for (size_t n = 0; n < g->n_node; n++) {
        if (n + AHEAD_NODES < g->n_node)
            hash_ahead(gi, g->node[n + AHEAD_NODES], &ahead[(n + AHEAD_NODES) % (AHEAD_NODES + 1)]);
        if (!index_node(gi, g->node[n], n, &k, &ahead[n % (AHEAD_NODES + 1)]))
            return false;
    }
    gi->node_first[g->n_node] = (uint32_t)k;
    index_consumers(gi, g);
    return true;
}

/* Records in the entry for `name` that it stands at position i of a list of
 * the graph; `field` (an offsetof value_entry) is the int that keeps it.
 * A name already there is a duplicate of that `kind` (DUP_NONE: allowed). */
static bool record_declaration(graph_index *gi, const char *name, size_t field, size_t i,
                               int kind)
{
    value_entry *e = entry_for(gi, str_or_empty(name));
    if (!e)
        return false;
    int *at = (int *)((char *)e + field);
    if (*at >= 0 && kind != DUP_NONE)
        note_duplicate(gi, e->name, kind);
    *at = (int)i;
    return true;
}

static bool record_value_infos(graph_index *gi, Onnx__ValueInfoProto *const *list, size_t n,
                               size_t field, int kind)
{
    for (size_t i = 0; i < n; i++)
        if (!record_declaration(gi, list[i]->name, field, i, kind))
            return false;
    return true;
}

/* Entries are made in this order: inputs, initializers, outputs, value infos. */
static bool index_declarations(graph_index *gi, Onnx__GraphProto *g)
{
    bool ok = record_value_infos(gi, g->input, g->n_input, offsetof(value_entry, graph_input),
                                 DUP_INPUT);
    for (size_t i = 0; ok && i < g->n_initializer; i++)
        ok = record_declaration(gi, g->initializer[i]->name, offsetof(value_entry, initializer), i,
                                DUP_INITIALIZER);
    return ok &&
           record_value_infos(gi, g->output, g->n_output, offsetof(value_entry, graph_output),
                              DUP_OUTPUT) &&
           record_value_infos(gi, g->value_info, g->n_value_info,
                              offsetof(value_entry, value_info), DUP_NONE);
}

static void graph_index_free_memos(graph_index *gi)
{
    for (int i = 0; i < GRAPH_INDEX_MEMOS; i++) {
        if (gi->memo[i])
            gi->memo_free[i](gi->memo[i]);
        gi->memo[i] = NULL;
        gi->memo_free[i] = NULL;
    }
}

/* Forgets what the index says but keeps its memory: a graph is usually
 * indexed again after a pass changed it a little, and memory already in
 * use is not faulted in and zeroed by the kernel a second time (a third of
 * a rebuild's time on a graph of a million nodes). */
static void unpack(graph_index *gi);

static void graph_index_reset(graph_index *gi)
{
    graph_index_free_memos(gi);
    unpack(gi);
    gi->recent_at1 = 0; /* the table is cleared by reserve_values() */
    gi->n_values = 0;
    gi->duplicate = NULL;
}

/* An index this small (its four blocks together, in bytes) is packed into
 * one block once built: most subgraphs (If branches) have a node or two,
 * and four blocks cost four allocation headers and four roundings. */
#define PACK_MAX 2048

/* memcpy() of a block that may be empty and then never allocated (NULL):
 * memcpy() must not be given NULL even for 0 bytes. */
static void copy_block(void *to, const void *from, size_t size)
{
    if (size)
        memcpy(to, from, size);
}

/* The bytes of the node block and of the names that `gi` uses: a scratch
 * index (graph_index_build_via()) keeps larger blocks from earlier graphs. */
static size_t node_bytes_used(const graph_index *gi)
{
    size_t reads = 0;
    for (size_t v = 0; v < gi->n_values; v++)
        reads += gi->values[v].n_consumers;
    const int *consumers = gi->node_values + gi->node_first[gi->graph->n_node];
    return (size_t)((const char *)(consumers + reads) - (const char *)gi->node_first);
}

static size_t names_bytes_used(const graph_index *gi)
{
    if (!gi->n_values)
        return 0;
    const char *last = gi->values[gi->n_values - 1].name; /* copy_names() keeps them in order */
    return (size_t)(last - gi->names) + strlen(last) + 1;
}

/* The bytes of the one block `gi` packs into (pack_into()), or 0 when
 * that is more than PACK_MAX. */
static size_t packed_size(const graph_index *gi)
{
    size_t size = align8(gi->n_values * sizeof *gi->values) + align8(node_bytes_used(gi)) +
                  gi->cap_slots * sizeof *gi->slots + names_bytes_used(gi);
    return size <= PACK_MAX ? size : 0;
}

/* `to` made a copy of `from` in `block` (packed_size() bytes, 8-aligned),
 * the pointers into it (entries' names and consumers, duplicate) moved
 * with it. `from` keeps its blocks. */
static void pack_into(const graph_index *from, graph_index *to, char *block)
{
    size_t node_used = node_bytes_used(from), names = names_bytes_used(from);
    size_t values = align8(from->n_values * sizeof *from->values), nodes = align8(node_used);
    size_t slots = from->cap_slots * sizeof *from->slots;
    value_entry *v = (value_entry *)block;
    uint32_t *first = (uint32_t *)(block + values);
    graph_index_slot *sl = (graph_index_slot *)(block + values + nodes);
    char *text = block + values + nodes + slots;
    copy_block(v, from->values, from->n_values * sizeof *v);
    copy_block(first, from->node_first, node_used);
    copy_block(sl, from->slots, slots);
    copy_block(text, from->names, names);
    /* pointers into the node block keep their offsets from its start */
    const char *old_nodes = (const char *)from->node_first;
    int *node_values = (int *)((char *)first + ((const char *)from->node_values - old_nodes));
    for (size_t i = 0; i < from->n_values; i++) {
        v[i].name = text + (v[i].name - from->names);
        v[i].consumers = (int *)((char *)first + ((const char *)v[i].consumers - old_nodes));
    }
    *to = *from;
    if (from->duplicate)
        to->duplicate = text + (from->duplicate - from->names);
    to->values = v;
    to->cap_values = from->n_values;
    to->node_first = first;
    to->node_bytes = node_used;
    to->node_values = node_values;
    to->slots = sl;
    to->names = text;
    to->names_cap = (uint32_t)names;
    to->packed = true;
    to->borrowed = false;
}

/* The index's blocks copied into one (pack_into()) and freed. Harmless
 * when out of memory: the index stays in its four blocks. */
static void pack(graph_index *gi)
{
    size_t size = packed_size(gi);
    char *block = size ? malloc(size) : NULL;
    if (!block)
        return;
    graph_index packed;
    pack_into(gi, &packed, block);
    free(gi->values);
    free(gi->node_first);
    free(gi->slots);
    free(gi->names);
    *gi = packed;
}

/* A packed index's block given back before a rebuild, which makes its own
 * blocks (and packs them again if they are still small). */
static void unpack(graph_index *gi)
{
    if (!gi->packed)
        return;
    if (!gi->borrowed)
        free(gi->values);
    gi->borrowed = false;
    gi->values = NULL;
    gi->node_first = NULL;
    gi->node_values = NULL;
    gi->slots = NULL;
    gi->names = NULL;
    gi->cap_values = gi->cap_slots = 0;
    gi->names_cap = gi->node_bytes = 0;
    gi->packed = false;
}

/* The index of `graph` in gi's own blocks, which it reuses (gi reset). */
static bool build_blocks(graph_index *gi, Onnx__GraphProto *graph)
{
    bool ok = reserve_values(gi, graph) && index_declarations(gi, graph) &&
              index_nodes(gi, graph);
    for (size_t n = 0; ok && n < graph->n_node; n++)
        ok = for_each_subgraph(graph->node[n], mark_subgraph_reads, gi);
    return ok && copy_names(gi);
}

bool graph_index_build(graph_index *gi, Onnx__GraphProto *graph)
{
    graph_index_reset(gi);
    gi->graph = graph;
    bool ok = build_blocks(gi, graph);
    if (!ok)
        graph_index_free(gi);
    else
        pack(gi);
    return ok;
}

bool graph_index_build_scratch(graph_index *scratch, Onnx__GraphProto *graph)
{
    graph_index_reset(scratch);
    scratch->graph = graph;
    if (build_blocks(scratch, graph))
        return true;
    graph_index_free(scratch);
    return false;
}

size_t graph_index_packed_size(const graph_index *scratch)
{
    return packed_size(scratch);
}

void graph_index_take(graph_index *gi, graph_index *scratch, void *block)
{
    if (block) {
        pack_into(scratch, gi, block);
        gi->borrowed = true;
    } else {
        *gi = *scratch;
        *scratch = (graph_index)GRAPH_INDEX_INIT;
    }
}

bool graph_index_build_via(graph_index *gi, Onnx__GraphProto *graph, graph_index *scratch)
{
    if (gi->values && !gi->packed) /* a large index rebuilt in its own blocks */
        return graph_index_build(gi, graph);
    bool ok = graph_index_build_scratch(scratch, graph);
    graph_index_free(gi);
    if (!ok)
        return false;
    size_t size = packed_size(scratch);
    char *block = size ? malloc(size) : NULL;
    if (block)
        pack_into(scratch, gi, block);
    else /* large, or out of memory: gi takes the blocks */
        graph_index_take(gi, scratch, NULL);
    return true;
}

void graph_index_free(graph_index *gi)
{
    graph_index_free_memos(gi);
    unpack(gi);
    free(gi->node_first);
    free(gi->values);
    free(gi->slots);
    free(gi->names);
    *gi = (graph_index)GRAPH_INDEX_INIT;
}

int graph_index_at(const graph_index *gi, const char *name)
{
    if (!gi->cap_slots)
        return -1;
    const graph_index_slot *s = slot_for(gi, name, strmap_key_hash(name, strlen(name)));
    return s->at1 ? (int)s->at1 - 1 : -1;
}

const value_entry *graph_index_find(const graph_index *gi, const char *name)
{
    if (gi->recent_at1 && strcmp(gi->values[gi->recent_at1 - 1].name, name) == 0)
        return &gi->values[gi->recent_at1 - 1];
    int at = graph_index_at(gi, name);
    if (at < 0)
        return NULL;
    graph_index *m = (graph_index *)gi; /* the cache is logically part of the index, as the memos */
    m->recent_at1 = (uint32_t)at + 1;
    return &gi->values[at];
}

const int *graph_index_node_inputs(const graph_index *gi, size_t n)
{
    return gi->node_values + gi->node_first[n];
}

const int *graph_index_node_outputs(const graph_index *gi, size_t n)
{
    return gi->node_values + gi->node_first[n] + gi->graph->node[n]->n_input;
}

bool graph_index_value_unused(const graph_index *gi, const char *name)
{
    const value_entry *e = graph_index_find(gi, name);
    return !e || (e->n_consumers == 0 && e->graph_output < 0 && !e->read_by_subgraph);
}

bool for_each_subgraph(const Onnx__NodeProto *node, subgraph_visitor visit, void *ctx)
{
    for (size_t a = 0; a < node->n_attribute; a++) {
        const Onnx__AttributeProto *attr = node->attribute[a];
        if (attr->g && !visit(attr->g, ctx))
            return false;
        for (size_t i = 0; i < attr->n_graphs; i++)
            if (!visit(attr->graphs[i], ctx))
                return false;
    }
    return true;
}
