#include "wire_scan.h"

#include <stdint.h>
#include <stdlib.h>

#include "model.h"
#include "onnx.pb-c.h"

typedef struct frame {
    const ProtobufCMessageDescriptor *desc;
    size_t end;
} frame;

/* Reads a varint at *pos (at most 10 bytes, not past end). */
static int read_varint(const unsigned char *data, size_t end, size_t *pos, uint64_t *value)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*pos >= end)
            return 0;
        unsigned char b = data[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *value = v;
            return 1;
        }
    }
    return 0;
}

static rnnstate_status truncated(const char *label, size_t at, size_t size, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                     "%s: not an ONNX model: truncated or corrupt (a field is cut off at byte %zu "
                     "of %zu)",
                     label, at, size);
}

/* Skips one field's value; for a sub-message, pushes a frame instead. */
static rnnstate_status step(const unsigned char *data, size_t size, frame *stack, size_t *depth,
                            size_t max_depth, size_t *pos, const char *label, rnnstate_error *err)
{
    frame *top = &stack[*depth - 1];
    size_t start = *pos;
    uint64_t key, len;
    if (!read_varint(data, top->end, pos, &key) || (key >> 3) == 0)
        return truncated(label, start, size, err);
    switch (key & 7) {
    case 0:
        return read_varint(data, top->end, pos, &len) ? RNNSTATE_OK
                                                      : truncated(label, start, size, err);
    case 1:
    case 5: {
        size_t width = (key & 7) == 1 ? 8 : 4;
        if (top->end - *pos < width)
            return truncated(label, start, size, err);
        *pos += width;
        return RNNSTATE_OK;
    }
    case 2:
        break;
    default:
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: unexpected wire type %u at byte %zu", label,
                         (unsigned)(key & 7), start);
    }
    if (!read_varint(data, top->end, pos, &len))
        return truncated(label, start, size, err);
    if (len > top->end - *pos)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: truncated or corrupt (a length field at byte %zu "
                         "claims %llu bytes, past the end of its message)",
                         label, start, (unsigned long long)len);
    const ProtobufCFieldDescriptor *field =
        top->desc ? protobuf_c_message_descriptor_get_field(top->desc, (unsigned)(key >> 3)) : NULL;
    if (!field || field->type != PROTOBUF_C_TYPE_MESSAGE) {
        *pos += len;
        return RNNSTATE_OK;
    }
    if (*depth >= max_depth)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: nested too deeply: more than %zu levels of nested messages "
                         "(subgraphs or types)",
                         label, max_depth);
    stack[(*depth)++] = (frame){ field->descriptor, *pos + (size_t)len };
    return RNNSTATE_OK;
}

rnnstate_status wire_scan_model(const unsigned char *data, size_t size, size_t max_depth,
                                const char *label, rnnstate_error *err)
{
    frame *stack = malloc((max_depth + 1) * sizeof *stack);
    if (!stack)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    size_t depth = 1, pos = 0;
    stack[0] = (frame){ &onnx__model_proto__descriptor, size };
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && depth > 0) {
        if (pos == stack[depth - 1].end)
            depth--;
        else
            st = step(data, size, stack, &depth, max_depth, &pos, label, err);
    }
    free(stack);
    return st;
}
