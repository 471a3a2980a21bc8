/* The time-axis pass: traces the sequence axis of every recurrent node's X
 * back to an axis of a main-graph input, and records it in the report
 * (time_axes), from which the metadata pass writes rnnstate.time. The trace
 * runs before the state pass (pass_time_axis_trace), on the indices as they
 * are then (the state pass never changes what feeds an X), the record after
 * it, when it is known which nodes run across time. That is
 * the axis along which a caller cuts a sequence into chunks (rnnstate-verify,
 * StatefulSession). Nodes whose sequence axis does not trace back to an
 * input (it is built by a Reshape, comes out of an op the trace does not
 * follow, ...) are named in one note. Nodes in Loop and Scan bodies run once
 * per iteration, over a sequence of the body's making: they are left out; so
 * are the nodes the state pass left reset at every call (an intra-frame GRU
 * runs across the frequency bins of one frame, not across time). */
#include <stdio.h>
#include <string.h>

#include "util/array.h"
#include "passes/passes.h"
#include "recurrent_ops.h"
#include "state/trace.h"
#include "util/strbuf.h"

#define NAMED_UNTRACED 3 /* nodes named in the note; the rest are counted */

typedef struct untraced {
    size_t n;
    strbuf names;
} untraced;

/* Traces one node's sequence axis and keeps the answer for pass_time_axis,
 * with copies of what the record needs (cleanup may free the node). */
static bool trace_node(rewrite_ctx *ctx, const scope *s, const Onnx__NodeProto *node,
                       size_t report_node)
{
    const recurrent_op *op = recurrent_op_of(node);
    const char *x = node->n_input ? str_or_empty(node->input[RECURRENT_INPUT_X]) : "";
    const char *input = NULL;
    int64_t axis = -1;
    if (*x && !trace_axis_to_input(s, x, recurrent_batch_first(op, node) ? 1 : 0, &input, &axis))
        return false;
    time_trace *grown = owned_array_grow(ctx->time_traces, ctx->n_time_traces, sizeof *grown);
    if (!grown)
        return false;
    ctx->time_traces = grown;
    char *label = NULL; /* only an untraced node is named, in the note */
    if (!input) {
        strbuf sb = STRBUF_INIT;
        /* "{op} '{name}' in {graph}", without printf: in a long chain most
         * nodes are past the trace's depth bound, so nearly every one has a label */
        sb_adds(&sb, op->name);
        sb_add(&sb, " '", 2);
        sb_adds(&sb, str_or_empty(node->name));
        sb_add(&sb, "' in ", 5);
        sb_adds(&sb, s->path);
        if (sb.oom)
            sb_release(&sb);
        else
            label = sb_detach(&sb);
    }
    time_trace t = { input ? strdup(input) : NULL, axis, report_node, label,
                     strdup(str_or_empty(node->name)), false };
    if ((input ? !t.input : !t.label) || !t.node_name) {
        free(t.input);
        free(t.label);
        free(t.node_name);
        return false;
    }
    grown[ctx->n_time_traces++] = t;
    return true;
}

rnnstate_status pass_time_axis_trace(rewrite_ctx *ctx)
{
    bool ok = scope_tree_refresh(&ctx->scopes);
    size_t r = 0; /* the node's entry in the report: every recurrent node, in order */
    for (size_t i = 0; ok && i < ctx->scopes.n; i++) {
        const scope *s = ctx->scopes.scopes[i];
        for (size_t k = 0; ok && k < s->graph->n_node; k++) {
            if (!recurrent_op_of(s->graph->node[k]))
                continue;
            if (!s->in_loop)
                ok = trace_node(ctx, s, s->graph->node[k], r);
            r++;
        }
    }
    return ok ? RNNSTATE_OK : ctx_oom(ctx);
}

/* True when the state pass left the traced node reset at every call. */
static bool left_reset(const rewrite_ctx *ctx, const time_trace *t)
{
    const rnnstate_report *rep = ctx->report.report;
    size_t r = t->report_node;
    return rep && r < rep->n_nodes && rep->nodes[r].status == RNNSTATE_NODE_RESET_EACH_CALL &&
           !strcmp(rep->nodes[r].name, t->node_name);
}

/* Works from the traces alone: the graphs may have lost nodes and
 * subgraphs since (cleanup). */
rnnstate_status pass_time_axis(rewrite_ctx *ctx)
{
    untraced missing = { 0, STRBUF_INIT };
    for (size_t i = 0; i < ctx->n_time_traces; i++) {
        const time_trace *t = &ctx->time_traces[i];
        if (left_reset(ctx, t))
            continue;
        if (t->input)
            report_add_time_axis(&ctx->report, t->input, (size_t)t->axis);
        else if (missing.n++ < NAMED_UNTRACED)
            sb_addf(&missing.names, "%s%s", missing.n > 1 ? ", " : "", t->label);
    }
    if (missing.n)
        report_note(&ctx->report,
                    "time axis: the sequence axis of %zu recurrent node%s does not trace back to "
                    "a graph input: %s%s",
                    missing.n, missing.n == 1 ? "" : "s", missing.names.buf,
                    missing.n > NAMED_UNTRACED ? ", ..." : "");
    bool ok = !missing.names.oom && !report_builder_failed(&ctx->report);
    sb_release(&missing.names);
    return ok ? RNNSTATE_OK : ctx_oom(ctx);
}
