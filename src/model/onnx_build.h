/* onnx_build: allocating pieces of a parsed ONNX model.
 *
 * A parsed model's own pieces live in its arena; everything added to it must
 * be allocated with malloc() (never a string literal or a pointer borrowed
 * from elsewhere), because freeing a model (arena_message_free(), or the
 * model's own free) free()s every piece that is not in an arena (the rule is
 * in util/arena.h and model.h). These helpers are the only place that does it:
 * the passes, the tests' model builder (tests/unit/model_builder.c) and the
 * bad-model generator (tests/tools/make_bad_models.c) all build through them.
 * Each returns NULL/false when out of memory and leaves its target unchanged;
 * a message handed to a function that "takes" it belongs to the target
 * afterwards, or is freed when the call fails. */
#ifndef RNNSTATE_ONNX_BUILD_H
#define RNNSTATE_ONNX_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

/* A dimension as the passes see it: a fixed size, a symbolic name, or unknown. */
typedef struct dim_info {
    bool known;    /* false: nothing is known about this dimension */
    int64_t value; /* when known and param is NULL */
    char *param;   /* owned symbolic name, or NULL */
} dim_info;

void dim_info_clear(dim_info *d);

/* Null-safe view of a protobuf-c string field (absent strings are NULL). */
static inline const char *str_or_empty(const char *s) { return s ? s : ""; }

/* Replaces *field with a malloc'd copy of s, freeing the old value. */
bool set_string(char **field, const char *s);

/* Appends item to a protobuf-c repeated message field (array + count). */
bool append_ptr(void ***array, size_t *count, void *item);
#define APPEND_PTR(arr, cnt, item) append_ptr((void ***)(arr), (cnt), (item))

/* Appends a malloc'd copy of s to a repeated string field. */
bool append_string(char ***array, size_t *count, const char *s);
/* Appends each name of a comma-separated list ("X,W,R,,,h0": six names, two
 * of them empty); "" and NULL append nothing. */
bool append_list(char ***array, size_t *count, const char *list);

/* A model with one opset import (the default domain at `opset`), the given
 * ir_version and producer, and an empty graph named `graph_name`. */
Onnx__ModelProto *model_new(int64_t ir_version, int64_t opset, const char *producer,
                            const char *graph_name);
/* An empty graph; `name` NULL leaves it unnamed. */
Onnx__GraphProto *graph_new(const char *name);

/* Sets node->input[slot] (or output) to name, padding missing optional
 * slots with "". */
bool node_set_input(Onnx__NodeProto *node, size_t slot, const char *name);
bool node_set_output(Onnx__NodeProto *node, size_t slot, const char *name);

/* The name at a slot, or "" when the slot is absent. */
const char *node_input(const Onnx__NodeProto *node, size_t slot);
const char *node_output(const Onnx__NodeProto *node, size_t slot);

/* A new node; inputs/outputs are appended with append_string(). NULL
 * op_type or name leave the field absent. */
Onnx__NodeProto *node_new(const char *op_type, const char *name);

/* Attributes, appended to the node: an attribute of `type` holding no value
 * yet (the caller fills it), or one of the usual kinds. The tensor and graph
 * attributes take `t` and `g`. */
Onnx__AttributeProto *node_add_attr(Onnx__NodeProto *node, const char *name,
                                    Onnx__AttributeProto__AttributeType type);
bool node_add_int_attr(Onnx__NodeProto *node, const char *name, int64_t value);
bool node_add_ints_attr(Onnx__NodeProto *node, const char *name, const int64_t *values,
                        size_t n);
bool node_add_float_attr(Onnx__NodeProto *node, const char *name, float value);
bool node_add_string_attr(Onnx__NodeProto *node, const char *name, const char *value);
bool node_add_tensor_attr(Onnx__NodeProto *node, const char *name, Onnx__TensorProto *t);
bool node_add_graph_attr(Onnx__NodeProto *node, const char *name, Onnx__GraphProto *g);

const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *node, const char *name);
/* The attribute's integer, or `fallback` when it is absent or not an INT. */
int64_t node_attr_int(const Onnx__NodeProto *node, const char *name, int64_t fallback);
/* The attribute's string value, or NULL when absent. */
const char *node_attr_string(const Onnx__NodeProto *node, const char *name, char *buf,
                             size_t bufsize);

/* A new tensor-typed ValueInfo with the given element type and shape. */
Onnx__ValueInfoProto *value_info_new(const char *name, int32_t elem_type, const dim_info *dims,
                                     size_t rank);
/* The same from a shape written as text: "T,batch,3" (numbers are fixed
 * sizes, negative ones included; other words symbolic), "?" a dimension with
 * neither, "" rank 0, NULL no shape at all. `name` NULL leaves the name out,
 * `elem_type` negative the whole type. */
Onnx__ValueInfoProto *value_info_from_text(const char *name, int32_t elem_type, const char *dims);
/* A copy of `src` (its type, every field of it) under another name. */
Onnx__ValueInfoProto *value_info_copy(const Onnx__ValueInfoProto *src, const char *name);

/* A tensor with a name (NULL: none), element type and dims, and no data yet. */
Onnx__TensorProto *tensor_shell_new(const char *name, int32_t elem_type, const int64_t *dims,
                                    size_t rank);

/* A metadata_props entry with that key and no value. */
Onnx__StringStringEntryProto *string_entry_new(const char *key);

/* The tensor shape declared by a ValueInfo, or NULL. */
const Onnx__TensorShapeProto *value_info_shape(const Onnx__ValueInfoProto *vi);
int32_t value_info_elem_type(const Onnx__ValueInfoProto *vi);

/* Reads one dimension of a declared shape. */
void dim_from_proto(const Onnx__TensorShapeProto__Dimension *d, dim_info *out);

#endif
