/* state/own_caches: the context caches a model already carries (GTCRN,
 * DPCRN-style streaming exports), reported as state pairs of kind
 * RNNSTATE_PAIR_CONTEXT so that a caller feeds them back like the recurrent
 * ones. Nothing is added to the graph.
 *
 * The pattern: a main-graph input I (not already in a pair) is read through
 * view ops and concatenated, along an axis a, in front of data that does not
 * come from I; a Slice or Gather of that Concat along a keeps exactly as many
 * of its newest frames as I brought in (a tail); and a main-graph output O
 * (not already in a pair) is made of such tails and of untouched parts of I
 * through data-movement ops only (Concat, Squeeze, Unsqueeze, Reshape,
 * Transpose, Identity, Cast, ScatterND, Expand), with at least one tail. I
 * and O declare one element type and one shape, and no other output
 * qualifies for I. Anything else is left unpaired: a false pair would be
 * fed back and silently change the model's output. They are reported
 * whatever options.context_caches says: they already are part of the
 * model's interface, and a caller that does not feed them back gets wrong
 * output. */
#ifndef RNNSTATE_STATE_OWN_CACHES_H
#define RNNSTATE_STATE_OWN_CACHES_H

#include "rewrite_ctx.h"

/* Reports the main graph's own context caches as pairs (added false,
 * optional when the input has a default; with required state inputs that
 * default is queued in ctx->dropped like a recurrent state input's). Reads
 * the main graph's index, which must describe the graph (the caller
 * refreshes it). Linear in the size of the main graph. */
rnnstate_status report_own_caches(rewrite_ctx *ctx);

/* Whether the main graph can hold such a cache at all (it has a Concat):
 * a scan of its nodes, so that a model without one costs no index rebuild. */
bool own_caches_possible(const Onnx__GraphProto *main_graph);

#endif
