/* scope: the model's graphs as a tree. The main graph is the root; every If
 * branch and Loop/Scan body is a child scope of the graph holding that node.
 * A name a subgraph reads without defining it refers to the nearest enclosing
 * scope that defines it (ONNX outer-scope values), which scope_lookup()
 * follows.
 *
 * Invariants: scopes[0] is the main graph; a parent comes before its
 * children (pre-order), so the order is also a valid processing order. Each
 * scope's index describes its graph as of the last scope_tree_reindex();
 * the tree's `stale` flag says a graph changed since. */
#ifndef RNNSTATE_SCOPE_H
#define RNNSTATE_SCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph_index.h"
#include "util/ptrmap.h"

/* A node a pass creates, waiting to be inserted before an existing node so
 * that the node list stays topologically sorted. */
typedef struct queued_node {
    size_t before; /* index of the existing node (n_node or more: at the end) */
    size_t order;  /* keeps nodes queued for one place in the order they came */
    Onnx__NodeProto *node;
} queued_node;

/* Messages waiting to be appended to one of a graph's arrays. Passes add
 * inputs, outputs and initializers one at a time; appending them all at once
 * when the pass ends keeps that linear however the allocator grows blocks. */
typedef struct pending_list {
    void **items;
    size_t n, cap;
} pending_list;

struct rnnstate_model;

/* What passes queue for a scope's graph until scope_tree_flush(); allocated
 * at a scope's first queued change, since most subgraphs never get one. */
typedef struct scope_edits {
    queued_node *queued;
    size_t n_queued, cap_queued;
    pending_list new_inputs, new_outputs, new_initializers;
    strmap forgotten_value_info; /* names whose value_info entries go at the flush */
} scope_edits;

typedef struct scope {
    struct rnnstate_model *model; /* for reading lazy initializers */
    Onnx__GraphProto *graph;
    graph_index index;
    struct scope *parent;   /* NULL for the main graph */
    char *path;             /* "main", "main/If_25.then_branch", ... (in text[]) */
    scope_edits *edits;     /* NULL until a change is queued */
    uint32_t parent_node;   /* the If/Loop/Scan node in the parent holding this graph */
    bool in_loop;           /* this graph or an enclosing one is a Loop/Scan body */
    bool stale;             /* the graph changed since its index was built */
    /* The path, then the attribute name (scope_attr_name()), then, 8-aligned,
     * the index's one block when the graph is small: one allocation a scope
     * (an If branch of one node: about 400 bytes with its index). */
    char text[];
} scope;

typedef struct scope_tree {
    scope **scopes;
    size_t n;
    ptrmap by_graph; /* graph -> position in scopes, for scope_of_graph() */
    /* A pass changed the graphs since the indices were built: whoever reads
     * an index next calls scope_tree_refresh() first, which rebuilds them
     * all (an index's memos may have read any graph). Rebuilding lazily
     * spares a large graph an index nobody reads (see passes.h). Set by a
     * pass, or by scope_mark_changed(); a scope marked stale implies it. */
    bool stale;
    /* Where small indices are built before they are packed into one block
     * each (graph_index_build_via()); its blocks serve every build. */
    graph_index scratch;
} scope_tree;

bool scope_tree_build(scope_tree *tree, struct rnnstate_model *model);
void scope_tree_free(scope_tree *tree);
/* Rebuilds every scope's index (after the graphs changed). */
bool scope_tree_reindex(scope_tree *tree);
/* Rebuilds every index when the tree is stale; false when out of memory. */
bool scope_tree_refresh(scope_tree *tree);

/* Staleness, kept here only. The graph of `sc` changed: the tree is stale,
 * and the index of `sc` and those of the scopes around it (their
 * read_by_subgraph marks follow what it reads) are marked stale, the walk
 * stopping at a scope already marked (the ones around it are then marked
 * too), so that a pass still walking the tree can rebuild just the ones it
 * reads next with scope_refresh() (pass_cleanup, inner graphs first). */
void scope_mark_changed(scope_tree *tree, scope *sc);
/* Rebuilds the index of `sc` if it is marked stale; false when out of
 * memory. The tree stays stale. */
bool scope_refresh(scope *sc);

/* The name of the attribute holding the scope's graph ("then_branch",
 * "else_branch", "body", ...; "" for the main graph). */
const char *scope_attr_name(const scope *sc);

/* The scope holding a subgraph, or NULL. O(1). */
scope *scope_of_graph(const scope_tree *tree, const Onnx__GraphProto *graph);

/* If branches, one policy for every module. An If is a node of ONNX's
 * default domain with op_type "If"; its branches are the graphs of its
 * attributes "then_branch" (which = 0) and "else_branch" (which = 1). The
 * rewrite refuses a model with an If that has either attribute twice
 * (if_branch_fault(), checked by validate_graph_names() before any pass
 * runs). An If that lacks a branch graph is invalid too but not refused:
 * the queries below answer NULL for it, and the state pass skips the
 * recurrent nodes inside it (their final state cannot be threaded out). */
extern const char *const if_branch_attr[2];

/* True for ONNX's If. */
bool node_is_if(const Onnx__NodeProto *node);

/* Why an If's branches break the policy above, or NULL: `*name` gets the
 * first branch attribute (in attribute order) found twice, and `*repeated`
 * is true; else the first branch without a graph, `*repeated` false. */
bool if_branch_fault(const Onnx__NodeProto *if_node, const char **name, bool *repeated);

/* Both at once, in one walk of the attributes: what if_branch_fault()
 * answers, and branch[which] what if_branch() gives. */
bool if_branches(const Onnx__NodeProto *if_node, const Onnx__GraphProto *branch[2],
                 const char **name, bool *repeated);

/* The graph of branch `which` of an If, or NULL when it breaks the policy. */
const Onnx__GraphProto *if_branch(const Onnx__NodeProto *if_node, int which);

/* The scope of branch `which` of `if_node` (a node of a graph of `tree`), or
 * NULL. */
scope *scope_if_branch(const scope_tree *tree, const Onnx__NodeProto *if_node, int which);

/* The If node whose branch `sc` is, or NULL when `sc` is not an If branch
 * (the main graph, a Loop or Scan body, a graph of another op). */
const Onnx__NodeProto *scope_if_node(const scope *sc);

/* The other branch of the If whose branch `sc` is, or NULL. */
scope *scope_if_sibling(const scope_tree *tree, const scope *sc);

/* Finds the scope that defines `name` (as a node output, graph input or
 * initializer), starting at `s` and moving outwards. Returns its entry and
 * sets *owner, or returns NULL. */
const value_entry *scope_lookup(const scope *s, const char *name, const scope **owner);

/* `t` (an initializer or attribute tensor of the model) with its element
 * data in memory, reading it from the file if it was left there; NULL when
 * that fails. Only for the few tensors whose values the passes need. */
const Onnx__TensorProto *scope_tensor_data(const scope *s, const Onnx__TensorProto *t);

/* Queues `node` for insertion before node `before` of the scope's graph
 * (SIZE_MAX: at the end). The scope owns it from then on. */
bool scope_queue_node(scope *s, size_t before, Onnx__NodeProto *node);

/* Queue a new graph input, output or initializer; the scope owns it from
 * then on (also when the call fails: it is freed). */
bool scope_add_input(scope *s, Onnx__ValueInfoProto *vi);
bool scope_add_output(scope *s, Onnx__ValueInfoProto *vi);
bool scope_add_initializer(scope *s, Onnx__TensorProto *t);

/* Queues the removal of the value_info entries describing `name` (all of
 * them, should there be several); they go at the flush, in one pass over the
 * graph's value_info whatever the number of names, and the index stays valid
 * until then. */
bool scope_forget_value_info(scope *s, const char *name);

/* Inserts every scope's queued nodes, inputs, outputs and initializers, and
 * removes the value_info entries queued for removal. */
bool scope_tree_flush(scope_tree *tree);

#endif
