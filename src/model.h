/* The library's model object: a parsed ModelProto plus the label used in
 * messages. The proto is allocated by protobuf-c's default allocator and
 * released with protobuf_c_message_free_unpacked(). */
#ifndef RNNSTATE_MODEL_H
#define RNNSTATE_MODEL_H

#include "onnx.pb-c.h"
#include "rnnstate.h"

struct rnnstate_model {
    Onnx__ModelProto *proto;
    char *label;
};

/* Fills *err (when not NULL) with status and a printf-style message, and
 * returns status, so error paths can `return set_error(...)`. */
rnnstate_status set_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Refuses a graph whose names clash (a value produced twice, duplicate
 * inputs, outputs or initializers): the rewrite's analysis assumes SSA. */
rnnstate_status validate_graph_names(const Onnx__GraphProto *graph, const char *label,
                                     rnnstate_error *err);

#endif
