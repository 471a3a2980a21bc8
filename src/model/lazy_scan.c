#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "util/array.h"
#include "model/lazy_scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* The skeleton is planned first and read once: pass one walks the file and
 * lists the skeleton's pieces (ranges of the file, and the keys and lengths
 * written anew before the graph and each stub), pass two allocates the
 * skeleton at its exact size and reads each range straight into place. No
 * strbuf grows and no byte is copied twice: the structure of a model is most
 * of its file when its weights are small (chains of small layers). */
#define HEAD_MAX 20 /* a key and a length: two varints */

typedef struct piece {
    uint64_t from; /* in the file; PIECE_HEAD: the bytes are `head` */
    uint64_t len;
    unsigned char head[HEAD_MAX];
} piece;
#define PIECE_HEAD UINT64_MAX

typedef struct plan {
    piece *pieces;
    size_t n;
    uint64_t total; /* bytes of the skeleton so far */
    bool oom;
} plan;

static piece *plan_push(plan *p)
{
    piece *grown = owned_array_grow(p->pieces, p->n, sizeof *grown);
    if (!grown) {
        p->oom = true;
        return NULL;
    }
    p->pieces = grown;
    return &p->pieces[p->n++];
}

/* Adds [from, to) of the file, joined to the previous range when it follows it. */
static void plan_range(plan *p, uint64_t from, uint64_t to)
{
    piece *last = p->n ? &p->pieces[p->n - 1] : NULL;
    if (last && last->from != PIECE_HEAD && last->from + last->len == from) {
        last->len += to - from;
    } else {
        piece *next = plan_push(p);
        if (!next)
            return;
        *next = (piece){ .from = from, .len = to - from };
    }
    p->total += to - from;
}

static size_t put_varint(unsigned char *at, uint64_t value)
{
    size_t n = 0;
    do {
        at[n] = (unsigned char)(value & 0x7f);
        value >>= 7;
        if (value)
            at[n] |= 0x80;
        n++;
    } while (value);
    return n;
}

/* Reserves a key and length whose length is known later (head_set); returns
 * its index, or SIZE_MAX when out of memory. */
static size_t plan_head(plan *p)
{
    piece *h = plan_push(p);
    if (!h)
        return SIZE_MAX;
    h->from = PIECE_HEAD;
    h->len = 0;
    return p->n - 1;
}

static void head_set(plan *p, size_t at, uint64_t key, uint64_t length)
{
    if (at == SIZE_MAX)
        return;
    piece *h = &p->pieces[at];
    h->len = put_varint(h->head, key);
    h->len += put_varint(h->head + h->len, length);
    p->total += h->len;
}

/* Appends the pieces of `from` to `to`. */
static void plan_append(plan *to, const plan *from)
{
    for (size_t i = 0; i < from->n && !to->oom; i++)
        plan_range(to, from->pieces[i].from, from->pieces[i].from + from->pieces[i].len);
}

/* Pass two: the skeleton, read into place. It is mapped rather than
 * malloc'd: it lives only until the model is unpacked, and glibc's malloc,
 * when a mapped block of up to 32 MiB is freed, raises its threshold for
 * mapping blocks to that size, so that the indices and tables allocated
 * after the load stay in the heap and fragment it (11 MB more at the peak
 * for 12,500 chained GRUs). */
static rnnstate_status plan_read(const plan *p, int fd, lazy_scan *out, const char *label,
                                 rnnstate_error *err)
{
    size_t mapped = p->total ? (size_t)p->total : 1;
    void *map = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return set_error(err, RNNSTATE_ERR_NOMEM,
                         "%s: out of memory while parsing the model (%llu bytes)", label,
                         (unsigned long long)p->total);
    out->skeleton = map;
    out->skeleton_len = (size_t)p->total;
    unsigned char *at = out->skeleton;
    for (size_t i = 0; i < p->n; i++) {
        const piece *c = &p->pieces[i];
        if (c->from == PIECE_HEAD) {
            memcpy(at, c->head, (size_t)c->len);
        } else {
            ssize_t got = pread_in_full(fd, at, (size_t)c->len, c->from, NULL);
            if (got != (ssize_t)c->len)
                return set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label,
                                 strerror(got < 0 ? errno : EIO));
        }
        at += c->len;
    }
    return RNNSTATE_OK;
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
    switch (wire_next_field_inline(r, end, f)) {
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
static rnnstate_status scan_tensor(wire_reader *r, const wire_field *t, plan *stub, uint64_t *bulk,
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
            plan_range(stub, f.start, f.end);
        }
    }
    return stub->oom ? set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label)
                     : RNNSTATE_OK;
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
                                  lazy_scan *out, plan *skeleton, const char *label,
                                  rnnstate_error *err)
{
    size_t initializers = 0;
    plan stub = { 0 };
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
            stub.n = 0;
            stub.total = 0;
            st = scan_tensor(r, &f, &stub, &bulk, &decode, label, err);
            lazy = st == RNNSTATE_OK && !decode && bulk > 0 && bulk >= min_bytes;
            if (lazy && !add_lazy(out, initializers, &f))
                st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
            initializers++;
        }
        if (st == RNNSTATE_OK && lazy) {
            head_set(skeleton, plan_head(skeleton), WIRE_KEY(ONNX_GRAPH_INITIALIZER, WIRE_LEN),
                     stub.total);
            plan_append(skeleton, &stub);
        } else if (st == RNNSTATE_OK) {
            plan_range(skeleton, f.start, f.end);
        }
        r->pos = resume;
    }
    free(stub.pieces);
    return st;
}

/* Pass one: the plan of the skeleton, and the lazy ranges. */
static rnnstate_status scan_model(wire_reader *r, size_t min_bytes, lazy_scan *out,
                                  plan *skeleton, const char *label, rnnstate_error *err)
{
    bool graph_seen = false; /* a first graph with anything kept */
    rnnstate_status st = RNNSTATE_OK;
    while (st == RNNSTATE_OK && r->pos < r->size) {
        wire_field f;
        if ((st = next_field(r, r->size, &f, label, err)) != RNNSTATE_OK)
            break;
        uint64_t resume = r->pos;
        if (f.number == ONNX_MODEL_GRAPH && f.wire == WIRE_LEN && !graph_seen &&
            out->n_lazy == 0) {
            size_t head = plan_head(skeleton);
            uint64_t before = skeleton->total;
            st = scan_graph(r, &f, min_bytes, out, skeleton, label, err);
            uint64_t graph_len = skeleton->total - before;
            head_set(skeleton, head, WIRE_KEY(ONNX_MODEL_GRAPH, WIRE_LEN), graph_len);
            graph_seen = graph_len > 0;
        } else {
            plan_range(skeleton, f.start, f.end);
        }
        r->pos = resume;
    }
    return st;
}

rnnstate_status lazy_scan_file(int fd, uint64_t size, size_t min_bytes, const char *label,
                               lazy_scan *out, rnnstate_error *err)
{
    file_reader *file = malloc(sizeof *file);
    plan skeleton = { 0 };
    memset(out, 0, sizeof *out);
    if (!file)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    /* field by field: a compound literal would also zero the 64 KiB buffer,
     * once per model, which pread fills anyway */
    file->wire = (wire_reader){ .size = size, .window = file->buf, .refill = fr_refill };
    file->fd = fd;
    file->io_errno = 0;
    rnnstate_status st = scan_model(&file->wire, min_bytes, out, &skeleton, label, err);
    if (st == RNNSTATE_OK && file->io_errno)
        st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label,
                       strerror(file->io_errno));
    if (st == RNNSTATE_OK && skeleton.oom)
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    free(file); /* before the skeleton is allocated: 64 KiB less at the peak */
    if (st == RNNSTATE_OK)
        st = plan_read(&skeleton, fd, out, label, err);
    free(skeleton.pieces);
    if (st != RNNSTATE_OK)
        lazy_scan_free(out);
    return st;
}

void lazy_scan_free(lazy_scan *scan)
{
    if (scan->skeleton)
        munmap(scan->skeleton, scan->skeleton_len ? scan->skeleton_len : 1);
    scan->skeleton = NULL;
    scan->skeleton_len = 0;
    free(scan->lazy);
    scan->lazy = NULL;
    scan->n_lazy = 0;
}
