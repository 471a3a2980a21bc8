#include "model/wire.h"

void wire_reader_init_memory(wire_reader *r, const unsigned char *data, size_t size)
{
    *r = (wire_reader){ .size = size, .window = data, .window_len = size };
}

bool wire_read_byte(wire_reader *r, unsigned char *b)
{
    if (r->pos >= r->size)
        return false;
    if (r->pos < r->window_start || r->pos >= r->window_start + r->window_len)
        if (!r->refill || !r->refill(r))
            return false;
    *b = r->window[r->pos - r->window_start];
    r->pos++;
    return true;
}

/* A varint whose bytes all lie in the window, decoded from it directly;
 * false when the window (or `end`, or the input) ends first, or after ten
 * bytes, and then r->pos is unchanged. Nearly every varint of a model. */
static bool varint_in_window(wire_reader *r, uint64_t end, uint64_t *value)
{
    uint64_t stop = r->window_start + r->window_len;
    if (end < stop)
        stop = end;
    if (r->size < stop)
        stop = r->size;
    if (r->pos < r->window_start || r->pos >= stop)
        return false;
    const unsigned char *p = r->window + (r->pos - r->window_start);
    uint64_t n = stop - r->pos < 10 ? stop - r->pos : 10, v = 0;
    for (uint64_t i = 0; i < n; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            r->pos += i + 1;
            *value = v;
            return true;
        }
    }
    return false;
}

bool wire_read_varint(wire_reader *r, uint64_t end, uint64_t *value)
{
    if (varint_in_window(r, end, value))
        return true;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        unsigned char b;
        if (r->pos >= end || !wire_read_byte(r, &b))
            return false;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *value = v;
            return true;
        }
    }
    return false;
}

/* The length of a field's value after its key, or the failure. */
static wire_result value_length(wire_reader *r, uint64_t end, unsigned wire, uint64_t *len)
{
    switch (wire) {
    case 0: {
        uint64_t start = r->pos, value;
        if (!wire_read_varint(r, end, &value))
            return WIRE_CUT;
        *len = r->pos - start; /* read whole already: the value's bytes */
        return WIRE_OK;
    }
    case 1:
    case 5:
        *len = wire == 1 ? 8 : 4;
        return *len > end - r->pos ? WIRE_CUT : WIRE_OK;
    case 2:
        if (!wire_read_varint(r, end, len))
            return WIRE_CUT;
        return *len > end - r->pos ? WIRE_LENGTH_PAST_END : WIRE_OK;
    default:
        return WIRE_BAD_TYPE;
    }
}

wire_result wire_next_field(wire_reader *r, uint64_t end, wire_field *f)
{
    uint64_t key;
    *f = (wire_field){ .start = r->pos };
    if (!wire_read_varint(r, end, &key))
        return WIRE_CUT;
    if ((key >> 3) == 0)
        return WIRE_FIELD_ZERO;
    f->number = key >> 3;
    f->wire = (unsigned)(key & 7);
    f->payload = r->pos;
    wire_result res = value_length(r, end, f->wire, &f->length);
    if (res != WIRE_OK)
        return res;
    if (f->wire == 2)
        f->payload = r->pos; /* past the length */
    f->end = f->payload + f->length;
    r->pos = f->end;
    return WIRE_OK;
}

void sb_add_varint(strbuf *sb, uint64_t value)
{
    char bytes[10];
    size_t n = 0;
    do {
        bytes[n] = (char)(value & 0x7f);
        value >>= 7;
        if (value)
            bytes[n] |= (char)0x80;
        n++;
    } while (value);
    sb_add(sb, bytes, n);
}

size_t wire_varint_size(uint64_t value)
{
    size_t n = 1;
    while (value >= 0x80) {
        value >>= 7;
        n++;
    }
    return n;
}

rnnstate_status wire_field_zero(const char *label, uint64_t at, rnnstate_error *err)
{
    if (at == 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: it starts with a zero byte, which no protobuf "
                         "message does (a blank or zero-filled file, or not protobuf at all)",
                         label);
    return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                     "%s: not an ONNX model: corrupt at byte %llu (a field numbered 0, which "
                     "protobuf does not allow)",
                     label, (unsigned long long)at);
}
