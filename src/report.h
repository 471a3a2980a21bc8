/* Building a report while the passes run. The builder owns everything it
 * collects; report_builder_finish() hands the finished rnnstate_report to the
 * caller. After an allocation failure the builder records `oom` and ignores
 * further additions, so passes check report_builder_failed() once. */
#ifndef RNNSTATE_REPORT_H
#define RNNSTATE_REPORT_H

#include <stdbool.h>

#include "model/onnx_build.h"
#include "rnnstate.h"
#include "util/strbuf.h"
#include "util/strmap.h"

typedef struct report_builder {
    rnnstate_report *report;
    strmap pair_keys; /* "input\x1foutput" of every pair, for deduplication */
    bool oom;
    bool skip_decisions; /* report_node_decide() records nothing (options.no_decisions) */
} report_builder;

bool report_builder_init(report_builder *rb);
bool report_builder_failed(const report_builder *rb);
rnnstate_report *report_builder_finish(report_builder *rb);
void report_builder_discard(report_builder *rb);

/* Adds a node entry and returns its index. */
size_t report_add_node(report_builder *rb, const char *graph, const char *op, const char *name);
void report_node_set_sequence_length(report_builder *rb, size_t node, int64_t length);
void report_node_set_status(report_builder *rb, size_t node, rnnstate_node_status status);
void report_node_set_reason(report_builder *rb, size_t node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void report_node_warn(report_builder *rb, size_t node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void report_node_decide(report_builder *rb, size_t node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void report_node_input_added(report_builder *rb, size_t node, const char *name);
void report_node_output_added(report_builder *rb, size_t node, const char *name);
void report_note(report_builder *rb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds a state pair unless one with the same input and output exists. */
void report_add_pair(report_builder *rb, const char *input, const char *output,
                     const dim_info *dims, size_t rank, int32_t elem_type, int batch_axis,
                     bool optional, bool added, rnnstate_pair_kind kind);
/* Records the streaming verdict and the chunk multiple. */
void report_set_stream(report_builder *rb, rnnstate_stream_verdict verdict, size_t chunk_multiple);
/* Adds a blocker of exact streaming. */
void report_add_blocker(report_builder *rb, const char *graph, const char *op, const char *name,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Appends the stream verdict as a JSON object, or null when not analysed
 * (the report's and the metadata's format). */
void report_stream_json(strbuf *sb, const rnnstate_report *r);

/* Records that a recurrent node's sequence axis is axis `axis` of graph
 * input `input`, unless that is recorded already. */
void report_add_time_axis(report_builder *rb, const char *input, size_t axis);
/* Appends the time axes as a JSON list of {"input", "axis"} (the report's
 * and the metadata's format). */
void report_time_axes_json(strbuf *sb, const rnnstate_report *r);

/* Appends one state pair as a JSON object (the report's and the metadata's
 * format; `with_added` adds the report-only "added" field). */
void report_pair_json(strbuf *sb, const rnnstate_state_pair *p, bool with_added);

#endif
