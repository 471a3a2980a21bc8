/* rewrite_ctx: what every pass works on, below the passes and the pipeline
 * that runs them (rewrite.c), so that passes and their helpers share it
 * without importing each other: the model, its scopes and names, the report
 * being built, what the state pass hands to the cleanup pass, and the
 * helpers for failing a pass and naming new values. */
#ifndef RNNSTATE_REWRITE_CTX_H
#define RNNSTATE_REWRITE_CTX_H

#include "analysis/stream.h"
#include "graph_index.h"
#include "scope.h"
#include "model.h"
#include "name_registry.h"
#include "report.h"

/* A value a pass disconnected, and the scope it was read in. */
typedef struct detached_value {
    scope *sc;
    char *name;
} detached_value;

/* Where a recurrent node's sequence axis comes from: an axis of a main-graph
 * input, or nowhere known (input NULL); with what the record needs of the
 * node, copied, since the passes in between may free graphs. */
typedef struct time_trace {
    char *input;
    int64_t axis;
    size_t report_node; /* the node's entry in the report */
    char *label;        /* untraced (input NULL): "GRU 'name' in main/...", else NULL */
    char *node_name;
    bool along_time;    /* the stream analysis found it running along time */
} time_trace;

typedef struct rewrite_ctx {
    Onnx__ModelProto *model;
    Onnx__GraphProto *graph; /* the main graph */
    const char *label;       /* names the model in messages */
    rnnstate_options options;
    scope_tree scopes;       /* scopes.scopes[0] is the main graph */
    name_registry names;
    report_builder report;
    /* Values the state pass disconnected from a recurrent node: the cleanup
     * pass removes the nodes that only they kept alive, and nothing else. */
    detached_value *detached;
    size_t n_detached;
    /* Initializers of main-graph inputs to remove when the state pass ends
     * (defaults of existing state inputs, with required state inputs). */
    strmap dropped; /* name -> 1 */
    /* The sequence axes of the recurrent nodes outside loops, in the order
     * of the report, traced before the state pass changes the graph and
     * recorded after it (time_axis.c). */
    time_trace *time_traces;
    size_t n_time_traces;
    /* The time axes the stream analysis starts from (names borrowed from the
     * main graph's inputs), and what it found (pass_stream.c). */
    rnnstate_time_axis *time_sources;
    size_t n_time_sources;
    size_t n_declared_sources; /* the first ones: --time and their followers */
    stream_analysis stream;
    bool changed;   /* the graph was rewritten */
    bool annotated; /* only the metadata entries were written */
    rnnstate_error *err;
} rewrite_ctx;

/* Releases what the passes left in the context (not the model). */
void ctx_free(rewrite_ctx *ctx);

/* Records a value the pass disconnected, for the cleanup pass. */
bool ctx_detach(rewrite_ctx *ctx, scope *sc, const char *name);

/* Fails the pass with an out-of-memory error. */
rnnstate_status ctx_oom(rewrite_ctx *ctx);

/* The name template (see rnnstate_options) expanded for one slot; a new
 * string, or NULL when out of memory. */
char *expand_name_template(const char *tmpl, const char *op, int k, const char *node_name,
                           const char *slot);

#endif
