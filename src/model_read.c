#define _GNU_SOURCE /* O_TMPFILE */
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
#include <sys/stat.h>
#include <unistd.h>

#include "lazy_scan.h"
#include "model.h"
#include "options.h"
#include "wire_scan.h"

void rnnstate_limits_init(rnnstate_limits *limits)
{
    limits->struct_size = sizeof *limits;
    limits->max_model_bytes = RNNSTATE_DEFAULT_MAX_MODEL_BYTES;
    limits->max_nesting = RNNSTATE_DEFAULT_MAX_NESTING;
    limits->lazy_tensor_bytes = RNNSTATE_DEFAULT_LAZY_TENSOR_BYTES;
}

/* The caller's limits (NULL: the defaults) in *l; zero fields mean "the
 * default". */
static rnnstate_status read_limits(const rnnstate_limits *limits, rnnstate_limits *l,
                                   rnnstate_error *err)
{
    rnnstate_limits_init(l);
    rnnstate_limits given = *l;
    rnnstate_status st = options_read(&given, sizeof given, limits, "rnnstate_limits", err);
    if (given.max_model_bytes)
        l->max_model_bytes = given.max_model_bytes;
    if (given.max_nesting)
        l->max_nesting = given.max_nesting;
    if (given.lazy_tensor_bytes)
        l->lazy_tensor_bytes = given.lazy_tensor_bytes;
    return st;
}

static rnnstate_status too_large(const char *label, size_t limit, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_INVALID,
                     "%s: larger than the limit of %zu bytes (see --max-model-size)", label, limit);
}

/* Reads to end of file, refusing more than `limit` bytes before it has
 * allocated them (the size of a pipe is not known in advance). */
static rnnstate_status read_fd(int fd, const char *path, size_t limit, unsigned char **data,
                               size_t *size, rnnstate_error *err)
{
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", path);
    for (;;) {
        if (len > limit) {
            free(buf);
            return too_large(path, limit, err);
        }
        if (len == cap) {
            unsigned char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                free(buf);
                return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            return set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", path, strerror(e));
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    *data = buf;
    *size = len;
    return RNNSTATE_OK;
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
    Onnx__ModelProto *proto = onnx__model_proto__unpack(NULL, size, data);
    if (!proto)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: protobuf parsing failed (truncated or corrupt "
                         "file, or not a protobuf)",
                         label);
    st = check_is_model(proto, label, err);
    rnnstate_model *m = st == RNNSTATE_OK ? model_new(label) : NULL;
    if (st == RNNSTATE_OK && !m)
        st = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    if (st != RNNSTATE_OK) {
        onnx__model_proto__free_unpacked(proto, NULL);
        return st;
    }
    m->proto = proto;
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
    return unpack(data, size, label, &l, model, err);
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
        lazy_tensor *lt = &m->lazy[m->n_lazy++];
        lt->stub = t;
        lt->offset = r->offset;
        lt->length = r->length;
        if (!(lt->name = strdup(t->name ? t->name : "")))
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
static rnnstate_status load_regular_file(int fd, uint64_t size, const char *label,
                                         const char *path, const rnnstate_limits *l,
                                         rnnstate_model **model, rnnstate_error *err)
{
    if (size > l->max_model_bytes)
        return too_large(label, l->max_model_bytes, err);
    if (size == 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: empty file, not an ONNX model", label);
    lazy_scan scan;
    rnnstate_status st = lazy_scan_file(fd, size, l->lazy_tensor_bytes, label, &scan, err);
    if (st != RNNSTATE_OK)
        return st;
    st = unpack(scan.skeleton.buf, scan.skeleton.len, label, l, model, err);
    if (st == RNNSTATE_OK && scan.n_lazy) {
        st = attach_lazy(*model, &scan, err);
        if (st == RNNSTATE_OK && ((*model)->source_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
            st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot keep the file open: %s", label,
                           strerror(errno));
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
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
        status = set_error(err, RNNSTATE_ERR_IO, "%s: is a directory, not a model file", path);
    else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        status = load_regular_file(fd, (uint64_t)st.st_size, path, path, &l, model, err);
    else
        status = rnnstate_model_load_fd(fd, path, &l, model, err);
    close(fd);
    return status;
}

/* An unnamed temporary file for spooling, or -1 when there is none to be had. */
static int open_spool_file(void)
{
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/* Copies a pipe into `out`, so that a large model read from standard input
 * takes disk, not memory, like one read from a file. */
static rnnstate_status spool(int fd, int out, const char *label, size_t limit, uint64_t *size,
                             rnnstate_error *err)
{
    unsigned char *buf = malloc(1 << 20);
    rnnstate_status st =
        buf ? RNNSTATE_OK : set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
    *size = 0;
    while (st == RNNSTATE_OK) {
        ssize_t got = read(fd, buf, 1 << 20);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot read: %s", label, strerror(errno));
        else if (got == 0)
            break;
        else if ((*size += (uint64_t)got) > limit)
            st = too_large(label, limit, err);
        else if (write(out, buf, (size_t)got) != got)
            st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot spool to a temporary file: %s",
                           label, strerror(errno));
    }
    free(buf);
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
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0)
        return load_regular_file(fd, (uint64_t)st.st_size, label, NULL, &l, model, err);
    int spooled = open_spool_file();
    if (spooled >= 0) {
        uint64_t size = 0;
        status = spool(fd, spooled, label, l.max_model_bytes, &size, err);
        if (status == RNNSTATE_OK)
            status = load_regular_file(spooled, size, label, NULL, &l, model, err);
        close(spooled);
        return status;
    }
    /* no temporary directory to spool to: read into memory */
    unsigned char *data = NULL;
    size_t n = 0;
    status = read_fd(fd, label, l.max_model_bytes, &data, &n, err);
    if (status == RNNSTATE_OK)
        status = unpack(data, n, label, &l, model, err);
    free(data);
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

bool model_materialize(rnnstate_model *model, Onnx__TensorProto *t)
{
    lazy_tensor *lt = (lazy_tensor *)model_lazy_tensor(model, t);
    if (!lt)
        return true;
    unsigned char *field = malloc(lt->length ? lt->length : 1);
    size_t got = 0;
    while (field && got < lt->length) {
        ssize_t n = pread(model->source_fd, field + got, lt->length - got,
                          (off_t)(lt->offset + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
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
    onnx__tensor_proto__free_unpacked(full, NULL);
    lt->stub = NULL; /* no longer lazy */
    return true;
}

const lazy_tensor *model_lazy_tensor(const rnnstate_model *model, const Onnx__TensorProto *t)
{
    for (size_t i = 0; i < model->n_lazy; i++)
        if (model->lazy[i].stub == t && !strcmp(model->lazy[i].name, t->name ? t->name : ""))
            return &model->lazy[i];
    return NULL;
}

void rnnstate_model_free(rnnstate_model *model)
{
    if (!model)
        return;
    if (model->proto)
        onnx__model_proto__free_unpacked(model->proto, NULL);
    if (model->source_fd >= 0)
        close(model->source_fd);
    for (size_t i = 0; i < model->n_lazy; i++)
        free(model->lazy[i].name);
    free(model->lazy);
    free(model->source_dir);
    free(model->label);
    free(model);
}

void rnnstate_buffer_free(unsigned char *data)
{
    free(data);
}
