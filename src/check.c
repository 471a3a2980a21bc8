/* Structural verification of a rewritten model (the command line's --check),
 * run on the model as re-loaded from the written file. */
#include <limits.h>
#include <string.h>

#include "check.h"
#include "graph_index.h"
#include "model.h"
#include "scope.h"
#include "model/onnx_build.h"
#include "model/tensor_util.h"

/* Graph inputs, outputs and initializers must each have unique names, and no
 * value may be produced twice (by two nodes, or by a node and an input or
 * initializer); the index notes the first name that breaks this. */
static rnnstate_status check_unique(const graph_index *gi, const char *label,
                                    const char *what_failed, rnnstate_error *err)
{
    if (gi->duplicate)
        return set_error(err, RNNSTATE_ERR_INVALID, "%s: %s: %s '%s' appears twice", label,
                         what_failed, graph_index_duplicate_kind(gi), gi->duplicate);
    return RNNSTATE_OK;
}

/* ---- every value read is defined before it is read ------------------------- */

/* The names of one graph during the walk: DEFINED once a graph input, an
 * initializer or a node already walked gives the value; a node's output not
 * reached yet holds that node's index + 1, so a read of it can name its
 * producer. A subgraph's frame points to its enclosing graph's frame, which
 * then holds exactly the values defined before the node owning the subgraph
 * (ONNX outer-scope values). */
enum { DEFINED = 0 };

typedef struct frame {
    const Onnx__GraphProto *graph;
    strmap names;
    const struct frame *outer;
} frame;

typedef struct order_check {
    const char *label;
    rnnstate_error *err;
    const frame *current; /* the frame a subgraph visit starts from */
    rnnstate_status status;
} order_check;

static rnnstate_status check_graph_order(const Onnx__GraphProto *g, const frame *outer,
                                         order_check *oc);

/* The value's state in the innermost frame that names it; -1 when none does. */
static int lookup(const frame *f, const char *name)
{
    for (; f; f = f->outer) {
        int v = strmap_get(&f->names, name);
        if (v >= 0)
            return v;
    }
    return -1;
}

static rnnstate_status check_read(const frame *f, const Onnx__NodeProto *node, const char *value,
                                  order_check *oc)
{
    int state = lookup(f, value);
    if (state == DEFINED)
        return RNNSTATE_OK;
    const char *graph = str_or_empty(f->graph->name);
    if (state < 0)
        return set_error(oc->err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: node '%s' (%s) of graph '%s' reads '%s', which no graph "
                         "input, initializer or node defines",
                         oc->label, str_or_empty(node->name), str_or_empty(node->op_type), graph,
                         value);
    const Onnx__NodeProto *later = NULL;
    for (const frame *o = f; o && !later; o = o->outer)
        if (strmap_get(&o->names, value) == state)
            later = o->graph->node[state - 1];
    return set_error(oc->err, RNNSTATE_ERR_INVALID,
                     "%s: check failed: nodes are not in topological order: node '%s' of graph '%s' "
                     "reads '%s' before node '%s' produces it",
                     oc->label, str_or_empty(node->name), graph, value,
                     later ? str_or_empty(later->name) : "");
}

static bool visit_subgraph(const Onnx__GraphProto *graph, void *ctx)
{
    order_check *oc = ctx;
    const frame *enclosing = oc->current; /* the walk of `graph` moves it */
    oc->status = check_graph_order(graph, enclosing, oc);
    oc->current = enclosing;
    return oc->status == RNNSTATE_OK;
}

static rnnstate_status check_node_order(frame *f, const Onnx__NodeProto *node, order_check *oc)
{
    for (size_t i = 0; i < node->n_input; i++) {
        const char *v = str_or_empty(node->input[i]);
        rnnstate_status st = *v ? check_read(f, node, v, oc) : RNNSTATE_OK; /* "": optional, absent */
        if (st != RNNSTATE_OK)
            return st;
    }
    oc->current = f;
    oc->status = RNNSTATE_OK;
    if (!for_each_subgraph(node, visit_subgraph, oc))
        return oc->status;
    for (size_t o = 0; o < node->n_output; o++)
        if (*str_or_empty(node->output[o]) &&
            !strmap_put(&f->names, str_or_empty(node->output[o]), DEFINED))
            return set_error(oc->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", oc->label);
    return RNNSTATE_OK;
}

static bool fill_frame(frame *f)
{
    const Onnx__GraphProto *g = f->graph;
    for (size_t i = 0; i < g->n_input; i++)
        if (!strmap_put(&f->names, str_or_empty(g->input[i]->name), DEFINED))
            return false;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!strmap_put(&f->names, str_or_empty(g->initializer[i]->name), DEFINED))
            return false;
    for (size_t n = 0; n < g->n_node; n++)
        for (size_t o = 0; o < g->node[n]->n_output; o++) {
            const char *v = str_or_empty(g->node[n]->output[o]);
            if (*v && strmap_get(&f->names, v) < 0 && !strmap_put(&f->names, v, (int)n + 1))
                return false;
        }
    return true;
}

/* Walks the nodes of `g` in order (and, recursively, their subgraphs): each
 * reads only values defined in its graph before it, or in an enclosing graph
 * before the node holding it; each graph output is defined. */
static rnnstate_status check_graph_order(const Onnx__GraphProto *g, const frame *outer,
                                         order_check *oc)
{
    frame f = { .graph = g, .names = STRMAP_INIT, .outer = outer };
    rnnstate_status st = RNNSTATE_OK;
    if (g->n_node > INT_MAX - 1 || !fill_frame(&f))
        st = set_error(oc->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", oc->label);
    for (size_t n = 0; st == RNNSTATE_OK && n < g->n_node; n++)
        st = check_node_order(&f, g->node[n], oc);
    for (size_t o = 0; st == RNNSTATE_OK && o < g->n_output; o++) {
        const char *v = str_or_empty(g->output[o]->name);
        if (lookup(&f, v) != DEFINED)
            st = set_error(oc->err, RNNSTATE_ERR_INVALID,
                           "%s: check failed: graph output '%s' of graph '%s' is not defined", oc->label,
                           v, str_or_empty(g->name));
    }
    strmap_free(&f.names);
    return st;
}

/* ---- state pairs wired as the report says ----------------------------------- */

/* Whether a declared dimension is the pair's: the same fixed size or symbolic
 * name, or unknown on the declared side. `exact` false (a state output, which the
 * caller feeds back as the input) accepts any dimension that could hold the
 * same size: only two different fixed sizes disagree. */
static bool dim_agrees(const Onnx__TensorShapeProto__Dimension *declared, const rnnstate_dim *want,
                       bool exact)
{
    dim_info dim = { 0 };
    dim_from_proto(declared, &dim);
    bool fixed = dim.known && !dim.param;
    bool same = want->param    ? dim.param && !strcmp(dim.param, want->param)
                : want->value >= 0 ? fixed && dim.value == want->value
                                   : !dim.known;
    if (!exact)
        same = !(fixed && want->value >= 0 && !want->param) || dim.value == want->value;
    /* a dimension declared unnamed contradicts nothing (an optional state
     * input of a dynamic batch declares its batch so: its default is empty) */
    else if (!dim.known)
        same = true;
    dim_info_clear(&dim);
    return same;
}

/* NULL when the value's declared type agrees with the pair, else what
 * differs. A value without a declared type or shape cannot contradict it. */
static const char *type_mismatch(const Onnx__ValueInfoProto *vi, const rnnstate_state_pair *p,
                                 bool exact)
{
    int32_t elem = value_info_elem_type(vi);
    if (elem != 0 && strcmp(dtype_name(elem), p->dtype) != 0)
        return "element type";
    const Onnx__TensorShapeProto *shape = value_info_shape(vi);
    if (!shape)
        return NULL;
    if (shape->n_dim != p->rank)
        return "rank";
    for (size_t d = 0; d < p->rank; d++)
        if (!dim_agrees(shape->dim[d], &p->shape[d], exact))
            return "shape";
    return NULL;
}

static rnnstate_status check_pair(const graph_index *gi, const rnnstate_state_pair *p,
                                  const char *label, rnnstate_error *err)
{
    const Onnx__GraphProto *g = gi->graph;
    const value_entry *in = graph_index_find(gi, p->input);
    const value_entry *out = graph_index_find(gi, p->output);
    if (!in || in->graph_input < 0)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: state input '%s' is not a graph input", label,
                         p->input);
    if (in->n_consumers == 0 && !in->read_by_subgraph)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: nothing reads state input '%s'", label, p->input);
    if (!out || out->graph_output < 0)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: state output '%s' is not a graph output", label,
                         p->output);
    if (out->producer < 0 && out->graph_input < 0)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: no node produces state output '%s'", label,
                         p->output);
    /* the report's shape is the input's declaration: the caller feeds it */
    const char *bad = type_mismatch(g->input[in->graph_input], p, true);
    if (bad)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: state input '%s' does not have the %s the report gives",
                         label, p->input, bad);
    bad = type_mismatch(g->output[out->graph_output], p, false);
    if (bad)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: check failed: state output '%s' does not have the %s the report gives",
                         label, p->output, bad);
    return RNNSTATE_OK;
}

rnnstate_status rnnstate_model_check(const rnnstate_model *model, const rnnstate_report *report,
                                     rnnstate_error *err)
{
    Onnx__GraphProto *g = model->proto->graph;
    graph_index gi = GRAPH_INDEX_INIT;
    if (!graph_index_build(&gi, g))
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
    oom_clear();
    rnnstate_status st = check_unique(&gi, model->label, "check failed", err);
    order_check oc = { .label = model->label, .err = err };
    if (st == RNNSTATE_OK)
        st = check_graph_order(g, NULL, &oc);
    for (size_t i = 0; st == RNNSTATE_OK && i < report->n_pairs; i++)
        st = check_pair(&gi, &report->pairs[i], model->label, err);
    graph_index_free(&gi);
    /* a check that failed to allocate (error.h) proves nothing either way */
    if (oom_noted() && (st == RNNSTATE_OK || st == RNNSTATE_ERR_INVALID))
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
    oom_clear();
    return st;
}

/* An If may not hold a branch twice (which one runs would be anyone's
 * guess, and a final state threaded out of one would leave the other
 * without), and its branches must agree on their outputs, which become the
 * If's (a rewrite would otherwise add an output to one branch only, and
 * again on every run). An If that lacks a branch passes: the recurrent
 * nodes inside it are skipped (scope.h), the rest of the model rewritten. */
static rnnstate_status check_if_branches(const Onnx__NodeProto *node, const char *label,
                                         rnnstate_error *err)
{
    const char *name;
    bool repeated;
    const Onnx__GraphProto *branch[2];
    if (if_branches(node, branch, &name, &repeated) && repeated)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: invalid model: If '%s' has more than one %s", label,
                         str_or_empty(node->name), name);
    const Onnx__GraphProto *then_branch = branch[0], *else_branch = branch[1];
    if (then_branch && else_branch && then_branch->n_output != else_branch->n_output)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: invalid model: the branches of If '%s' have %zu and %zu outputs",
                         label, str_or_empty(node->name), then_branch->n_output,
                         else_branch->n_output);
    return RNNSTATE_OK;
}

/* Every subgraph is held to the main graph's rules, in the order a walk
 * down the graphs meets them. Recursion is bounded by the loader's nesting
 * limit. */
static rnnstate_status validate_graph(const scope_tree *tree, const Onnx__GraphProto *graph,
                                      const char *label, rnnstate_error *err)
{
    const scope *s = scope_of_graph(tree, graph);
    rnnstate_status st = s ? check_unique(&s->index, label, "invalid model", err) : RNNSTATE_OK;
    for (size_t n = 0; st == RNNSTATE_OK && n < graph->n_node; n++) {
        const Onnx__NodeProto *node = graph->node[n];
        if (node_is_if(node))
            st = check_if_branches(node, label, err);
        for (size_t a = 0; st == RNNSTATE_OK && a < node->n_attribute; a++) {
            const Onnx__AttributeProto *attr = node->attribute[a];
            if (attr->g)
                st = validate_graph(tree, attr->g, label, err);
            for (size_t k = 0; st == RNNSTATE_OK && k < attr->n_graphs; k++)
                st = validate_graph(tree, attr->graphs[k], label, err);
        }
    }
    return st;
}

rnnstate_status validate_graph_names(const scope_tree *tree, const char *label,
                                     rnnstate_error *err)
{
    return validate_graph(tree, tree->scopes[0]->graph, label, err);
}
