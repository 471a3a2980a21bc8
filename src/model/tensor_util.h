/* tensor_util: element types and tensor contents.
 *
 * ONNX stores a tensor's elements either in raw_data (little-endian bytes) or
 * in a typed repeated field whose C type depends on the element type (float16
 * lives in int32_data, uint32 in uint64_data, ...). The passes only need the
 * elements as bytes, so tensor_read_bytes() normalises both forms. All size
 * arithmetic is checked: a tensor whose size overflows is refused. */
#ifndef RNNSTATE_TENSOR_UTIL_H
#define RNNSTATE_TENSOR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

/* Size in bytes of one element, or 0 for types the rewriter does not handle
 * (strings, undefined). */
size_t dtype_size(int32_t elem_type);
/* numpy-style name ("float32"), or "unknown". */
const char *dtype_name(int32_t elem_type);

/* Element count of a shape; false when a dim is negative or it overflows. */
bool shape_element_count(const int64_t *dims, size_t rank, size_t *count);

/* The tensor's elements as a new malloc'd array of little-endian bytes
 * (*size = count * dtype_size). False when the type is unsupported, the
 * data is external or inconsistent with the dims, or memory runs out. */
bool tensor_read_bytes(const Onnx__TensorProto *t, unsigned char **bytes, size_t *size);

/* True when all elements of the array are byte-for-byte equal. */
bool bytes_uniform(const unsigned char *bytes, size_t size, size_t elem_size);

/* A new tensor named `name` of the given type and dims whose raw_data is a
 * copy of `bytes` (which must hold exactly the element count's bytes). */
Onnx__TensorProto *tensor_new(const char *name, int32_t elem_type, const int64_t *dims,
                              size_t rank, const unsigned char *bytes, size_t size);

/* A new tensor of the given shape whose every element is `elem` (one element,
 * dtype_size(elem_type) bytes). NULL when the size overflows the limit. */
Onnx__TensorProto *tensor_new_filled(const char *name, int32_t elem_type, const int64_t *dims,
                                     size_t rank, const unsigned char *elem);

/* A 1-D int64 tensor. */
Onnx__TensorProto *tensor_new_int64s(const char *name, const int64_t *values, size_t n);

/* Reads a tensor of integers (int32 or int64, any shape) into a new array. */
bool tensor_read_int64s(const Onnx__TensorProto *t, int64_t **values, size_t *n);

/* The largest tensor the rewriter will create, in bytes: a default state
 * that would be larger is empty and completed at run time instead (a fill of
 * batch 1), so a hostile model of a few bytes cannot make the tool
 * allocate gigabytes. */
#define RNNSTATE_MAX_CREATED_TENSOR_BYTES ((size_t)64 << 20)

#endif
