/* wire: the protobuf wire format, one field at a time.
 *
 * Both scanners of a serialized model read through wire_reader: wire_scan
 * over bytes in memory, lazy_scan over a file it reads in windows with
 * pread(). The reader decodes keys, varints and lengths and checks every
 * field against the end of its enclosing message; what to do with a field,
 * and how to word a failure, stays with the caller. */
#ifndef RNNSTATE_WIRE_H
#define RNNSTATE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "util/strbuf.h"

typedef struct wire_reader wire_reader;
struct wire_reader {
    uint64_t pos;                /* the next byte to read */
    uint64_t size;               /* of the whole input */
    const unsigned char *window; /* holds input bytes [window_start, window_start + window_len) */
    uint64_t window_start;
    size_t window_len;
    /* Moves the window over pos (< size); false when the input cannot be
     * read there. NULL when the window is the whole input. */
    bool (*refill)(wire_reader *r);
};

typedef enum wire_result {
    WIRE_OK,
    WIRE_CUT,             /* a key or value runs past the end */
    WIRE_FIELD_ZERO,      /* a key names field 0, which protobuf does not allow */
    WIRE_BAD_TYPE,        /* a wire type other than 0, 1, 2 and 5 */
    WIRE_LENGTH_PAST_END, /* a length-delimited field claims more bytes than remain */
} wire_result;

/* The error for WIRE_FIELD_ZERO at byte `at`: a file of zeros (or anything
 * but protobuf) usually fails there, at its first byte. */
rnnstate_status wire_field_zero(const char *label, uint64_t at, rnnstate_error *err);

typedef struct wire_field {
    uint64_t start; /* offset of the key */
    uint64_t number;
    unsigned wire;
    uint64_t payload; /* offset of the value (after the length, for wire type 2) */
    uint64_t length;  /* of the value; for wire type 2 as claimed, even past the end */
    uint64_t end;     /* offset just past the field */
} wire_field;

/* A reader over `size` bytes held in memory. */
void wire_reader_init_memory(wire_reader *r, const unsigned char *data, size_t size);

/* Reads the byte at r->pos. False at the end of the input or when the
 * refill fails. */
bool wire_read_byte(wire_reader *r, unsigned char *b);

/* Reads a varint at r->pos (at most 10 bytes, none at or past `end`). */
bool wire_read_varint(wire_reader *r, uint64_t end, uint64_t *value);

/* Reads the field at r->pos, which must lie within [r->pos, end), and leaves
 * r->pos just past it (a varint's value included). On failure f->start says
 * where the field began, f->wire and f->length what went wrong. */
wire_result wire_next_field(wire_reader *r, uint64_t end, wire_field *f);

/* wire_next_field() for a field whose key and length (or value) lie in the
 * reader's window and are short, decoded inline: the scanners read every
 * field of a model, a million on a large graph. Anything else (a varint
 * across the window's end, a long one, any failure) goes to
 * wire_next_field(), so the results are the same. */
static inline wire_result wire_next_field_inline(wire_reader *r, uint64_t end, wire_field *f)
{
    uint64_t pos = r->pos, stop = r->window_start + r->window_len;
    if (end < stop)
        stop = end;
    if (r->size < stop)
        stop = r->size;
    if (pos < r->window_start || pos >= stop || stop - pos < 2)
        return wire_next_field(r, end, f);
    const unsigned char *p = r->window + (pos - r->window_start);
    uint64_t avail = stop - pos, key, value = 0;
    size_t at;
    if (p[0] < 0x80) {
        key = p[0];
        at = 1;
    } else if (p[1] < 0x80) {
        key = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        at = 2;
    } else {
        return wire_next_field(r, end, f);
    }
    unsigned wire = (unsigned)(key & 7);
    if ((key >> 3) == 0 || (wire != 0 && wire != 2))
        return wire_next_field(r, end, f);
    size_t first = at; /* of the varint: the length, or the value */
    for (unsigned shift = 0;; shift += 7) {
        if (at >= avail || at - first >= 10)
            return wire_next_field(r, end, f);
        value |= (uint64_t)(p[at] & 0x7f) << shift;
        if (!(p[at++] & 0x80))
            break;
    }
    *f = (wire_field){ .start = pos, .number = key >> 3, .wire = wire };
    if (wire == 0) {
        f->payload = pos + first;
        f->length = at - first;
    } else {
        if (value > end - (pos + at))
            return wire_next_field(r, end, f); /* past the end: its error */
        f->payload = pos + at;
        f->length = value;
    }
    f->end = f->payload + f->length;
    r->pos = f->end;
    return WIRE_OK;
}

/* Appends a protobuf varint. */
void sb_add_varint(strbuf *sb, uint64_t value);
/* The bytes a varint of `value` takes (1 to 10). */
size_t wire_varint_size(uint64_t value);

/* Wire types (the low 3 bits of a key). */
enum wire_type { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };
/* A field's key: its number and wire type. */
#define WIRE_KEY(number, type) (((number) << 3) | (type))

/* The ONNX fields the scanners and the writer handle by number rather than
 * through protobuf-c (onnx.proto; the one place they are written down). */
enum onnx_field {
    ONNX_MODEL_GRAPH = 7,       /* ModelProto.graph */
    ONNX_GRAPH_INITIALIZER = 5, /* GraphProto.initializer */
    /* TensorProto fields that hold element data */
    ONNX_TENSOR_FLOAT_DATA = 4,  /* packed fixed32, or one fixed32 */
    ONNX_TENSOR_INT32_DATA = 5,  /* packed varints */
    ONNX_TENSOR_STRING_DATA = 6, /* bytes, repeated */
    ONNX_TENSOR_INT64_DATA = 7,  /* packed varints */
    ONNX_TENSOR_RAW_DATA = 9,    /* bytes */
    ONNX_TENSOR_DOUBLE_DATA = 10, /* packed fixed64, or one fixed64 */
    ONNX_TENSOR_UINT64_DATA = 11  /* packed varints */
};

#endif
