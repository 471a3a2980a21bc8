/* Structural verification of a rewritten model (the command line's --check),
 * run on the model as re-loaded from the written file. */
#include <string.h>

#include "graph_index.h"
#include "model.h"
#include "onnx_build.h"

/* Graph inputs, outputs and initializers must each have unique names, and no
 * value may be produced twice (by two nodes, or by a node and an input or
 * initializer). */
static rnnstate_status check_unique(const Onnx__GraphProto *g, const char *label,
                                    const char *what_failed, rnnstate_error *err)
{
    strmap seen = STRMAP_INIT;
    rnnstate_status st = RNNSTATE_OK;
    const char *dup = NULL, *what = NULL;
    for (size_t i = 0; !dup && i < g->n_input; i++)
        if (strmap_get(&seen, str_or_empty(g->input[i]->name)) >= 0)
            dup = g->input[i]->name, what = "graph input";
        else if (!strmap_put(&seen, str_or_empty(g->input[i]->name), 0))
            st = RNNSTATE_ERR_NOMEM;
    /* an initializer may share an input's name (that is a default), not another's */
    strmap inits = STRMAP_INIT;
    for (size_t i = 0; !dup && st == RNNSTATE_OK && i < g->n_initializer; i++) {
        const char *n = str_or_empty(g->initializer[i]->name);
        if (strmap_get(&inits, n) >= 0)
            dup = n, what = "initializer";
        else if (!strmap_put(&inits, n, 0) || !strmap_put(&seen, n, 0))
            st = RNNSTATE_ERR_NOMEM;
    }
    for (size_t n = 0; !dup && st == RNNSTATE_OK && n < g->n_node; n++) {
        const Onnx__NodeProto *node = g->node[n];
        for (size_t o = 0; !dup && o < node->n_output; o++) {
            const char *v = str_or_empty(node->output[o]);
            if (!*v)
                continue;
            if (strmap_get(&seen, v) >= 0)
                dup = v, what = "value produced";
            else if (!strmap_put(&seen, v, 0))
                st = RNNSTATE_ERR_NOMEM;
        }
    }
    strmap out = STRMAP_INIT;
    for (size_t i = 0; !dup && st == RNNSTATE_OK && i < g->n_output; i++)
        if (strmap_get(&out, str_or_empty(g->output[i]->name)) >= 0)
            dup = g->output[i]->name, what = "graph output";
        else if (!strmap_put(&out, str_or_empty(g->output[i]->name), 0))
            st = RNNSTATE_ERR_NOMEM;
    strmap_free(&seen);
    strmap_free(&inits);
    strmap_free(&out);
    if (st != RNNSTATE_OK)
        return set_error(err, st, "%s: out of memory", label);
    if (dup)
        return set_error(err, RNNSTATE_ERR_INVALID, "%s: %s: %s '%s' appears twice", label,
                         what_failed, what, dup);
    return RNNSTATE_OK;
}

static rnnstate_status check_pair(const graph_index *gi, const rnnstate_state_pair *p,
                                  const char *label, rnnstate_error *err)
{
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
    return RNNSTATE_OK;
}

rnnstate_status rnnstate_model_check(const rnnstate_model *model, const rnnstate_report *report,
                                     rnnstate_error *err)
{
    Onnx__GraphProto *g = model->proto->graph;
    rnnstate_status st = check_unique(g, model->label, "check failed", err);
    if (st != RNNSTATE_OK)
        return st;
    graph_index gi = { .by_name = STRMAP_INIT };
    if (!graph_index_build(&gi, g))
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
    for (size_t i = 0; st == RNNSTATE_OK && i < report->n_pairs; i++)
        st = check_pair(&gi, &report->pairs[i], model->label, err);
    graph_index_free(&gi);
    return st;
}

rnnstate_status validate_graph_names(const Onnx__GraphProto *graph, const char *label,
                                     rnnstate_error *err)
{
    return check_unique(graph, label, "invalid model", err);
}
