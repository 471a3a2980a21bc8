#include "model/wire_scan.h"

#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "onnx.pb-c.h"
#include "model/wire.h"

typedef struct frame {
    const ProtobufCMessageDescriptor *desc;
    uint64_t end;
} frame;

/* The descriptors' fields found last, by message type and number: a model
 * repeats the same few (a node's inputs, outputs and attributes) a million
 * times, and protobuf-c's lookup is a call and a binary search. */
#define FIELD_CACHE 64
typedef struct field_cache {
    const ProtobufCMessageDescriptor *desc; /* NULL: an empty slot */
    uint64_t number;
    const ProtobufCFieldDescriptor *field; /* NULL: no such field */
} field_cache;

static const ProtobufCFieldDescriptor *field_of(field_cache *cache,
                                                const ProtobufCMessageDescriptor *desc,
                                                uint64_t number)
{
    field_cache *slot = &cache[(number ^ ((uintptr_t)desc >> 4)) % FIELD_CACHE];
    if (slot->desc != desc || slot->number != number)
        *slot = (field_cache){ desc, number,
                               protobuf_c_message_descriptor_get_field(desc, (unsigned)number) };
    return slot->field;
}

static rnnstate_status truncated(const char *label, size_t at, size_t size, bool stream,
                                 rnnstate_error *err)
{
    if (at > size)
        at = size; /* a streamed value skipped past the end of the input */
    if (stream) /* its size is not known yet: the limit stands in for it */
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: truncated or corrupt (a field is cut off at "
                         "byte %zu)",
                         label, at);
    return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                     "%s: not an ONNX model: truncated or corrupt (a field is cut off at byte %zu "
                     "of %zu)",
                     label, at, size);
}

/* A field of a streamed model that runs past the caller's size limit, but
 * not past protobuf's 2 GiB: the model may be a real one, only too large. */
static bool only_too_large(bool stream, size_t depth, const wire_field *f)
{
    return stream && depth == 1 && f->length <= RNNSTATE_DEFAULT_MAX_MODEL_BYTES - f->payload;
}

/* Reads one field; for a sub-message, pushes a frame and stays at its
 * first byte, else moves past the field. */
static rnnstate_status step(wire_reader *r, frame *stack, size_t *depth, size_t max_depth,
                            field_cache *cache, bool stream, const char *label,
                            rnnstate_error *err)
{
    frame *top = &stack[*depth - 1];
    wire_field f;
    wire_result res = wire_next_field_inline(r, top->end, &f);
    if (res == WIRE_LENGTH_PAST_END && only_too_large(stream, *depth, &f))
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: larger than the limit of %llu bytes (see --max-model-size)", label,
                         (unsigned long long)stack[0].end);
    switch (res) {
    case WIRE_OK:
        break;
    case WIRE_CUT:
        return truncated(label, (size_t)f.start, (size_t)r->size, stream, err);
    case WIRE_FIELD_ZERO:
        return wire_field_zero(label, f.start, err);
    case WIRE_BAD_TYPE:
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: unexpected wire type %u at byte %zu", label,
                         f.wire, (size_t)f.start);
    case WIRE_LENGTH_PAST_END:
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: truncated or corrupt (a length field at byte %zu "
                         "claims %llu bytes, past the end of its message)",
                         label, (size_t)f.start, (unsigned long long)f.length);
    }
    const ProtobufCFieldDescriptor *field =
        top->desc && f.wire == 2 ? field_of(cache, top->desc, f.number) : NULL;
    if (!field || field->type != PROTOBUF_C_TYPE_MESSAGE)
        return RNNSTATE_OK;
    if (*depth >= max_depth)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: nested too deeply: more than %zu levels of nested messages "
                         "(subgraphs or types)",
                         label, max_depth);
    stack[(*depth)++] = (frame){ field->descriptor, f.end };
    r->pos = f.payload;
    return RNNSTATE_OK;
}

/* True at the end of a streamed input (or when it cannot be read further,
 * which the reader's owner reports): the refill then sets r->size. */
static bool stream_ended(wire_reader *r)
{
    unsigned char b;
    if (!wire_read_byte(r, &b))
        return true;
    r->pos--; /* the byte stays in the window */
    return false;
}

/* The check proper. A model in memory ends at `end` (its size); a streamed
 * one wherever its input ends, at most at `end` (the size limit). */
static rnnstate_status scan(wire_reader *r, uint64_t end, bool stream, size_t max_depth,
                            const char *label, rnnstate_error *err)
{
    frame *stack = malloc((max_depth + 1) * sizeof *stack);
    if (!stack)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    size_t depth = 1;
    field_cache cache[FIELD_CACHE] = { 0 };
    stack[0] = (frame){ &onnx__model_proto__descriptor, end };
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && depth > 0) {
        if (r->pos == stack[depth - 1].end || (stream && depth == 1 && stream_ended(r)))
            depth--;
        else
            st = step(r, stack, &depth, max_depth, cache, stream, label, err);
    }
    free(stack);
    return st;
}

rnnstate_status wire_scan_model(const unsigned char *data, size_t size, size_t max_depth,
                                const char *label, rnnstate_error *err)
{
    wire_reader r;
    wire_reader_init_memory(&r, data, size);
    return scan(&r, size, false, max_depth, label, err);
}

rnnstate_status wire_scan_stream(wire_reader *r, uint64_t limit, size_t max_depth,
                                 const char *label, rnnstate_error *err)
{
    return scan(r, limit, true, max_depth, label, err);
}
