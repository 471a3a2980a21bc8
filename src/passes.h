/* The rewrite pipeline: load -> index -> ordered passes -> report -> save.
 *
 * A pass is a function over a rewrite_ctx. It may change the graphs; when it
 * does, it flushes its queued nodes and reindexes the scopes before
 * returning, so that every pass starts from indices that match the graphs.
 * Passes report into ctx->report and return RNNSTATE_OK, or an error status
 * with ctx->err filled. */
#ifndef RNNSTATE_PASSES_H
#define RNNSTATE_PASSES_H

#include "graph_index.h"
#include "scope.h"
#include "model.h"
#include "report.h"

/* A value a pass disconnected, and the scope it was read in. */
typedef struct detached_value {
    scope *sc;
    char *name;
} detached_value;

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
    char **dropped;
    size_t n_dropped;
    bool changed;
    rnnstate_error *err;
} rewrite_ctx;

typedef rnnstate_status (*rewrite_pass)(rewrite_ctx *ctx);

/* Converts layout=1 recurrent nodes to layout 0 between Transposes. */
rnnstate_status pass_layout0(rewrite_ctx *ctx);
/* Exposes the initial and final states of every recurrent node. */
rnnstate_status pass_state(rewrite_ctx *ctx);
/* Removes nodes and initializers left without readers by the state pass. */
rnnstate_status pass_cleanup(rewrite_ctx *ctx);

/* Writes the state pairs into metadata_props when the model changed. */
rnnstate_status pass_metadata(rewrite_ctx *ctx);

/* The name template (see rnnstate_options) expanded for one slot. */
char *expand_name_template(const char *tmpl, const char *op, int k, const char *node_name,
                           const char *slot);

/* Records a value the pass disconnected, for the cleanup pass. */
bool ctx_detach(rewrite_ctx *ctx, scope *sc, const char *name);

/* Fails the pass with an out-of-memory error. */
rnnstate_status ctx_oom(rewrite_ctx *ctx);

#endif
