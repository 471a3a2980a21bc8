#include "util/array.h"
#include "scope.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model/onnx_build.h"
#include "util/arena.h"

static void scope_free(scope *s);

/* Appends `len` bytes of `text` at *at. */
static void put(char **at, const char *text, size_t len)
{
    if (len) /* memcpy() must not see a NULL text, even for 0 bytes */
        memcpy(*at, text, len);
    *at += len;
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* A scope with its path ("main", "main/If_25.then_branch") and, after the
 * path's terminating zero, its attribute name, both in text[] (copied, not
 * formatted: snprintf took a tenth of indexing 10,000 If branches), and the
 * index of its graph, built in the tree's scratch index and, when small,
 * copied into the same allocation after them. */
static scope *scope_new(scope_tree *tree, rnnstate_model *model, Onnx__GraphProto *graph,
                        scope *parent, size_t parent_node, const char *attr_name,
                        const char *node_label, bool in_loop)
{
    size_t attr_len = strlen(attr_name), label_len = strlen(node_label);
    size_t parent_len = parent ? strlen(parent->path) : 0;
    size_t path_len = parent ? parent_len + 1 + label_len + 1 + attr_len : 4;
    if (!graph_index_build_scratch(&tree->scratch, graph))
        return NULL;
    size_t head = align8(offsetof(scope, text) + path_len + 1 + attr_len + 1);
    size_t packed = graph_index_packed_size(&tree->scratch);
    scope *s = malloc(head + packed);
    if (!s)
        return NULL;
    *s = (scope){ .model = model, .graph = graph, .index = GRAPH_INDEX_INIT, .parent = parent,
                  .parent_node = (uint32_t)parent_node, .in_loop = in_loop };
    char *at = s->path = s->text;
    if (parent) {
        put(&at, parent->path, parent_len);
        put(&at, "/", 1);
        put(&at, node_label, label_len);
        put(&at, ".", 1);
        put(&at, attr_name, attr_len);
    } else {
        put(&at, "main", 4);
    }
    put(&at, "", 1);
    put(&at, attr_name, attr_len + 1);
    graph_index_take(&s->index, &tree->scratch, packed ? (char *)s + head : NULL);
    return s;
}

const char *scope_attr_name(const scope *sc)
{
    return sc->path + strlen(sc->path) + 1;
}

/* The scope's queue of changes, made at its first use; NULL when out of memory. */
static scope_edits *edits_of(scope *s)
{
    if (!s->edits) {
        s->edits = calloc(1, sizeof *s->edits);
        if (s->edits)
            s->edits->forgotten_value_info = (strmap)STRMAP_INIT;
    }
    return s->edits;
}

static bool add_scope(scope_tree *tree, scope *s)
{
    if (!s)
        return false;
    scope **grown = owned_array_grow(tree->scopes, tree->n, sizeof *grown);
    if (grown)
        tree->scopes = grown;
    if (!grown || !ptrmap_put(&tree->by_graph, s->graph, tree->n)) {
        scope_free(s);
        return false;
    }
    grown[tree->n++] = s;
    return true;
}

static bool is_loop_op(const Onnx__NodeProto *node)
{
    const char *op = str_or_empty(node->op_type);
    return !strcmp(op, "Loop") || !strcmp(op, "Scan");
}

/* Recursion depth is bounded: the loader refuses nesting deeper than its
 * limit before the model reaches here. */
static bool add_children(scope_tree *tree, scope *parent)
{
    Onnx__GraphProto *g = parent->graph;
    for (size_t n = 0; n < g->n_node; n++) {
        const Onnx__NodeProto *node = g->node[n];
        const char *label = NULL; /* worked out at the node's first graph: most have none */
        bool in_loop = false;
        for (size_t a = 0; a < node->n_attribute; a++) {
            const Onnx__AttributeProto *attr = node->attribute[a];
            const char *attr_name = str_or_empty(attr->name);
            if (!attr->g && !attr->n_graphs)
                continue;
            if (!label) {
                label = *str_or_empty(node->name) ? node->name : str_or_empty(node->op_type);
                in_loop = parent->in_loop || is_loop_op(node);
            }
            if (attr->g) {
                scope *child = scope_new(tree, parent->model, attr->g, parent, n, attr_name,
                                         label, in_loop);
                if (!add_scope(tree, child) || !add_children(tree, child))
                    return false;
            }
            for (size_t i = 0; i < attr->n_graphs; i++) {
                scope *child = scope_new(tree, parent->model, attr->graphs[i], parent, n,
                                         attr_name, label, in_loop);
                if (!add_scope(tree, child) || !add_children(tree, child))
                    return false;
            }
        }
    }
    return true;
}

bool scope_tree_build(scope_tree *tree, rnnstate_model *model)
{
    *tree = (scope_tree){ .by_graph = PTRMAP_INIT, .scratch = GRAPH_INDEX_INIT };
    scope *root = scope_new(tree, model, model->proto->graph, NULL, 0, "", "", false);
    bool ok = add_scope(tree, root) && add_children(tree, root);
    if (!ok)
        scope_tree_free(tree);
    return ok;
}

static void pending_free(pending_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        arena_message_free(l->items[i]);
    free(l->items);
    *l = (pending_list){ 0 };
}

static void edits_free(scope_edits *e)
{
    if (!e)
        return;
    for (size_t q = 0; q < e->n_queued; q++)
        arena_message_free(&e->queued[q].node->base);
    free(e->queued);
    pending_free(&e->new_inputs);
    pending_free(&e->new_outputs);
    pending_free(&e->new_initializers);
    strmap_free(&e->forgotten_value_info);
    free(e);
}

static void scope_free(scope *s)
{
    graph_index_free(&s->index);
    edits_free(s->edits);
    free(s);
}

void scope_tree_free(scope_tree *tree)
{
    for (size_t i = 0; i < tree->n; i++)
        scope_free(tree->scopes[i]);
    free(tree->scopes);
    ptrmap_free(&tree->by_graph);
    graph_index_free(&tree->scratch);
    *tree = (scope_tree){ .by_graph = PTRMAP_INIT, .scratch = GRAPH_INDEX_INIT };
}

bool scope_tree_reindex(scope_tree *tree)
{
    for (size_t i = 0; i < tree->n; i++) {
        if (!graph_index_build_via(&tree->scopes[i]->index, tree->scopes[i]->graph,
                                   &tree->scratch))
            return false;
        tree->scopes[i]->stale = false;
    }
    tree->stale = false;
    return true;
}

bool scope_tree_refresh(scope_tree *tree)
{
    return !tree->stale || scope_tree_reindex(tree);
}

void scope_mark_changed(scope_tree *tree, scope *sc)
{
    tree->stale = true;
    for (; sc && !sc->stale; sc = sc->parent)
        sc->stale = true;
}

bool scope_refresh(scope *sc)
{
    if (!sc->stale)
        return true;
    sc->stale = false;
    return graph_index_build(&sc->index, sc->graph);
}

scope *scope_of_graph(const scope_tree *tree, const Onnx__GraphProto *graph)
{
    size_t at;
    return ptrmap_get(&tree->by_graph, graph, &at) ? tree->scopes[at] : NULL;
}

const char *const if_branch_attr[2] = { "then_branch", "else_branch" };

bool node_is_if(const Onnx__NodeProto *node)
{
    const char *domain = str_or_empty(node->domain);
    return !strcmp(str_or_empty(node->op_type), "If") &&
           (!*domain || !strcmp(domain, "ai.onnx"));
}

/* Which branch attribute `name` is (0, 1), or -1. */
static int branch_which(const char *name)
{
    for (int b = 0; b < 2; b++)
        if (!strcmp(name, if_branch_attr[b]))
            return b;
    return -1;
}

/* The attributes of each branch: how many, and the graph of the last. */
static void branch_attrs(const Onnx__NodeProto *if_node, size_t count[2],
                         const Onnx__GraphProto *graph[2], const char **repeated)
{
    count[0] = count[1] = 0;
    graph[0] = graph[1] = NULL;
    *repeated = NULL;
    for (size_t a = 0; a < if_node->n_attribute; a++) {
        const Onnx__AttributeProto *attr = if_node->attribute[a];
        int b = branch_which(str_or_empty(attr->name));
        if (b < 0)
            continue;
        if (count[b]++ && !*repeated)
            *repeated = if_branch_attr[b];
        graph[b] = attr->g;
    }
}

bool if_branches(const Onnx__NodeProto *if_node, const Onnx__GraphProto *branch[2],
                 const char **name, bool *repeated)
{
    size_t count[2];
    branch_attrs(if_node, count, branch, name);
    *repeated = *name != NULL;
    for (int b = 0; !*name && b < 2; b++)
        if (!branch[b])
            *name = if_branch_attr[b];
    for (int b = 0; b < 2; b++)
        if (count[b] != 1)
            branch[b] = NULL;
    return *name != NULL;
}

bool if_branch_fault(const Onnx__NodeProto *if_node, const char **name, bool *repeated)
{
    const Onnx__GraphProto *branch[2];
    return if_branches(if_node, branch, name, repeated);
}

const Onnx__GraphProto *if_branch(const Onnx__NodeProto *if_node, int which)
{
    size_t count[2];
    const Onnx__GraphProto *graph[2];
    const char *repeated;
    branch_attrs(if_node, count, graph, &repeated);
    return which >= 0 && which < 2 && count[which] == 1 ? graph[which] : NULL;
}

scope *scope_if_branch(const scope_tree *tree, const Onnx__NodeProto *if_node, int which)
{
    const Onnx__GraphProto *g = if_branch(if_node, which);
    return g ? scope_of_graph(tree, g) : NULL;
}

const Onnx__NodeProto *scope_if_node(const scope *sc)
{
    int which = sc->parent ? branch_which(scope_attr_name(sc)) : -1;
    if (which < 0)
        return NULL;
    const Onnx__NodeProto *node = sc->parent->graph->node[sc->parent_node];
    return node_is_if(node) && if_branch(node, which) == sc->graph ? node : NULL;
}

scope *scope_if_sibling(const scope_tree *tree, const scope *sc)
{
    const Onnx__NodeProto *node = scope_if_node(sc);
    return node ? scope_if_branch(tree, node, 1 - branch_which(scope_attr_name(sc))) : NULL;
}

const value_entry *scope_lookup(const scope *s, const char *name, const scope **owner)
{
    for (; s; s = s->parent) {
        const value_entry *e = graph_index_find(&s->index, name);
        if (e && (e->producer >= 0 || e->graph_input >= 0 || e->initializer >= 0)) {
            *owner = s;
            return e;
        }
    }
    return NULL;
}

const Onnx__TensorProto *scope_tensor_data(const scope *s, const Onnx__TensorProto *t)
{
    return t && model_materialize(s->model, (Onnx__TensorProto *)t) ? t : NULL;
}

bool scope_queue_node(scope *sc, size_t before, Onnx__NodeProto *node)
{
    scope_edits *s = edits_of(sc);
    if (s && s->n_queued == s->cap_queued) {
        size_t cap = s->cap_queued ? 2 * s->cap_queued : 8;
        queued_node *grown = realloc(s->queued, cap * sizeof *grown);
        if (grown) {
            s->queued = grown;
            s->cap_queued = cap;
        }
    }
    if (!s || s->n_queued == s->cap_queued) {
        arena_message_free(&node->base);
        return false;
    }
    s->queued[s->n_queued] = (queued_node){ before, s->n_queued, node };
    s->n_queued++;
    return true;
}

/* Pushes m on list number `which` of the scope's edits (0: inputs, 1:
 * outputs, 2: initializers); m is freed when that fails. */
static bool pending_push(scope *s, int which, ProtobufCMessage *m)
{
    scope_edits *e = edits_of(s);
    if (!e) {
        arena_message_free(m);
        return false;
    }
    pending_list *l = which == 0 ? &e->new_inputs : which == 1 ? &e->new_outputs
                                                                : &e->new_initializers;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        void **grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) {
            arena_message_free(m);
            return false;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = m;
    return true;
}

bool scope_add_input(scope *s, Onnx__ValueInfoProto *vi)
{
    return pending_push(s, 0, &vi->base);
}

bool scope_add_output(scope *s, Onnx__ValueInfoProto *vi)
{
    return pending_push(s, 1, &vi->base);
}

bool scope_add_initializer(scope *s, Onnx__TensorProto *t)
{
    return pending_push(s, 2, &t->base);
}

/* Appends the pending messages to a graph array with one allocation. */
static bool pending_flush(pending_list *l, void ***array, size_t *count)
{
    if (!l->n)
        return true;
    void **grown =
        arena_piece_realloc(*array, *count * sizeof *grown, (*count + l->n) * sizeof *grown);
    if (!grown)
        return false;
    memcpy(grown + *count, l->items, l->n * sizeof *grown);
    *array = grown;
    *count += l->n;
    free(l->items);
    *l = (pending_list){ 0 };
    return true;
}

static int by_place(const void *a, const void *b)
{
    const queued_node *x = a, *y = b;
    if (x->before != y->before)
        return x->before < y->before ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static bool flush_nodes(scope_edits *s, Onnx__GraphProto *g)
{
    if (!s->n_queued)
        return true;
    size_t total = g->n_node + s->n_queued, at = 0, q = 0;
    Onnx__NodeProto **nodes = malloc(total * sizeof *nodes);
    if (!nodes)
        return false;
    qsort(s->queued, s->n_queued, sizeof *s->queued, by_place);
    for (size_t n = 0; n <= g->n_node; n++) {
        for (; q < s->n_queued && (s->queued[q].before == n ||
                                   (n == g->n_node && s->queued[q].before > n)); q++)
            nodes[at++] = s->queued[q].node;
        if (n < g->n_node)
            nodes[at++] = g->node[n];
    }
    arena_piece_free(g->node); /* a parsed array may be in the arena */
    g->node = nodes;
    g->n_node = at;
    free(s->queued);
    s->queued = NULL;
    s->n_queued = s->cap_queued = 0;
    return true;
}

bool scope_forget_value_info(scope *sc, const char *name)
{
    scope_edits *s = edits_of(sc);
    return s && strmap_put(&s->forgotten_value_info, name, 1);
}

static void drop_forgotten_value_info(scope_edits *s, Onnx__GraphProto *g)
{
    if (!s->forgotten_value_info.count)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < g->n_value_info; i++) {
        if (strmap_get(&s->forgotten_value_info, str_or_empty(g->value_info[i]->name)) >= 0)
            arena_message_free(&g->value_info[i]->base);
        else
            g->value_info[kept++] = g->value_info[i];
    }
    g->n_value_info = kept;
    strmap_free(&s->forgotten_value_info);
}

/* A scope's edits carried out; they are freed once all are (a scope is
 * changed by few passes, and most scopes by none). */
static bool flush_scope(scope *sc)
{
    Onnx__GraphProto *g = sc->graph;
    scope_edits *s = sc->edits;
    if (!s)
        return true;
    drop_forgotten_value_info(s, g);
    bool ok = flush_nodes(s, g) &&
              pending_flush(&s->new_inputs, (void ***)&g->input, &g->n_input) &&
              pending_flush(&s->new_outputs, (void ***)&g->output, &g->n_output) &&
              pending_flush(&s->new_initializers, (void ***)&g->initializer, &g->n_initializer);
    if (ok) {
        edits_free(s);
        sc->edits = NULL;
    }
    return ok;
}

bool scope_tree_flush(scope_tree *tree)
{
    for (size_t i = 0; i < tree->n; i++)
        if (!flush_scope(tree->scopes[i]))
            return false;
    return true;
}
