#include "array.h"
#include "lazy_scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

#define FIELD_GRAPH 7       /* ModelProto.graph */
#define FIELD_INITIALIZER 5 /* GraphProto.initializer */

/* TensorProto fields that hold element data. */
static int is_bulk_field(uint64_t field)
{
    return field == 4 || field == 5 || field == 6 || field == 7 || field == 9 || field == 10 ||
           field == 11;
}

/* Element data left in the file is never parsed, so it must be checked here
 * as protobuf-c would check it: the right wire type, and whole elements.
 * Packed varints (int32_data, int64_data, uint64_data) cannot be checked
 * without reading them all: such tensors are decoded, never left lazy. */
typedef enum bulk_check { BULK_OK, BULK_DECODE, BULK_CORRUPT } bulk_check;

static bulk_check check_bulk_field(uint64_t field, unsigned wire, uint64_t payload_length)
{
    switch (field) {
    case 9: /* raw_data */
    case 6: /* string_data */
        return wire == 2 ? BULK_OK : BULK_CORRUPT;
    case 4: /* float_data: packed fixed32, or one fixed32 */
        return wire == 5 || (wire == 2 && payload_length % 4 == 0) ? BULK_OK : BULK_CORRUPT;
    case 10: /* double_data: packed fixed64, or one fixed64 */
        return wire == 1 || (wire == 2 && payload_length % 8 == 0) ? BULK_OK : BULK_CORRUPT;
    default: /* varints */
        return wire == 0 || wire == 2 ? BULK_DECODE : BULK_CORRUPT;
    }
}

typedef struct file_reader {
    int fd;
    uint64_t size;
    uint64_t pos;
    unsigned char buf[1 << 16];
    uint64_t buf_start;
    size_t buf_len;
    int io_errno;
} file_reader;

static int fr_byte(file_reader *r, unsigned char *b)
{
    if (r->pos >= r->size)
        return 0;
    if (r->pos < r->buf_start || r->pos >= r->buf_start + r->buf_len) {
        ssize_t got;
        do
            got = pread(r->fd, r->buf, sizeof r->buf, (off_t)r->pos);
        while (got < 0 && errno == EINTR);
        if (got <= 0) {
            r->io_errno = got < 0 ? errno : EIO;
            return 0;
        }
        r->buf_start = r->pos;
        r->buf_len = (size_t)got;
    }
    *b = r->buf[r->pos - r->buf_start];
    r->pos++;
    return 1;
}

static int fr_varint(file_reader *r, uint64_t end, uint64_t *value)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        unsigned char b;
        if (r->pos >= end || !fr_byte(r, &b))
            return 0;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *value = v;
            return 1;
        }
    }
    return 0;
}

/* Copies [from, to) of the file into sb. */
static int fr_copy_range(file_reader *r, uint64_t from, uint64_t to, strbuf *sb)
{
    r->pos = from;
    while (r->pos < to && !sb->oom) {
        unsigned char b;
        if (!fr_byte(r, &b))
            return 0;
        /* copy the rest of the buffered block at once */
        size_t avail = (size_t)(r->buf_start + r->buf_len - r->pos);
        size_t take = avail < to - r->pos ? avail : (size_t)(to - r->pos);
        sb_add(sb, (const char *)&b, 1);
        sb_add(sb, (const char *)r->buf + (r->pos - r->buf_start), take);
        r->pos += take;
    }
    return !sb->oom;
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

typedef struct field {
    uint64_t start;   /* offset of the key */
    uint64_t number;
    unsigned wire;
    uint64_t payload; /* offset of the value (after a length, for wire type 2) */
    uint64_t end;     /* offset just past the field */
} field;

static rnnstate_status corrupt(const char *label, uint64_t at, uint64_t size, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                     "%s: not an ONNX model: truncated or corrupt (a field at byte %llu runs past "
                     "its message, file size %llu)",
                     label, (unsigned long long)at, (unsigned long long)size);
}

/* Reads one field's key and extent within [r->pos, end). */
static rnnstate_status next_field(file_reader *r, uint64_t end, field *f, const char *label,
                                  rnnstate_error *err)
{
    uint64_t key, len;
    f->start = r->pos;
    if (!fr_varint(r, end, &key) || (key >> 3) == 0)
        return corrupt(label, f->start, r->size, err);
    f->number = key >> 3;
    f->wire = (unsigned)(key & 7);
    switch (f->wire) {
    case 0:
        if (!fr_varint(r, end, &len))
            return corrupt(label, f->start, r->size, err);
        f->payload = f->start;
        f->end = r->pos;
        return RNNSTATE_OK;
    case 1:
    case 5:
        len = f->wire == 1 ? 8 : 4;
        break;
    case 2:
        if (!fr_varint(r, end, &len))
            return corrupt(label, f->start, r->size, err);
        break;
    default:
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: unexpected wire type %u at byte %llu", label,
                         f->wire, (unsigned long long)f->start);
    }
    if (len > end - r->pos)
        return corrupt(label, f->start, r->size, err);
    f->payload = r->pos;
    f->end = r->pos + len;
    r->pos = f->end;
    return RNNSTATE_OK;
}

/* Builds the stub of one TensorProto (every field but the element data) and
 * counts the element data's bytes. */
static rnnstate_status scan_tensor(file_reader *r, const field *t, strbuf *stub, uint64_t *bulk,
                                   bool *decode, const char *label, rnnstate_error *err)
{
    *bulk = 0;
    *decode = false;
    r->pos = t->payload;
    while (r->pos < t->end) {
        field f;
        rnnstate_status st = next_field(r, t->end, &f, label, err);
        if (st != RNNSTATE_OK)
            return st;
        if (is_bulk_field(f.number)) {
            bulk_check c = check_bulk_field(f.number, f.wire, f.end - f.payload);
            if (c == BULK_CORRUPT)
                return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                                 "%s: not an ONNX model: corrupt tensor data at byte %llu", label,
                                 (unsigned long long)f.start);
            *decode |= c == BULK_DECODE;
            *bulk += f.end - f.start;
        } else {
            uint64_t resume = r->pos;
            if (!fr_copy_range(r, f.start, f.end, stub))
                return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
            r->pos = resume;
        }
    }
    return RNNSTATE_OK;
}

static bool add_lazy(lazy_scan *out, size_t index, const field *f)
{
    lazy_range *grown = owned_array_grow(out->lazy, out->n_lazy, sizeof *grown);
    if (!grown)
        return false;
    grown[out->n_lazy++] = (lazy_range){ index, f->start, f->end - f->start };
    out->lazy = grown;
    return true;
}

/* The main graph: initializers with enough element data become stubs. */
static rnnstate_status scan_graph(file_reader *r, const field *g, size_t min_bytes,
                                  lazy_scan *out, strbuf *graph, const char *label,
                                  rnnstate_error *err)
{
    size_t initializers = 0;
    strbuf stub = STRBUF_INIT;
    rnnstate_status st = RNNSTATE_OK;
    r->pos = g->payload;
    while (st == RNNSTATE_OK && r->pos < g->end) {
        field f;
        uint64_t bulk = 0;
        bool decode = false;
        if ((st = next_field(r, g->end, &f, label, err)) != RNNSTATE_OK)
            break;
        uint64_t resume = r->pos;
        bool lazy = false;
        if (f.number == FIELD_INITIALIZER && f.wire == 2) {
            sb_reset(&stub);
            st = scan_tensor(r, &f, &stub, &bulk, &decode, label, err);
            lazy = st == RNNSTATE_OK && !decode && bulk > 0 && bulk >= min_bytes;
            if (lazy && !add_lazy(out, initializers, &f))
                st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
            initializers++;
        }
        if (st == RNNSTATE_OK && lazy) {
            sb_add_varint(graph, (FIELD_INITIALIZER << 3) | 2);
            sb_add_varint(graph, stub.len);
            sb_add(graph, stub.buf, stub.len);
        } else if (st == RNNSTATE_OK && !fr_copy_range(r, f.start, f.end, graph)) {
            st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
        }
        r->pos = resume;
    }
    sb_release(&stub);
    return st;
}

rnnstate_status lazy_scan_file(int fd, uint64_t size, size_t min_bytes, const char *label,
                               lazy_scan *out, rnnstate_error *err)
{
    file_reader *r = malloc(sizeof *r);
    strbuf graph = STRBUF_INIT;
    memset(out, 0, sizeof *out);
    sb_init(&out->skeleton);
    if (!r)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    *r = (file_reader){ .fd = fd, .size = size };
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && r->pos < size) {
        field f;
        if ((st = next_field(r, size, &f, label, err)) != RNNSTATE_OK)
            break;
        uint64_t resume = r->pos;
        if (f.number == FIELD_GRAPH && f.wire == 2 && graph.len == 0 && out->n_lazy == 0) {
            st = scan_graph(r, &f, min_bytes, out, &graph, label, err);
            sb_add_varint(&out->skeleton, (FIELD_GRAPH << 3) | 2);
            sb_add_varint(&out->skeleton, graph.len);
            sb_add(&out->skeleton, graph.buf, graph.len);
        } else if (!fr_copy_range(r, f.start, f.end, &out->skeleton)) {
            st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
        }
        r->pos = resume;
    }
    if (st == RNNSTATE_OK && r->io_errno)
        st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label, strerror(r->io_errno));
    if (st == RNNSTATE_OK && (out->skeleton.oom || graph.oom))
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    sb_release(&graph);
    free(r);
    if (st != RNNSTATE_OK)
        lazy_scan_free(out);
    return st;
}

void lazy_scan_free(lazy_scan *scan)
{
    sb_release(&scan->skeleton);
    free(scan->lazy);
    scan->lazy = NULL;
    scan->n_lazy = 0;
}
