/* The rewrite pipeline: load -> index -> ordered passes -> report -> save.
 *
 * A pass is a function over a rewrite_ctx (rewrite_ctx.h), listed in
 * passes[] (rewrite.c). It may change the graphs; when it does, it flushes
 * its queued nodes and marks the scope tree stale before returning. A pass
 * that reads the indices calls scope_tree_refresh() first, so that it reads
 * indices that match the graphs, and a large graph is not indexed again
 * when no later pass reads its index.
 * Passes report into ctx->report and return RNNSTATE_OK, or an error status
 * with ctx->err filled. */
#ifndef RNNSTATE_PASSES_H
#define RNNSTATE_PASSES_H

#include "rewrite_ctx.h"

typedef rnnstate_status (*rewrite_pass)(rewrite_ctx *ctx);

/* Converts layout=1 recurrent nodes to layout 0 between Transposes. */
rnnstate_status pass_layout0(rewrite_ctx *ctx);
/* Exposes the initial and final states of every recurrent node. */
rnnstate_status pass_state(rewrite_ctx *ctx);
/* Removes nodes and initializers left without readers by the state pass. */
rnnstate_status pass_cleanup(rewrite_ctx *ctx);
/* Traces each recurrent node's sequence axis back to a graph input axis,
 * before the state pass changes the graph (whose index it reads). */
rnnstate_status pass_time_axis_trace(rewrite_ctx *ctx);
/* Records the traced axes of the nodes that run across time. */
rnnstate_status pass_time_axis(rewrite_ctx *ctx);

/* Follows the time axes (traced, and given in the options) forward through
 * the graph and classifies every node they reach (analysis/stream.h). */
rnnstate_status pass_stream_analyse(rewrite_ctx *ctx);
/* Gives each causal convolution or pool along time a context cache: a state
 * pair carrying the frames it reads again at the next call. */
rnnstate_status pass_context_cache(rewrite_ctx *ctx);
/* Settles the stream verdict and its blockers in the report. */
rnnstate_status pass_stream_verdict(rewrite_ctx *ctx);

/* Writes the state pairs and the time axes into metadata_props when the
 * model changed or has state pairs. */
rnnstate_status pass_metadata(rewrite_ctx *ctx);

#endif
