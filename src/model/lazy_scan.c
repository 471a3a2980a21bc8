#include "util/array.h"
#include "model/lazy_scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "model/fdio.h"
#include "model/wire.h"

/* TensorProto fields that hold element data. */
static int is_bulk_field(uint64_t field)
{
    return field == ONNX_TENSOR_FLOAT_DATA || field == ONNX_TENSOR_INT32_DATA ||
           field == ONNX_TENSOR_STRING_DATA || field == ONNX_TENSOR_INT64_DATA ||
           field == ONNX_TENSOR_RAW_DATA || field == ONNX_TENSOR_DOUBLE_DATA ||
           field == ONNX_TENSOR_UINT64_DATA;
}

/* Element data left in the file is never parsed, so it must be checked here
 * as protobuf-c would check it: the right wire type, and whole elements.
 * Packed varints (int32_data, int64_data, uint64_data) cannot be checked
 * without reading them all: such tensors are decoded, never left lazy. */
typedef enum bulk_check { BULK_OK, BULK_DECODE, BULK_CORRUPT } bulk_check;

static bulk_check check_bulk_field(uint64_t field, unsigned wire, uint64_t payload_length)
{
    switch (field) {
    case ONNX_TENSOR_RAW_DATA:
    case ONNX_TENSOR_STRING_DATA:
        return wire == WIRE_LEN ? BULK_OK : BULK_CORRUPT;
    case ONNX_TENSOR_FLOAT_DATA:
        return wire == WIRE_FIXED32 || (wire == WIRE_LEN && payload_length % 4 == 0)
                   ? BULK_OK
                   : BULK_CORRUPT;
    case ONNX_TENSOR_DOUBLE_DATA:
        return wire == WIRE_FIXED64 || (wire == WIRE_LEN && payload_length % 8 == 0)
                   ? BULK_OK
                   : BULK_CORRUPT;
    default: /* varints */
        return wire == WIRE_VARINT || wire == WIRE_LEN ? BULK_DECODE : BULK_CORRUPT;
    }
}

/* A wire_reader over a file, read in windows with pread(). */
typedef struct file_reader {
    wire_reader wire; /* first: the refill gets the file_reader back from it */
    int fd;
    int io_errno;
    unsigned char buf[1 << 16];
} file_reader;

static bool fr_refill(wire_reader *w)
{
    file_reader *r = (file_reader *)w;
    ssize_t got = pread_in_full(r->fd, r->buf, sizeof r->buf, w->pos, NULL);
    if (got <= 0) {
        r->io_errno = got < 0 ? errno : EIO;
        return false;
    }
    w->window_start = w->pos;
    w->window_len = (size_t)got;
    return true;
}

/* Copies [from, to) of the file into sb. */
static int fr_copy_range(wire_reader *r, uint64_t from, uint64_t to, strbuf *sb)
{
    r->pos = from;
    while (r->pos < to && !sb->oom) {
        unsigned char b;
        if (!wire_read_byte(r, &b))
            return 0;
        /* copy the rest of the window at once */
        size_t avail = (size_t)(r->window_start + r->window_len - r->pos);
        size_t take = avail < to - r->pos ? avail : (size_t)(to - r->pos);
        sb_add(sb, (const char *)&b, 1);
        sb_add(sb, (const char *)r->window + (r->pos - r->window_start), take);
        r->pos += take;
    }
    return !sb->oom;
}

static rnnstate_status corrupt(const char *label, uint64_t at, uint64_t size, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                     "%s: not an ONNX model: truncated or corrupt (a field at byte %llu runs past "
                     "its message, file size %llu)",
                     label, (unsigned long long)at, (unsigned long long)size);
}

/* Reads one field's key and extent within [r->pos, end). */
static rnnstate_status next_field(wire_reader *r, uint64_t end, wire_field *f, const char *label,
                                  rnnstate_error *err)
{
    switch (wire_next_field(r, end, f)) {
    case WIRE_OK:
        return RNNSTATE_OK;
    case WIRE_BAD_TYPE:
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: unexpected wire type %u at byte %llu", label,
                         f->wire, (unsigned long long)f->start);
    case WIRE_FIELD_ZERO:
        return wire_field_zero(label, f->start, err);
    default:
        return corrupt(label, f->start, r->size, err);
    }
}

/* Builds the stub of one TensorProto (every field but the element data) and
 * counts the element data's bytes. */
static rnnstate_status scan_tensor(wire_reader *r, const wire_field *t, strbuf *stub, uint64_t *bulk,
                                   bool *decode, const char *label, rnnstate_error *err)
{
    *bulk = 0;
    *decode = false;
    r->pos = t->payload;
    while (r->pos < t->end) {
        wire_field f;
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

static bool add_lazy(lazy_scan *out, size_t index, const wire_field *f)
{
    lazy_range *grown = owned_array_grow(out->lazy, out->n_lazy, sizeof *grown);
    if (!grown)
        return false;
    grown[out->n_lazy++] = (lazy_range){ index, f->start, f->end - f->start };
    out->lazy = grown;
    return true;
}

/* The main graph: initializers with enough element data become stubs. */
static rnnstate_status scan_graph(wire_reader *r, const wire_field *g, size_t min_bytes,
                                  lazy_scan *out, strbuf *graph, const char *label,
                                  rnnstate_error *err)
{
    size_t initializers = 0;
    strbuf stub = STRBUF_INIT;
    rnnstate_status st = RNNSTATE_OK;
    r->pos = g->payload;
    while (st == RNNSTATE_OK && r->pos < g->end) {
        wire_field f;
        uint64_t bulk = 0;
        bool decode = false;
        if ((st = next_field(r, g->end, &f, label, err)) != RNNSTATE_OK)
            break;
        uint64_t resume = r->pos;
        bool lazy = false;
        if (f.number == ONNX_GRAPH_INITIALIZER && f.wire == WIRE_LEN) {
            sb_reset(&stub);
            st = scan_tensor(r, &f, &stub, &bulk, &decode, label, err);
            lazy = st == RNNSTATE_OK && !decode && bulk > 0 && bulk >= min_bytes;
            if (lazy && !add_lazy(out, initializers, &f))
                st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
            initializers++;
        }
        if (st == RNNSTATE_OK && lazy) {
            sb_add_varint(graph, WIRE_KEY(ONNX_GRAPH_INITIALIZER, WIRE_LEN));
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
    file_reader *file = malloc(sizeof *file);
    strbuf graph = STRBUF_INIT;
    memset(out, 0, sizeof *out);
    sb_init(&out->skeleton);
    if (!file)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    /* field by field: a compound literal would also zero the 64 KiB buffer,
     * once per model, which pread fills anyway */
    file->wire = (wire_reader){ .size = size, .window = file->buf, .refill = fr_refill };
    file->fd = fd;
    file->io_errno = 0;
    wire_reader *r = &file->wire;
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && r->pos < size) {
        wire_field f;
        if ((st = next_field(r, size, &f, label, err)) != RNNSTATE_OK)
            break;
        uint64_t resume = r->pos;
        if (f.number == ONNX_MODEL_GRAPH && f.wire == WIRE_LEN && graph.len == 0 &&
            out->n_lazy == 0) {
            st = scan_graph(r, &f, min_bytes, out, &graph, label, err);
            sb_add_varint(&out->skeleton, WIRE_KEY(ONNX_MODEL_GRAPH, WIRE_LEN));
            sb_add_varint(&out->skeleton, graph.len);
            sb_add(&out->skeleton, graph.buf, graph.len);
        } else if (!fr_copy_range(r, f.start, f.end, &out->skeleton)) {
            st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
        }
        r->pos = resume;
    }
    if (st == RNNSTATE_OK && file->io_errno)
        st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label,
                       strerror(file->io_errno));
    if (st == RNNSTATE_OK && (out->skeleton.oom || graph.oom))
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    sb_release(&graph);
    free(file);
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
