/* onnx_build: allocating pieces of a parsed ONNX model.
 *
 * protobuf-c releases a parsed model with free_unpacked(), which free()s every
 * string, array and sub-message it finds. Everything added to a model must
 * therefore be allocated with malloc() (never a string literal or a pointer
 * borrowed from elsewhere), and these helpers are the only place that does it.
 * Each returns NULL/false when out of memory and leaves its target unchanged. */
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

/* Sets node->input[slot] (or output) to name, padding missing optional
 * slots with "". */
bool node_set_input(Onnx__NodeProto *node, size_t slot, const char *name);
bool node_set_output(Onnx__NodeProto *node, size_t slot, const char *name);

/* The name at a slot, or "" when the slot is absent. */
const char *node_input(const Onnx__NodeProto *node, size_t slot);
const char *node_output(const Onnx__NodeProto *node, size_t slot);

/* A new node; inputs/outputs are appended with append_string(). */
Onnx__NodeProto *node_new(const char *op_type, const char *name);
bool node_add_int_attr(Onnx__NodeProto *node, const char *name, int64_t value);

const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *node, const char *name);
/* The attribute's integer, or `fallback` when it is absent or not an INT. */
int64_t node_attr_int(const Onnx__NodeProto *node, const char *name, int64_t fallback);
/* The attribute's string value, or NULL when absent. */
const char *node_attr_string(const Onnx__NodeProto *node, const char *name, char *buf,
                             size_t bufsize);

/* A new tensor-typed ValueInfo with the given element type and shape. */
Onnx__ValueInfoProto *value_info_new(const char *name, int32_t elem_type, const dim_info *dims,
                                     size_t rank);

/* The tensor shape declared by a ValueInfo, or NULL. */
const Onnx__TensorShapeProto *value_info_shape(const Onnx__ValueInfoProto *vi);
int32_t value_info_elem_type(const Onnx__ValueInfoProto *vi);

/* Reads one dimension of a declared shape. */
void dim_from_proto(const Onnx__TensorShapeProto__Dimension *d, dim_info *out);

#endif
