/* analysis/stream: the time axis followed forward through the whole graph.
 *
 * Starting from the time axes of the graph inputs, every node the time axis
 * reaches is classified by how it treats time, one table entry per op class
 * (as Google's kws_streaming asks each layer):
 *   - frame-wise: each output frame depends on the same input frame only
 *     (elementwise ops, MatMul over features, normalisations over features,
 *     layout ops that keep the time axis identifiable);
 *   - recurrent along time: a state pair carries it (the state pass);
 *   - per-frame recurrent: time lies in its batch (an intra-frame RNN of a
 *     dual-path model): it must start from its fixed state at every call;
 *   - causal context: a Conv or pool with a kernel longer than one frame and
 *     all its padding before the frames (pads, a zero Pad before it, or a
 *     Slice after it that drops what right padding added): a context cache
 *     carries the frames it needs from the previous call;
 *   - strided along time: chunks must be a multiple of the stride;
 *   - look-ahead, whole-sequence: cannot stream exactly (the blockers);
 *   - unknown: an op the analysis does not know, named, never guessed.
 * The time axis of each value is memoized in MEMO_SLOT_STREAM of its index.
 * The analysis reads the graphs only. */
#ifndef RNNSTATE_ANALYSIS_STREAM_H
#define RNNSTATE_ANALYSIS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnnstate.h"
#include "ptrmap.h"
#include "scope.h"

/* A node that cannot stream exactly, or that the analysis does not know.
 * Its names are copies: the passes after the analysis may free the node. */
typedef struct stream_blocker {
    char *graph;  /* the scope's path */
    char *op;
    char *name;
    bool unknown; /* the analysis does not know the op (else: it cannot stream) */
    char *reason;
} stream_blocker;

/* A causal convolution or pool of the main graph that needs the last
 * `frames` frames of its input from the previous call. */
typedef struct context_need {
    /* The Conv or pool; the passes in between may free it (a fuzzed graph's
     * cleanup), so it is looked for in the graph before it is read. */
    const Onnx__NodeProto *node;
    char *op, *name;             /* copies of its op_type and name */
    /* The zero Pad before it that adds those frames, or NULL when the node's
     * own pads attribute does. */
    const Onnx__NodeProto *pad;
    int time_axis;  /* the time axis of the node's input (and the Pad's) */
    int64_t frames; /* frames to carry: the padding before the frames */
} context_need;

typedef struct stream_analysis {
    bool analysed;          /* at least one input had a time axis */
    size_t chunk_multiple;  /* the least common multiple the strides ask for */
    stream_blocker *blockers;
    size_t n_blockers;
    context_need *needs;
    size_t n_needs;
    /* The recurrent nodes the time axis reached: STREAM_ALONG_TIME (forward
     * along time: streamable when the state pass carries their state) or
     * STREAM_PER_FRAME (time is their batch: reset at every call). */
    ptrmap classes;
    /* Recurrent nodes along time whose batch the graph does not declare but
     * the analysis tells in terms of an input's named dimension: node ->
     * index into names ("batch", or "batch*8" for a dual-path model's
     * inter-frame RNN, whose batch is the batch times the frequency bins). */
    ptrmap batch_names;
    char **names;
    size_t n_names;
} stream_analysis;

enum { STREAM_ALONG_TIME = 1, STREAM_PER_FRAME = 2 };

/* Follows the time axes `sources` (axes of main-graph inputs) through every
 * graph of `tree`; `opset` is the default domain's opset (Softmax's axis
 * rule changed at 13). Fills *out (zeroed first). False only when memory
 * runs out (*out is then freed). */
bool stream_analyse(const scope_tree *tree, int64_t opset, const rnnstate_time_axis *sources,
                    size_t n_sources, stream_analysis *out);

void stream_analysis_free(stream_analysis *a);

/* STREAM_ALONG_TIME or STREAM_PER_FRAME for a recurrent node the time axis
 * reached, else 0; constant time. */
int stream_recurrent_class(const stream_analysis *a, const Onnx__NodeProto *node);

/* The batch of a recurrent node along time as a named input dimension, or
 * a multiple of one ("batch*8"), where the graph does not declare it; NULL
 * when not known that way. */
const char *stream_batch_name(const stream_analysis *a, const Onnx__NodeProto *node);

#endif
