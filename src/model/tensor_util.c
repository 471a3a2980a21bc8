#include "model/tensor_util.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model/onnx_build.h"
#include "util/arena.h"

size_t dtype_size(int32_t elem_type)
{
    switch (elem_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128:
        return 16;
    default:
        return 0;
    }
}

const char *dtype_name(int32_t elem_type)
{
    switch (elem_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return "float32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return "uint8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return "int8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return "uint16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return "int16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return "int32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return "int64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: return "string";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return "bool";
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return "float16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return "float64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return "uint32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return "uint64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64: return "complex64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128: return "complex128";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return "bfloat16";
    default: return "unknown";
    }
}

bool shape_element_count(const int64_t *dims, size_t rank, size_t *count)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0 || (uint64_t)dims[i] > SIZE_MAX)
            return false;
        if (dims[i] != 0 && n > SIZE_MAX / (size_t)dims[i])
            return false;
        n *= (size_t)dims[i];
    }
    *count = n;
    return true;
}

bool bytes_uniform(const unsigned char *bytes, size_t size, size_t elem_size)
{
    if (elem_size == 0 || size % elem_size != 0)
        return false;
    for (size_t off = elem_size; off < size; off += elem_size)
        if (memcmp(bytes, bytes + off, elem_size) != 0)
            return false;
    return true;
}

/* Stores the low `width` bytes of `value` little-endian at `out`. */
static void store_le(unsigned char *out, uint64_t value, size_t width)
{
    for (size_t b = 0; b < width; b++)
        out[b] = (unsigned char)(value >> (8 * b));
}

/* Element i of t's typed field as bits, of which store_le keeps the element's
 * width (float16 bits kept in int32_data, ...). */
static uint64_t typed_bits(const Onnx__TensorProto *t, size_t i)
{
    uint32_t bits32;
    uint64_t bits64;
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        memcpy(&bits32, &t->float_data[i], sizeof bits32);
        return bits32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        memcpy(&bits64, &t->double_data[i], sizeof bits64);
        return bits64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return (uint64_t)t->int64_data[i];
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        return t->uint64_data[i];
    default:
        return (uint32_t)t->int32_data[i];
    }
}

/* Copies `count` typed values into little-endian bytes of width `width`; the
 * caller has checked typed_count. The complex types are not read. */
static bool typed_to_bytes(const Onnx__TensorProto *t, size_t count, size_t width,
                           unsigned char *out)
{
    if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64 ||
        t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128)
        return false;
    for (size_t i = 0; i < count; i++)
        store_le(out + i * width, typed_bits(t, i), width);
    return true;
}

/* How many elements the typed field for t's data type holds. */
static size_t typed_count(const Onnx__TensorProto *t)
{
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return t->n_float_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return t->n_double_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return t->n_int64_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return t->n_uint64_data;
    default: return t->n_int32_data;
    }
}

bool tensor_read_bytes(const Onnx__TensorProto *t, unsigned char **bytes, size_t *size)
{
    size_t width = dtype_size(t->data_type);
    size_t count;
    if (!width || (t->has_data_location &&
                   t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return false;
    if (!shape_element_count(t->dims, t->n_dims, &count) || count > SIZE_MAX / width)
        return false;
    size_t total = count * width;
    bool raw = t->has_raw_data && t->raw_data.len > 0;
    /* the dims of a hostile tensor may claim far more than its data holds:
     * check before allocating */
    if ((raw && t->raw_data.len != total) || (!raw && typed_count(t) != count))
        return false;
    unsigned char *out = malloc(total ? total : 1);
    if (!out) {
        oom_note(); /* "cannot read" would change answers (error.h) */
        return false;
    }
    bool ok;
    if (raw) {
        memcpy(out, t->raw_data.data, total);
        ok = true;
    } else {
        ok = typed_to_bytes(t, count, width, out);
    }
    if (!ok) {
        free(out);
        return false;
    }
    *bytes = out;
    *size = total;
    return true;
}

static Onnx__TensorProto *tensor_alloc(const char *name, int32_t elem_type, const int64_t *dims,
                                       size_t rank, size_t data_size)
{
    if (data_size > RNNSTATE_MAX_CREATED_TENSOR_BYTES)
        return NULL;
    Onnx__TensorProto *t = tensor_shell_new(name, elem_type, dims, rank);
    if (!t)
        return NULL;
    t->has_raw_data = 1;
    t->raw_data.len = data_size;
    t->raw_data.data = malloc(data_size ? data_size : 1);
    if (!t->raw_data.data) {
        arena_message_free(&t->base);
        return NULL;
    }
    return t;
}

Onnx__TensorProto *tensor_new(const char *name, int32_t elem_type, const int64_t *dims,
                              size_t rank, const unsigned char *bytes, size_t size)
{
    Onnx__TensorProto *t = tensor_alloc(name, elem_type, dims, rank, size);
    if (t && size)
        memcpy(t->raw_data.data, bytes, size);
    return t;
}

Onnx__TensorProto *tensor_new_filled(const char *name, int32_t elem_type, const int64_t *dims,
                                     size_t rank, const unsigned char *elem)
{
    size_t width = dtype_size(elem_type), count;
    if (!width || !shape_element_count(dims, rank, &count) || count > SIZE_MAX / width)
        return NULL;
    Onnx__TensorProto *t = tensor_alloc(name, elem_type, dims, rank, count * width);
    if (!t)
        return NULL;
    for (size_t i = 0; i < count; i++)
        memcpy(t->raw_data.data + i * width, elem, width);
    return t;
}

Onnx__TensorProto *tensor_new_int64s(const char *name, const int64_t *values, size_t n)
{
    unsigned char *bytes = malloc(n ? n * 8 : 1);
    if (!bytes)
        return NULL;
    for (size_t i = 0; i < n; i++)
        store_le(bytes + i * 8, (uint64_t)values[i], 8);
    int64_t dims[1] = { (int64_t)n };
    Onnx__TensorProto *t =
        tensor_new(name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, dims, 1, bytes, n * 8);
    free(bytes);
    return t;
}

bool tensor_read_int64s(const Onnx__TensorProto *t, int64_t **values, size_t *n)
{
    size_t width = dtype_size(t->data_type);
    if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 &&
        t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
        return false;
    unsigned char *bytes;
    size_t size;
    if (!tensor_read_bytes(t, &bytes, &size))
        return false;
    size_t count = size / width;
    int64_t *out = malloc((count ? count : 1) * sizeof *out);
    if (!out) {
        free(bytes);
        oom_note();
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        uint64_t v = 0;
        for (size_t b = 0; b < width; b++)
            v |= (uint64_t)bytes[i * width + b] << (8 * b);
        if (width == 4)
            v = (uint64_t)(int64_t)(int32_t)(uint32_t)v; /* sign-extend */
        out[i] = (int64_t)v;
    }
    free(bytes);
    *values = out;
    *n = count;
    return true;
}
