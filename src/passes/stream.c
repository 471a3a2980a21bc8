/* The stream passes: the analysis before the state pass (which must leave
 * per-frame recurrent nodes reset), the verdict at the end (which needs the
 * node statuses the state pass settled and the caches the context-cache
 * pass added).
 *
 * The time axes start from the inputs the recurrent nodes' sequence axes
 * trace back to (pass_time_axis_trace) and from those the caller declared
 * (rnnstate_options.time_axes); an input whose dimension at a declared
 * position has the same symbolic name follows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "passes/passes.h"
#include "recurrent_ops.h"

static bool add_source(rewrite_ctx *ctx, const char *input, size_t axis)
{
    for (size_t i = 0; i < ctx->n_time_sources; i++)
        if (!strcmp(ctx->time_sources[i].input, input) && ctx->time_sources[i].axis == axis)
            return true;
    rnnstate_time_axis *grown =
        owned_array_grow(ctx->time_sources, ctx->n_time_sources, sizeof *grown);
    if (!grown)
        return false;
    grown[ctx->n_time_sources++] = (rnnstate_time_axis){ input, axis };
    ctx->time_sources = grown;
    return true;
}

static const Onnx__TensorShapeProto__Dimension *input_dim(const Onnx__ValueInfoProto *vi,
                                                          size_t axis)
{
    const Onnx__TensorShapeProto *sh = value_info_shape(vi);
    return sh && axis < sh->n_dim ? sh->dim[axis] : NULL;
}

static const char *dim_name(const Onnx__TensorShapeProto__Dimension *d)
{
    return d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param
               ? d->dim_param
               : NULL;
}

static const Onnx__ValueInfoProto *main_input(rewrite_ctx *ctx, const char *name)
{
    if (!scope_tree_refresh(&ctx->scopes))
        return NULL;
    const graph_index *gi = &ctx->scopes.scopes[0]->index;
    const value_entry *e = graph_index_find(gi, name);
    return e && e->graph_input >= 0 ? ctx->graph->input[e->graph_input] : NULL;
}

/* Inputs whose dimension at the declared axis has the declared one's name. */
static bool add_followers(rewrite_ctx *ctx, const Onnx__ValueInfoProto *declared, size_t axis)
{
    const char *name = dim_name(input_dim(declared, axis));
    for (size_t i = 0; name && i < ctx->graph->n_input; i++) {
        const Onnx__ValueInfoProto *vi = ctx->graph->input[i];
        const char *other = dim_name(input_dim(vi, axis));
        if (vi != declared && other && !strcmp(other, name) &&
            !add_source(ctx, str_or_empty(vi->name), axis))
            return false;
    }
    return true;
}

static rnnstate_status declared_sources(rewrite_ctx *ctx)
{
    for (size_t i = 0; i < ctx->options.n_time_axes; i++) {
        const rnnstate_time_axis *t = &ctx->options.time_axes[i];
        const Onnx__ValueInfoProto *vi = main_input(ctx, t->input);
        const Onnx__TensorShapeProto *sh = vi ? value_info_shape(vi) : NULL;
        if (!vi)
            return set_error(ctx->err, RNNSTATE_ERR_ARGUMENT,
                             "%s: --time names '%s', which is not a graph input", ctx->label,
                             t->input);
        if (sh && t->axis >= sh->n_dim)
            return set_error(ctx->err, RNNSTATE_ERR_ARGUMENT,
                             "%s: --time %s:%zu: the input has %zu axes", ctx->label, t->input,
                             t->axis, sh->n_dim);
        if (!add_source(ctx, str_or_empty(vi->name), t->axis) || !add_followers(ctx, vi, t->axis))
            return ctx_oom(ctx);
    }
    return RNNSTATE_OK;
}

/* Marks the traces (one per recurrent node outside loops, in the order
 * pass_time_axis_trace met them) of the nodes that run along time. */
static void mark_along_time(rewrite_ctx *ctx)
{
    size_t r = 0, t = 0;
    for (size_t i = 0; i < ctx->scopes.n; i++) {
        const scope *s = ctx->scopes.scopes[i];
        for (size_t k = 0; k < s->graph->n_node; k++) {
            const Onnx__NodeProto *node = s->graph->node[k];
            if (!recurrent_op_of(node))
                continue;
            while (t < ctx->n_time_traces && ctx->time_traces[t].report_node < r)
                t++;
            if (t < ctx->n_time_traces && ctx->time_traces[t].report_node == r)
                ctx->time_traces[t].along_time =
                    stream_recurrent_class(&ctx->stream, node) == STREAM_ALONG_TIME;
            r++;
        }
    }
}

/* A traced axis of fixed size: in a model whose other traced axes are
 * symbolic, it is what an intra-frame RNN runs along (frequency bins), not
 * time, which exporters leave symbolic. */
static bool fixed_axis(const Onnx__ValueInfoProto *vi, int64_t axis)
{
    const Onnx__TensorShapeProto__Dimension *d = input_dim(vi, (size_t)axis);
    return d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
}

static rnnstate_status traced_sources(rewrite_ctx *ctx)
{
    bool symbolic = false;
    for (size_t i = 0; i < ctx->n_time_traces; i++) {
        const time_trace *t = &ctx->time_traces[i];
        const Onnx__ValueInfoProto *vi = t->input ? main_input(ctx, t->input) : NULL;
        symbolic |= vi && !fixed_axis(vi, t->axis);
    }
    for (size_t i = 0; i < ctx->n_time_traces; i++) {
        const time_trace *t = &ctx->time_traces[i];
        const Onnx__ValueInfoProto *vi = t->input ? main_input(ctx, t->input) : NULL;
        if (vi && !(symbolic && fixed_axis(vi, t->axis)) &&
            !add_source(ctx, str_or_empty(vi->name), (size_t)t->axis))
            return ctx_oom(ctx);
    }
    return RNNSTATE_OK;
}

rnnstate_status pass_stream_analyse(rewrite_ctx *ctx)
{
    rnnstate_status st = declared_sources(ctx);
    ctx->n_declared_sources = ctx->n_time_sources;
    if (st == RNNSTATE_OK)
        st = traced_sources(ctx);
    if (st != RNNSTATE_OK)
        return st;
    int64_t opset = 0;
    for (size_t i = 0; i < ctx->model->n_opset_import; i++) {
        const char *d = str_or_empty(ctx->model->opset_import[i]->domain);
        if (!*d || !strcmp(d, "ai.onnx"))
            opset = ctx->model->opset_import[i]->version;
    }
    if (!scope_tree_refresh(&ctx->scopes) ||
        !stream_analyse(&ctx->scopes, opset, ctx->time_sources, ctx->n_time_sources,
                        &ctx->stream))
        return ctx_oom(ctx);
    mark_along_time(ctx);
    return RNNSTATE_OK;
}

/* ---- the verdict ----------------------------------------------------------- */

/* A recurrent node along time streams when its state is carried. */
static void block_uncarried(rewrite_ctx *ctx, const time_trace *t)
{
    const rnnstate_report *r = ctx->report.report;
    const rnnstate_node_report *n = t->report_node < r->n_nodes ? &r->nodes[t->report_node] : NULL;
    if (!t->along_time || !n || n->status == RNNSTATE_NODE_UPDATED ||
        n->status == RNNSTATE_NODE_ALREADY_EXPOSED)
        return;
    report_add_blocker(&ctx->report, n->graph, n->op, n->name,
                       "runs along time but its state is not carried (%s)",
                       n->reason ? n->reason : "left alone");
}

/* Recurrent nodes the time axis never reached, in a model whose time axis is
 * known for others, or at all: nothing says how they see time. */
static void block_untraced(rewrite_ctx *ctx, size_t *unknown)
{
    for (size_t i = 0; i < ctx->n_time_traces; i++) {
        const time_trace *t = &ctx->time_traces[i];
        const rnnstate_report *r = ctx->report.report;
        const rnnstate_node_report *n =
            t->report_node < r->n_nodes ? &r->nodes[t->report_node] : NULL;
        if (t->input || !n || n->status == RNNSTATE_NODE_RESET_EACH_CALL)
            continue;
        report_add_blocker(&ctx->report, n->graph, n->op, n->name,
                           "its sequence axis does not trace back to a graph input (name the "
                           "time axis with --time INPUT:AXIS)");
        ++*unknown;
    }
}

rnnstate_status pass_stream_verdict(rewrite_ctx *ctx)
{
    const stream_analysis *a = &ctx->stream;
    size_t unknown = 0, none = 0;
    if (!a->analysed && !ctx->n_time_traces)
        return RNNSTATE_OK; /* no recurrent node, no time axis given: left alone */
    for (size_t i = 0; i < a->n_blockers; i++) {
        const stream_blocker *b = &a->blockers[i];
        report_add_blocker(&ctx->report, b->graph, b->op, b->name, "%s", b->reason);
        *(b->unknown ? &unknown : &none) += 1;
    }
    for (size_t i = 0; i < ctx->n_time_traces; i++)
        block_uncarried(ctx, &ctx->time_traces[i]);
    if (!ctx->options.context_caches)
        for (size_t i = 0; i < a->n_needs; i++)
            report_add_blocker(&ctx->report, "main", a->needs[i].op, a->needs[i].name,
                               "needs %lld frame(s) of the previous call, and context caches "
                               "are off (--no-context-caches)",
                               (long long)a->needs[i].frames);
    block_untraced(ctx, &unknown);
    if (!a->analysed)
        unknown += !unknown;
    none = ctx->report.report->n_blockers - unknown;
    report_set_stream(&ctx->report,
                      none ? RNNSTATE_STREAM_NONE
                           : unknown ? RNNSTATE_STREAM_UNKNOWN : RNNSTATE_STREAM_EXACT,
                      a->chunk_multiple ? a->chunk_multiple : 1);
    /* the traced ones are recorded by pass_time_axis, for the nodes along time */
    for (size_t i = 0; i < ctx->n_declared_sources; i++)
        report_add_time_axis(&ctx->report, ctx->time_sources[i].input,
                             ctx->time_sources[i].axis);
    return report_builder_failed(&ctx->report) ? ctx_oom(ctx) : RNNSTATE_OK;
}

