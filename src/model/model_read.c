#define _GNU_SOURCE /* O_TMPFILE, memfd_create */
/* Loading models.
 *
 * From memory or a pipe, the bytes are unpacked with protobuf-c. From a
 * regular file, the loader first builds a skeleton without the large
 * initializers' data (lazy_scan.c), so that rewriting a multi-gigabyte model
 * needs memory for its structure only. Either way the wire format is checked
 * first (wire_scan.c), and protobuf-c keeps the fields it does not know (from
 * ONNX versions newer than the compiled schema) and writes them back, so they
 * survive a round trip. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "model.h"
#include "model/fdio.h"
#include "model/lazy_scan.h"
#include "model/tensor_util.h"
#include "model/wire_scan.h"
#include "options.h"
#include "util/arena.h"
#include "util/strbuf.h"

void rnnstate_limits_init(rnnstate_limits *limits)
{
    limits->struct_size = sizeof *limits;
    limits->max_model_bytes = RNNSTATE_DEFAULT_MAX_MODEL_BYTES;
    limits->max_nesting = RNNSTATE_DEFAULT_MAX_NESTING;
    limits->lazy_tensor_bytes = RNNSTATE_DEFAULT_LAZY_TENSOR_BYTES;
}

/* The caller's limits (NULL: the defaults) in *l; zero fields mean "the
 * default"; values past the documented maxima are refused (a nesting limit
 * near SIZE_MAX would overflow the scanners' stack sizes and defeat the
 * recursion guard). */
static rnnstate_status read_limits(const rnnstate_limits *limits, rnnstate_limits *l,
                                   rnnstate_error *err)
{
    rnnstate_limits_init(l);
    rnnstate_limits given = *l;
    rnnstate_status st = options_read(&given, sizeof given, limits, "rnnstate_limits", err);
    if (st != RNNSTATE_OK)
        return st;
    if (given.max_model_bytes > RNNSTATE_DEFAULT_MAX_MODEL_BYTES)
        return set_error(err, RNNSTATE_ERR_ARGUMENT,
                         "limits: max_model_bytes %zu is more than the maximum of %zu (protobuf's "
                         "own limit)",
                         given.max_model_bytes, RNNSTATE_DEFAULT_MAX_MODEL_BYTES);
    if (given.max_nesting > RNNSTATE_MAX_NESTING)
        return set_error(err, RNNSTATE_ERR_ARGUMENT,
                         "limits: max_nesting %zu is more than the maximum of %zu",
                         given.max_nesting, RNNSTATE_MAX_NESTING);
    if (given.max_model_bytes)
        l->max_model_bytes = given.max_model_bytes;
    if (given.max_nesting)
        l->max_nesting = given.max_nesting;
    if (given.lazy_tensor_bytes)
        l->lazy_tensor_bytes = given.lazy_tensor_bytes;
    return RNNSTATE_OK;
}

static rnnstate_status too_large(const char *label, size_t limit, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_INVALID,
                     "%s: larger than the limit of %zu bytes (see --max-model-size)", label, limit);
}

static rnnstate_status check_is_model(const Onnx__ModelProto *proto, const char *label,
                                      rnnstate_error *err)
{
    if (!proto->graph)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: not an ONNX model: it has no graph",
                         label);
    if (!proto->has_ir_version || proto->ir_version <= 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: it has no ir_version", label);
    return RNNSTATE_OK;
}

static rnnstate_model *model_new(const char *label)
{
    rnnstate_model *m = calloc(1, sizeof *m);
    if (m && !(m->label = strdup(label))) {
        free(m);
        return NULL;
    }
    if (m)
        m->source_fd = -1;
    return m;
}

/* Bytes that are not a model may be an ONNX tensor (a backend test's
 * input_0.pb, a saved state): when they parse as a TensorProto with a known
 * element type and a shape or data, say so instead of "corrupt". Returns
 * `st` (the caller's failure), its message replaced in that case. */
static rnnstate_status explain_not_model(rnnstate_status st, const void *data, size_t size,
                                         const char *label, rnnstate_error *err)
{
    if (st != RNNSTATE_ERR_NOT_MODEL || !data || !size)
        return st;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, size, data);
    if (!t)
        return st;
    const char *type = t->data_type > 0 ? dtype_name(t->data_type) : NULL;
    bool has_data = t->raw_data.len || t->n_float_data || t->n_int32_data || t->n_int64_data ||
                    t->n_double_data || t->n_uint64_data || t->n_string_data;
    if (type && strcmp(type, "unknown") && (t->n_dims || has_data)) {
        strbuf shape = STRBUF_INIT;
        for (size_t i = 0; i < t->n_dims; i++)
            sb_addf(&shape, "%s%lld", i ? "," : "", (long long)t->dims[i]);
        bool named = t->name && *t->name;
        st = set_error(err, RNNSTATE_ERR_NOT_MODEL,
                       "%s: not an ONNX model: it looks like a tensor (an ONNX TensorProto%s%s%s, "
                       "%s [%s]), such as a test's input_0.pb; rnnstate-rewrite takes a model",
                       label, named ? " '" : "", named ? t->name : "", named ? "'" : "", type,
                       shape.oom || !shape.buf ? "" : shape.buf);
        sb_release(&shape);
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return st;
}

/* Reads up to 64 MiB of the file for explain_not_model(). */
static rnnstate_status explain_not_model_file(rnnstate_status st, int fd, uint64_t size,
                                              const char *label, rnnstate_error *err)
{
    if (st != RNNSTATE_ERR_NOT_MODEL || size > ((uint64_t)64 << 20))
        return st;
    unsigned char *buf = malloc((size_t)size);
    ssize_t got = buf ? pread(fd, buf, (size_t)size, 0) : -1;
    if (got == (ssize_t)size)
        st = explain_not_model(st, buf, (size_t)size, label, err);
    free(buf);
    return st;
}

/* Checks and unpacks serialized bytes into a new model. */
static rnnstate_status unpack(const void *data, size_t size, const char *label,
                              const rnnstate_limits *l, rnnstate_model **model,
                              rnnstate_error *err)
{
    *model = NULL;
    if (size == 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: empty file, not an ONNX model", label);
    rnnstate_status st = wire_scan_model(data, size, l->max_nesting, label, err);
    if (st != RNNSTATE_OK)
        return st;
    /* protobuf-c says only "failed" when it cannot unpack: the arena notes
     * whether an allocation failed, so that running out of memory is not
     * reported as a corrupt file */
    arena *pieces = arena_new();
    ProtobufCAllocator in_arena = arena_allocator(pieces);
    Onnx__ModelProto *proto =
        pieces ? onnx__model_proto__unpack(&in_arena, size, data) : NULL;
    if (!proto && (!pieces || arena_failed(pieces))) {
        arena_free(pieces);
        return set_error(err, RNNSTATE_ERR_NOMEM,
                         "%s: out of memory while parsing the model (%zu bytes)", label, size);
    }
    if (!proto) {
        arena_free(pieces);
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: protobuf parsing failed (truncated or corrupt "
                         "file, or not a protobuf)",
                         label);
    }
    st = check_is_model(proto, label, err);
    rnnstate_model *m = st == RNNSTATE_OK ? model_new(label) : NULL;
    if (st == RNNSTATE_OK && !m)
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    if (st != RNNSTATE_OK) {
        onnx__model_proto__free_unpacked(proto, &in_arena);
        arena_free(pieces);
        return st;
    }
    m->proto = proto;
    m->arena = pieces;
    *model = m;
    return RNNSTATE_OK;
}

rnnstate_status rnnstate_model_load_memory(const void *data, size_t size, const char *label,
                                           const rnnstate_limits *limits, rnnstate_model **model,
                                           rnnstate_error *err)
{
    *model = NULL;
    if (!label)
        label = "<memory>";
    rnnstate_limits l;
    rnnstate_status st = read_limits(limits, &l, err);
    if (st != RNNSTATE_OK)
        return st;
    if (size > l.max_model_bytes)
        return too_large(label, l.max_model_bytes, err);
    return explain_not_model(unpack(data, size, label, &l, model, err), data, size, label, err);
}


/* Pairs each lazy range with the stub the skeleton unpacked to. */
static rnnstate_status attach_lazy(rnnstate_model *m, const lazy_scan *scan, rnnstate_error *err)
{
    Onnx__GraphProto *g = m->proto->graph;
    m->lazy = calloc(scan->n_lazy ? scan->n_lazy : 1, sizeof *m->lazy);
    if (!m->lazy)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    for (size_t i = 0; i < scan->n_lazy; i++) {
        const lazy_range *r = &scan->lazy[i];
        if (r->index >= g->n_initializer)
            return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: not an ONNX model: corrupt graph",
                             m->label);
        const Onnx__TensorProto *t = g->initializer[r->index];
        m->lazy[m->n_lazy] = (lazy_tensor){ t, r->offset, r->length };
        if (!ptrmap_put(&m->lazy_by_stub, t, m->n_lazy++))
            return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    }
    return RNNSTATE_OK;
}

static char *directory_of(const char *path)
{
    char *copy = strdup(path);
    char *dir = copy ? strdup(dirname(copy)) : NULL;
    free(copy);
    return dir;
}

/* A regular file: scanned lazily, the file kept open for the writer.
 * `path` locates external data; NULL when unknown (standard input). */
static rnnstate_status load_regular_file(int fd, const struct stat *file, const char *label,
                                         const char *path, const rnnstate_limits *l,
                                         rnnstate_model **model, rnnstate_error *err)
{
    uint64_t size = (uint64_t)file->st_size;
    if (size > l->max_model_bytes)
        return too_large(label, l->max_model_bytes, err);
    if (size == 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: empty file, not an ONNX model", label);
    lazy_scan scan;
    rnnstate_status st = lazy_scan_file(fd, size, l->lazy_tensor_bytes, label, &scan, err);
    if (st != RNNSTATE_OK)
        return explain_not_model_file(st, fd, size, label, err);
    st = unpack(scan.skeleton, scan.skeleton_len, label, l, model, err);
    st = explain_not_model_file(st, fd, size, label, err);
    if (st == RNNSTATE_OK && scan.n_lazy) {
        st = attach_lazy(*model, &scan, err);
        if (st == RNNSTATE_OK && ((*model)->source_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
            st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot keep the file open: %s", label,
                           strerror(errno));
        if (st == RNNSTATE_OK)
            (*model)->source_stat = *file;
    }
    if (st == RNNSTATE_OK && path && !((*model)->source_dir = directory_of(path)))
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    if (st != RNNSTATE_OK && *model) {
        rnnstate_model_free(*model);
        *model = NULL;
    }
    lazy_scan_free(&scan);
    return st;
}

rnnstate_status rnnstate_model_load_file(const char *path, const rnnstate_limits *limits,
                                         rnnstate_model **model, rnnstate_error *err)
{
    *model = NULL;
    rnnstate_limits l;
    rnnstate_status status = read_limits(limits, &l, err);
    if (status != RNNSTATE_OK)
        return status;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    bool known = fstat(fd, &st) == 0; /* else load_fd's own fstat says why */
    if (known && S_ISDIR(st.st_mode))
        status = set_error(err, RNNSTATE_ERR_IO, "%s: is a directory, not a model file", path);
    else if (known && S_ISREG(st.st_mode))
        status = load_regular_file(fd, &st, path, path, &l, model, err);
    else
        status = rnnstate_model_load_fd(fd, path, &l, model, err);
    close(fd);
    return status;
}

/* A stream (a pipe, a device) is copied into an anonymous memory file
 * (memfd) up to this size, and beyond it into an unnamed temporary file on
 * disk. Either is then loaded as a model file is, so that the output is the
 * same byte for byte, and its large initializers are copied from it when the
 * model is saved. */
#define STREAM_IN_MEMORY_BYTES ((uint64_t)64 << 20)
#define STREAM_CHUNK ((size_t)1 << 20)

/* An unnamed temporary file for spooling, or -1 when there is none to be had. */
static int open_spool_file(void)
{
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

typedef struct stream_copy {
    int fd;       /* the memory file, then the disk file; -1 before the first byte */
    bool on_disk;
    bool stay_in_memory; /* $TMPDIR is missing or full: the memory file keeps it all */
    uint64_t len;
} stream_copy;

/* errno says why when false (ENOSPC, EDQUOT: a full spool directory). */
static bool write_fully(int fd, const unsigned char *data, size_t size)
{
    return write_in_full(fd, data, size, NULL) == (ssize_t)size;
}

/* Moves the copy's first c->len bytes into the new file `to`, which then
 * holds the copy; false (`to` closed, the copy where it was) when they do
 * not all go. */
static bool move_copy(stream_copy *c, int to, unsigned char *buf)
{
    bool ok = true;
    for (uint64_t at = 0; ok && at < c->len;) {
        ssize_t got = pread_in_full(c->fd, buf, STREAM_CHUNK, at, NULL);
        ok = got > 0 && write_fully(to, buf, (size_t)got);
        at += got > 0 ? (uint64_t)got : 0;
    }
    if (!ok) {
        close(to);
        return false;
    }
    close(c->fd);
    c->fd = to;
    return true;
}

/* Moves the memory file's bytes to a disk file once the stream outgrows
 * memory. Where that cannot be (no temporary directory, or a full one:
 * ENOSPC, EDQUOT), the stream stays in memory, the same either way. */
static void spool_to_disk(stream_copy *c, unsigned char *buf)
{
    int disk = open_spool_file();
    if (disk >= 0 && move_copy(c, disk, buf))
        c->on_disk = true;
    else
        c->stay_in_memory = true;
}

/* The disk file filled up (ENOSPC, EDQUOT) while the stream went on: its
 * bytes go back to a memory file, which keeps the rest. */
static bool back_to_memory(stream_copy *c, unsigned char *buf)
{
    int mem = memfd_create("rnnstate-stream", MFD_CLOEXEC);
    if (mem < 0 || !move_copy(c, mem, buf))
        return false;
    c->on_disk = false;
    c->stay_in_memory = true;
    return true;
}

/* Appends a chunk to the copy; `spare` is a buffer of STREAM_CHUNK bytes. */
static rnnstate_status keep_chunk(stream_copy *c, const unsigned char *chunk, size_t n,
                                  unsigned char *spare, const char *label, rnnstate_error *err)
{
    if (c->fd < 0 && (c->fd = memfd_create("rnnstate-stream", MFD_CLOEXEC)) < 0 &&
        (c->fd = open_spool_file()) < 0)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot keep the input in a temporary file: %s",
                         label, strerror(errno));
    if (!c->on_disk && !c->stay_in_memory && c->len + n > STREAM_IN_MEMORY_BYTES)
        spool_to_disk(c, spare);
    bool kept = write_fully(c->fd, chunk, n);
    if (!kept && c->on_disk && (errno == ENOSPC || errno == EDQUOT))
        kept = back_to_memory(c, spare) && write_fully(c->fd, chunk, n);
    if (!kept)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot keep the input in a temporary file: %s",
                         label, strerror(errno));
    c->len += n;
    return RNNSTATE_OK;
}

/* A wire_reader over a stream: the refill reads the next chunk, keeps it
 * (stream_copy) and makes it the window. Values the check skips are read
 * and kept all the same; the check never goes back. */
typedef struct stream_reader {
    wire_reader wire; /* first: the refill gets the stream_reader back from it */
    int fd;
    const char *label;
    unsigned char *chunk, *spare;
    stream_copy *copy;
    int read_errno;        /* a failed read() */
    bool ended;            /* read() returned 0 */
    rnnstate_status kept;  /* keeping a chunk failed (err says why) */
    rnnstate_error *err;
} stream_reader;

static bool stream_refill(wire_reader *w)
{
    stream_reader *s = (stream_reader *)w;
    while (w->pos >= w->window_start + w->window_len) {
        uint64_t next = w->window_start + w->window_len;
        ssize_t got = read_some(s->fd, s->chunk, STREAM_CHUNK, NULL);
        if (got <= 0) {
            s->read_errno = got < 0 ? errno : 0;
            s->ended = got == 0;
            if (s->ended)
                w->size = next; /* the model ends here */
            return false;
        }
        s->kept = keep_chunk(s->copy, s->chunk, (size_t)got, s->spare, s->label, s->err);
        if (s->kept != RNNSTATE_OK)
            return false;
        w->window = s->chunk;
        w->window_start = next;
        w->window_len = (size_t)got;
    }
    return w->pos >= w->window_start;
}

/* Whether more bytes follow once the check has reached the size limit. */
static bool more_follows(stream_reader *s)
{
    s->wire.size = UINT64_MAX;
    s->wire.pos = s->wire.window_start + s->wire.window_len;
    return stream_refill(&s->wire);
}

/* Reads a stream to its end, checking the wire format as the bytes arrive:
 * garbage is refused at the first byte that proves it, without waiting for
 * more (a stalled pipe) or reading on to the size limit (/dev/urandom). */
static rnnstate_status read_stream(int fd, const char *label, const rnnstate_limits *l,
                                   stream_copy *c, rnnstate_error *err)
{
    stream_reader s = { .wire = { .size = l->max_model_bytes, .refill = stream_refill },
                        .fd = fd, .label = label, .copy = c, .err = err };
    s.chunk = malloc(STREAM_CHUNK);
    s.spare = malloc(STREAM_CHUNK);
    if (!s.chunk || !s.spare) {
        free(s.chunk);
        free(s.spare);
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    }
    rnnstate_error scan_err;
    rnnstate_status st =
        wire_scan_stream(&s.wire, l->max_model_bytes, l->max_nesting, label, &scan_err);
    if (s.kept == RNNSTATE_OK && s.read_errno)
        st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label, strerror(s.read_errno));
    else if (s.kept != RNNSTATE_OK)
        st = s.kept;
    else if (st != RNNSTATE_OK && err)
        *err = scan_err;
    else if (st == RNNSTATE_OK && !s.ended && more_follows(&s))
        st = too_large(label, l->max_model_bytes, err);
    free(s.chunk);
    free(s.spare);
    return st;
}

rnnstate_status rnnstate_model_load_fd(int fd, const char *label, const rnnstate_limits *limits,
                                       rnnstate_model **model, rnnstate_error *err)
{
    *model = NULL;
    rnnstate_limits l;
    rnnstate_status status = read_limits(limits, &l, err);
    if (status != RNNSTATE_OK)
        return status;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label, strerror(errno));
    if (S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0)
        return load_regular_file(fd, &st, label, NULL, &l, model, err);
    stream_copy c = { .fd = -1 };
    status = read_stream(fd, label, &l, &c, err);
    if (status == RNNSTATE_OK && c.fd < 0)
        status = set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: empty file, not an ONNX model", label);
    if (status == RNNSTATE_OK && fstat(c.fd, &st) != 0)
        status = set_error(err, RNNSTATE_ERR_IO,
                           "%s: cannot keep the input in a temporary file: %s", label,
                           strerror(errno));
    if (status == RNNSTATE_OK)
        status = load_regular_file(c.fd, &st, label, NULL, &l, model, err);
    if (c.fd >= 0)
        close(c.fd);
    return status;
}

/* Moves the element data of `full` into `stub` (the rest is identical). */
static void take_data(Onnx__TensorProto *stub, Onnx__TensorProto *full)
{
#define SWAP_FIELD(n, p)                                                                           \
    do {                                                                                           \
        size_t tn = stub->n;                                                                       \
        void *tp = stub->p;                                                                        \
        stub->n = full->n;                                                                         \
        stub->p = full->p;                                                                         \
        full->n = tn;                                                                              \
        full->p = tp;                                                                              \
    } while (0)
    SWAP_FIELD(n_float_data, float_data);
    SWAP_FIELD(n_int32_data, int32_data);
    SWAP_FIELD(n_string_data, string_data);
    SWAP_FIELD(n_int64_data, int64_data);
    SWAP_FIELD(n_double_data, double_data);
    SWAP_FIELD(n_uint64_data, uint64_data);
#undef SWAP_FIELD
    ProtobufCBinaryData raw = stub->raw_data;
    protobuf_c_boolean has_raw = stub->has_raw_data;
    stub->raw_data = full->raw_data;
    stub->has_raw_data = full->has_raw_data;
    full->raw_data = raw;
    full->has_raw_data = has_raw;
}

static void forget_lazy(rnnstate_model *model, lazy_tensor *lt)
{
    ptrmap_remove(&model->lazy_by_stub, lt->stub);
    lt->stub = NULL;
}

bool model_materialize(rnnstate_model *model, Onnx__TensorProto *t)
{
    lazy_tensor *lt = (lazy_tensor *)model_lazy_tensor(model, t);
    if (!lt)
        return true;
    unsigned char *field = malloc(lt->length ? lt->length : 1);
    if (!field)
        oom_note(); /* not "cannot be read" (error.h) */
    ssize_t n = field ? pread_in_full(model->source_fd, field, lt->length, lt->offset, NULL) : -1;
    size_t got = n > 0 ? (size_t)n : 0;
    /* the field is a key byte, a varint length, then the TensorProto */
    size_t at = 1;
    while (field && got == lt->length && at < got && (field[at] & 0x80))
        at++;
    Onnx__TensorProto *full = field && got == lt->length && at + 1 <= got
                                  ? onnx__tensor_proto__unpack(NULL, got - at - 1, field + at + 1)
                                  : NULL;
    free(field);
    if (!full)
        return false;
    take_data(t, full);
    onnx__tensor_proto__free_unpacked(full, &arena_aware_allocator); /* holds t's old pieces */
    forget_lazy(model, lt); /* no longer lazy */
    return true;
}

const lazy_tensor *model_lazy_tensor(const rnnstate_model *model, const Onnx__TensorProto *t)
{
    size_t at;
    return ptrmap_get(&model->lazy_by_stub, t, &at) ? &model->lazy[at] : NULL;
}

void model_release_tensor(rnnstate_model *model, Onnx__TensorProto *t)
{
    lazy_tensor *lt = (lazy_tensor *)model_lazy_tensor(model, t);
    if (lt)
        forget_lazy(model, lt);
    onnx__tensor_proto__free_unpacked(t, &arena_aware_allocator);
}

void rnnstate_model_free(rnnstate_model *model)
{
    if (!model)
        return;
    if (model->proto) {
        /* the arena's pieces are found without the lock; what the passes
         * added is free()d */
        ProtobufCAllocator pieces =
            model->arena ? arena_allocator(model->arena) : arena_aware_allocator;
        onnx__model_proto__free_unpacked(model->proto, &pieces);
    }
    arena_free(model->arena);
    if (model->source_fd >= 0)
        close(model->source_fd);
    free(model->lazy);
    ptrmap_free(&model->lazy_by_stub);
    free(model->source_dir);
    free(model->label);
    free(model);
}
