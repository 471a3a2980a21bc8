#include "util/array.h"
#include "scope.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model/onnx_build.h"
#include "util/arena.h"

static scope *scope_new(rnnstate_model *model, Onnx__GraphProto *graph, scope *parent,
                        size_t parent_node, const char *attr_name, const char *node_label,
                        bool in_loop)
{
    scope *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->model = model;
    s->graph = graph;
    s->index = (graph_index){ .by_name = STRMAP_INIT };
    s->parent = parent;
    s->parent_node = parent_node;
    s->in_loop = in_loop;
    size_t n = (parent ? strlen(parent->path) : 0) + strlen(node_label) + strlen(attr_name) + 8;
    s->attr_name = strdup(attr_name);
    s->path = malloc(n);
    if (!s->attr_name || !s->path || !graph_index_build(&s->index, graph)) {
        free(s->attr_name);
        free(s->path);
        graph_index_free(&s->index);
        free(s);
        return NULL;
    }
    if (parent)
        snprintf(s->path, n, "%s/%s.%s", parent->path, node_label, attr_name);
    else
        snprintf(s->path, n, "main");
    return s;
}

static bool add_scope(scope_tree *tree, scope *s)
{
    if (!s)
        return false;
    scope **grown = owned_array_grow(tree->scopes, tree->n, sizeof *grown);
    if (grown)
        tree->scopes = grown;
    if (!grown || !ptrmap_put(&tree->by_graph, s->graph, tree->n)) {
        graph_index_free(&s->index);
        free(s->attr_name);
        free(s->path);
        free(s);
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
        const char *label = *str_or_empty(node->name) ? node->name : str_or_empty(node->op_type);
        bool in_loop = parent->in_loop || is_loop_op(node);
        for (size_t a = 0; a < node->n_attribute; a++) {
            const Onnx__AttributeProto *attr = node->attribute[a];
            const char *attr_name = str_or_empty(attr->name);
            if (attr->g) {
                scope *child =
                    scope_new(parent->model, attr->g, parent, n, attr_name, label, in_loop);
                if (!add_scope(tree, child) || !add_children(tree, child))
                    return false;
            }
            for (size_t i = 0; i < attr->n_graphs; i++) {
                scope *child = scope_new(parent->model, attr->graphs[i], parent, n, attr_name,
                                         label, in_loop);
                if (!add_scope(tree, child) || !add_children(tree, child))
                    return false;
            }
        }
    }
    return true;
}

bool scope_tree_build(scope_tree *tree, rnnstate_model *model)
{
    *tree = (scope_tree){ .by_graph = PTRMAP_INIT };
    scope *root = scope_new(model, model->proto->graph, NULL, 0, "", "", false);
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

void scope_tree_free(scope_tree *tree)
{
    for (size_t i = 0; i < tree->n; i++) {
        scope *s = tree->scopes[i];
        graph_index_free(&s->index);
        for (size_t q = 0; q < s->n_queued; q++)
            arena_message_free(&s->queued[q].node->base);
        free(s->queued);
        pending_free(&s->new_inputs);
        pending_free(&s->new_outputs);
        pending_free(&s->new_initializers);
        strmap_free(&s->forgotten_value_info);
        free(s->attr_name);
        free(s->path);
        free(s);
    }
    free(tree->scopes);
    ptrmap_free(&tree->by_graph);
    *tree = (scope_tree){ .by_graph = PTRMAP_INIT };
}

bool scope_tree_reindex(scope_tree *tree)
{
    for (size_t i = 0; i < tree->n; i++) {
        if (!graph_index_build(&tree->scopes[i]->index, tree->scopes[i]->graph))
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

bool if_branch_fault(const Onnx__NodeProto *if_node, const char **name, bool *repeated)
{
    size_t count[2];
    const Onnx__GraphProto *graph[2];
    branch_attrs(if_node, count, graph, name);
    *repeated = *name != NULL;
    for (int b = 0; !*name && b < 2; b++)
        if (!graph[b])
            *name = if_branch_attr[b];
    return *name != NULL;
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
    if (!sc->parent || branch_which(sc->attr_name) < 0)
        return NULL;
    const Onnx__NodeProto *node = sc->parent->graph->node[sc->parent_node];
    return node_is_if(node) && if_branch(node, branch_which(sc->attr_name)) == sc->graph ? node
                                                                                        : NULL;
}

scope *scope_if_sibling(const scope_tree *tree, const scope *sc)
{
    const Onnx__NodeProto *node = scope_if_node(sc);
    return node ? scope_if_branch(tree, node, 1 - branch_which(sc->attr_name)) : NULL;
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

bool scope_queue_node(scope *s, size_t before, Onnx__NodeProto *node)
{
    if (s->n_queued == s->cap_queued) {
        size_t cap = s->cap_queued ? 2 * s->cap_queued : 8;
        queued_node *grown = realloc(s->queued, cap * sizeof *grown);
        if (!grown) {
            arena_message_free(&node->base);
            return false;
        }
        s->queued = grown;
        s->cap_queued = cap;
    }
    s->queued[s->n_queued] = (queued_node){ before, s->n_queued, node };
    s->n_queued++;
    return true;
}

static bool pending_push(pending_list *l, ProtobufCMessage *m)
{
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
    return pending_push(&s->new_inputs, &vi->base);
}

bool scope_add_output(scope *s, Onnx__ValueInfoProto *vi)
{
    return pending_push(&s->new_outputs, &vi->base);
}

bool scope_add_initializer(scope *s, Onnx__TensorProto *t)
{
    return pending_push(&s->new_initializers, &t->base);
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

static bool flush_nodes(scope *s)
{
    if (!s->n_queued)
        return true;
    Onnx__GraphProto *g = s->graph;
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

bool scope_forget_value_info(scope *s, const char *name)
{
    return strmap_put(&s->forgotten_value_info, name, 1);
}

static void drop_forgotten_value_info(scope *s)
{
    Onnx__GraphProto *g = s->graph;
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

static bool flush_scope(scope *s)
{
    Onnx__GraphProto *g = s->graph;
    drop_forgotten_value_info(s);
    return flush_nodes(s) &&
           pending_flush(&s->new_inputs, (void ***)&g->input, &g->n_input) &&
           pending_flush(&s->new_outputs, (void ***)&g->output, &g->n_output) &&
           pending_flush(&s->new_initializers, (void ***)&g->initializer, &g->n_initializer);
}

bool scope_tree_flush(scope_tree *tree)
{
    for (size_t i = 0; i < tree->n; i++)
        if (!flush_scope(tree->scopes[i]))
            return false;
    return true;
}
