/* Packing protobuf-c messages into a stream of buffers (pb_pack.h).
 *
 * The rules are protobuf-c's (protobuf_c_message_pack() and
 * protobuf_c_message_get_packed_size(), version 1.4): fields in descriptor
 * order, then the unknown fields; which values of a field are packed follows
 * its label (below); lengths are varints; packed repeated fields are one
 * length-delimited run. tests/unit/test_pb_pack.c compares the two
 * byte for byte. */
#include "model/pb_pack.h"

#include <stdlib.h>
#include <string.h>

/* ---- encoding ------------------------------------------------------------ */

static inline size_t varint_size(uint64_t v)
{
    if (v < 0x80)
        return 1;
    /* 7 bits a byte: 1 byte for 0..127, 10 for the top bit */
    return (size_t)(64 - __builtin_clzll(v | 1) + 6) / 7;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

static uint32_t zigzag32(int32_t v)
{
    return ((uint32_t)v << 1) ^ (uint32_t)-(int32_t)((uint32_t)v >> 31);
}

static uint64_t zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)-(int64_t)((uint64_t)v >> 63);
}

/* A varint-encoded scalar as the 64-bit value written: int32 and enums are
 * sign-extended (a negative one takes 10 bytes), sint zigzagged. */
static uint64_t varint_value(ProtobufCType type, const void *v)
{
    switch (type) {
    case PROTOBUF_C_TYPE_SINT32: return zigzag32(*(const int32_t *)v);
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_INT32: return (uint64_t)(int64_t) * (const int32_t *)v;
    case PROTOBUF_C_TYPE_UINT32: return *(const uint32_t *)v;
    case PROTOBUF_C_TYPE_SINT64: return zigzag64(*(const int64_t *)v);
    case PROTOBUF_C_TYPE_BOOL: return *(const protobuf_c_boolean *)v ? 1 : 0;
    default: return *(const uint64_t *)v; /* INT64, UINT64 */
    }
}

/* Per type, indexed by ProtobufCType: the wire type, the bytes of a
 * fixed-size value (0 for varints and length-delimited values), the bytes of
 * one element of a repeated field in memory. Tables rather than switches:
 * they are read for every field of every message. */
#define T(type) [PROTOBUF_C_TYPE_##type]
static const unsigned char wire_of[] = {
    T(SFIXED32) = PROTOBUF_C_WIRE_TYPE_32BIT,  T(FIXED32) = PROTOBUF_C_WIRE_TYPE_32BIT,
    T(FLOAT) = PROTOBUF_C_WIRE_TYPE_32BIT,     T(SFIXED64) = PROTOBUF_C_WIRE_TYPE_64BIT,
    T(FIXED64) = PROTOBUF_C_WIRE_TYPE_64BIT,   T(DOUBLE) = PROTOBUF_C_WIRE_TYPE_64BIT,
    T(STRING) = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
    T(BYTES) = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
    T(MESSAGE) = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, /* the others: VARINT, 0 */
};
static const unsigned char fixed_of[] = {
    T(SFIXED32) = 4, T(FIXED32) = 4, T(FLOAT) = 4, T(SFIXED64) = 8, T(FIXED64) = 8, T(DOUBLE) = 8,
    T(MESSAGE) = 0,
};
static const unsigned char element_of[] = {
    T(INT32) = 4,  T(SINT32) = 4,  T(SFIXED32) = 4, T(UINT32) = 4, T(FIXED32) = 4, T(FLOAT) = 4,
    T(ENUM) = 4,   T(INT64) = 8,   T(SINT64) = 8,   T(SFIXED64) = 8, T(UINT64) = 8, T(FIXED64) = 8,
    T(DOUBLE) = 8, T(BOOL) = sizeof(protobuf_c_boolean), T(STRING) = sizeof(void *),
    T(MESSAGE) = sizeof(void *), T(BYTES) = sizeof(ProtobufCBinaryData),
};
#undef T

static size_t fixed_size(ProtobufCType type)
{
    return fixed_of[type];
}

static size_t element_size(ProtobufCType type)
{
    return element_of[type];
}

static uint64_t key_of(const ProtobufCFieldDescriptor *f)
{
    return ((uint64_t)f->id << 3) | wire_of[f->type];
}

static bool pointer_type(ProtobufCType type)
{
    return type == PROTOBUF_C_TYPE_MESSAGE || type == PROTOBUF_C_TYPE_STRING;
}

/* ---- which values a field packs ------------------------------------------ */

/* A string or message field counts as set when its pointer is neither NULL
 * nor the descriptor's default (protobuf-c's optional_field_pack()). */
static size_t pointer_set(const ProtobufCFieldDescriptor *f, const void *member)
{
    if (!pointer_type(f->type))
        return 1;
    const void *p = *(const void *const *)member;
    return p && p != f->default_value;
}

/* A proto3 field without presence is left out when it holds its zero
 * (protobuf-c's field_is_zeroish(): bytes by their length). */
static bool zeroish(const ProtobufCFieldDescriptor *f, const void *member)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_BOOL: return *(const protobuf_c_boolean *)member == 0;
    case PROTOBUF_C_TYPE_FLOAT: return *(const float *)member == 0;
    case PROTOBUF_C_TYPE_DOUBLE: return *(const double *)member == 0;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)member;
        return !s || !*s;
    }
    case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)member)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE: return *(const void *const *)member == NULL;
    default: return element_size(f->type) == 8 ? *(const uint64_t *)member == 0
                                               : *(const uint32_t *)member == 0;
    }
}

/* values_packed() for the labels ONNX does not use, and oneofs. */
static size_t values_packed_rare(const ProtobufCFieldDescriptor *f, const char *msg)
{
    const void *member = msg + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REQUIRED)
        return 1;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)(msg + f->quantifier_offset) == f->id ? pointer_set(f, member)
                                                                         : 0;
    return !zeroish(f, member); /* PROTOBUF_C_LABEL_NONE */
}

/* How many values of field f the message packs, by the field's label: the
 * common cases first, most fields of a message being absent. */
static inline size_t values_packed(const ProtobufCFieldDescriptor *f, const char *msg)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return *(const size_t *)(msg + f->quantifier_offset);
    if (f->label != PROTOBUF_C_LABEL_OPTIONAL || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
        return values_packed_rare(f, msg);
    if (pointer_type(f->type)) {
        const void *p = *(const void *const *)(msg + f->offset);
        return p && p != f->default_value;
    }
    return *(const protobuf_c_boolean *)(msg + f->quantifier_offset) != 0;
}

/* The first value of field f: the member itself, or a repeated field's array. */
static const char *first_value(const ProtobufCFieldDescriptor *f, const char *msg)
{
    const char *member = msg + f->offset;
    return f->label == PROTOBUF_C_LABEL_REPEATED ? *(const char *const *)member : member;
}

static bool packed_run(const ProtobufCFieldDescriptor *f)
{
    return f->label == PROTOBUF_C_LABEL_REPEATED && (f->flags & PROTOBUF_C_FIELD_FLAG_PACKED);
}

/* The payload of a packed run of n scalars. */
static uint64_t run_payload(ProtobufCType type, const char *v, size_t n)
{
    size_t fixed = fixed_size(type);
    if (fixed || type == PROTOBUF_C_TYPE_BOOL)
        return (uint64_t)n * (fixed ? fixed : 1);
    uint64_t total = 0;
    size_t step = element_size(type);
    for (size_t i = 0; i < n; i++, v += step)
        total += varint_size(varint_value(type, v));
    return total;
}

/* ---- sizes ----------------------------------------------------------------- */

static uint64_t sizes_fields(pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                             unsigned end);

/* A slot for the next message's size; SIZE_MAX when none could be had. */
static size_t size_slot(pb_sizes *s)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint32_t *grown = cap > SIZE_MAX / sizeof *grown ? NULL
                                                         : realloc(s->size, cap * sizeof *grown);
        if (!grown) {
            s->oom = true;
            return SIZE_MAX;
        }
        s->size = grown;
        s->cap = cap;
    }
    return s->n++;
}

static uint64_t value_size(pb_sizes *s, ProtobufCType type, const char *v)
{
    switch (type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *str = *(const char *const *)v;
        size_t len = str ? strlen(str) : 0;
        return varint_size(len) + len;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        size_t len = ((const ProtobufCBinaryData *)v)->len;
        return varint_size(len) + len;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)v;
        uint64_t len = sub ? sizes_fields(s, sub, 0, sub->descriptor->n_fields) : 0;
        return varint_size(len) + len;
    }
    default: {
        size_t fixed = fixed_size(type);
        return fixed ? fixed : varint_size(varint_value(type, v));
    }
    }
}

static uint64_t field_size(pb_sizes *s, const ProtobufCFieldDescriptor *f, const char *msg)
{
    size_t n = values_packed(f, msg);
    if (!n)
        return 0;
    const char *v = first_value(f, msg);
    size_t key = varint_size(key_of(f));
    if (packed_run(f)) {
        uint64_t payload = run_payload(f->type, v, n);
        return varint_size(((uint64_t)f->id << 3) | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) +
               varint_size(payload) + payload;
    }
    uint64_t total = 0;
    size_t step = element_size(f->type);
    for (size_t i = 0; i < n; i++, v += step)
        total += key + value_size(s, f->type, v);
    return total;
}

static uint64_t sizes_fields(pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                             unsigned end)
{
    size_t slot = size_slot(s);
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *msg = (const char *)m;
    uint64_t total = 0;
    for (unsigned i = first; i < end; i++)
        total += field_size(s, &d->fields[i], msg);
    for (unsigned i = 0; end == d->n_fields && i < m->n_unknown_fields; i++)
        total += varint_size((uint64_t)m->unknown_fields[i].tag << 3) + m->unknown_fields[i].len;
    if (slot != SIZE_MAX)
        s->size[slot] = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
    return total;
}

uint64_t pb_sizes_add_fields(pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                             unsigned end)
{
    return sizes_fields(s, m, first, end);
}

uint64_t pb_sizes_add(pb_sizes *s, const ProtobufCMessage *m)
{
    return sizes_fields(s, m, 0, m->descriptor->n_fields);
}

unsigned pb_field_index(const ProtobufCMessageDescriptor *d, uint32_t id)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, id);
    return f ? (unsigned)(f - d->fields) : d->n_fields;
}

void pb_sizes_free(pb_sizes *s)
{
    free(s->size);
    *s = (pb_sizes)PB_SIZES_INIT;
}

/* ---- packing --------------------------------------------------------------- */

static bool pack_fields(pb_out *o, pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                        unsigned end);

static bool need(pb_out *o, size_t want)
{
    return (size_t)(o->end - o->pos) >= want || o->room(o, want);
}

static bool put_bytes(pb_out *o, const void *data, size_t len)
{
    if (!len)
        return true;
    if ((size_t)(o->end - o->pos) >= len) {
        memcpy(o->pos, data, len);
        o->pos += len;
        return true;
    }
    return o->write(o, data, len);
}

/* A fixed-size scalar, little-endian as on the wire. */
static void put_fixed(pb_out *o, const void *v, size_t size)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < size; i++)
        o->pos[i] = ((const unsigned char *)v)[size - 1 - i];
#else
    memcpy(o->pos, v, size);
#endif
    o->pos += size;
}

/* One value after its key; room for PB_OUT_ROOM bytes is there. */
static bool pack_value(pb_out *o, pb_sizes *s, ProtobufCType type, const char *v)
{
    switch (type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *str = *(const char *const *)v;
        size_t len = str ? strlen(str) : 0;
        o->pos += put_varint(o->pos, len);
        return put_bytes(o, str, len);
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = (const ProtobufCBinaryData *)v;
        o->pos += put_varint(o->pos, b->len);
        return put_bytes(o, b->data, b->len);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)v;
        if (!sub) {
            *o->pos++ = 0;
            return true;
        }
        o->pos += put_varint(o->pos, s->size[s->next]);
        return pack_fields(o, s, sub, 0, sub->descriptor->n_fields);
    }
    default: {
        size_t fixed = fixed_size(type);
        if (fixed)
            put_fixed(o, v, fixed);
        else
            o->pos += put_varint(o->pos, varint_value(type, v));
        return true;
    }
    }
}

/* A packed run: its key and length, then the values back to back. */
static bool pack_run(pb_out *o, const ProtobufCFieldDescriptor *f, const char *v, size_t n)
{
    uint64_t payload = run_payload(f->type, v, n);
    o->pos += put_varint(o->pos, ((uint64_t)f->id << 3) | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED);
    o->pos += put_varint(o->pos, payload);
    size_t fixed = fixed_size(f->type);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
    if (fixed)
        return put_bytes(o, v, n * fixed);
#endif
    size_t step = element_size(f->type);
    for (size_t i = 0; i < n; i++, v += step) {
        if (!need(o, PB_OUT_ROOM))
            return false;
        if (fixed)
            put_fixed(o, v, fixed);
        else
            o->pos += put_varint(o->pos, varint_value(f->type, v));
    }
    return true;
}

static bool pack_field(pb_out *o, pb_sizes *s, const ProtobufCFieldDescriptor *f, const char *msg)
{
    size_t n = values_packed(f, msg);
    if (!n)
        return true;
    const char *v = first_value(f, msg);
    if (packed_run(f))
        return need(o, PB_OUT_ROOM) && pack_run(o, f, v, n);
    uint64_t key = key_of(f);
    size_t step = element_size(f->type);
    for (size_t i = 0; i < n; i++, v += step) {
        if (!need(o, PB_OUT_ROOM))
            return false;
        o->pos += put_varint(o->pos, key);
        if (!pack_value(o, s, f->type, v))
            return false;
    }
    return true;
}

static bool pack_fields(pb_out *o, pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                        unsigned end)
{
    s->next++; /* m's own size: its caller wrote it */
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *msg = (const char *)m;
    for (unsigned i = first; i < end; i++)
        if (!pack_field(o, s, &d->fields[i], msg))
            return false;
    for (unsigned i = 0; end == d->n_fields && i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
        if (!need(o, PB_OUT_ROOM))
            return false;
        o->pos += put_varint(o->pos, ((uint64_t)u->tag << 3) | u->wire_type);
        if (!put_bytes(o, u->data, u->len))
            return false;
    }
    return true;
}

bool pb_pack_fields(pb_out *o, pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                    unsigned end)
{
    return pack_fields(o, s, m, first, end);
}

bool pb_pack(pb_out *o, pb_sizes *s, const ProtobufCMessage *m)
{
    return pack_fields(o, s, m, 0, m->descriptor->n_fields);
}
