#define _GNU_SOURCE /* O_TMPFILE, linkat, copy_file_range */
/* Saving models.
 *
 * The writer serializes the model with protobuf-c, except the lazy
 * initializers (lazy_scan.h), whose bytes it copies from the source file, so
 * that they never pass through memory: with copy_file_range() where the
 * source and destination offsets are congruent modulo the block size (the
 * file system can then share or copy whole blocks), else with pread() and
 * write() through a large buffer (copy_file_range() between misaligned
 * offsets is several times slower on ext4). Field order in the output may
 * differ from the input; every field, known or not, survives.
 *
 * Saving to a file is atomic. The model is written to an unnamed file
 * (O_TMPFILE) in the target directory and, when nothing is at the target,
 * linked there in one step: a process killed at any moment leaves nothing
 * behind. Replacing a file takes a temporary name and a rename(); a process
 * killed between the two leaves that name, which the next run into the
 * directory removes (rnnstate_remove_stale_temp_files). Where O_TMPFILE is
 * not supported, a named temporary file is used and removed on failure. The
 * library changes no process-wide state: no umask(), no signal mask; the
 * caller may ask a save to stop through rnnstate_save_options.cancel. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "util/array.h"
#include "model/wire.h"
#include "model.h"
#include "model/onnx_build.h"
#include "options.h"

#define FIELD_GRAPH_KEY ((7 << 3) | 2)       /* ModelProto.graph */
#define FIELD_INITIALIZER_KEY ((5 << 3) | 2) /* GraphProto.initializer */
/* The largest output written: what the loader (and protobuf) accept. */
#define MAX_OUTPUT_BYTES ((uint64_t)RNNSTATE_DEFAULT_MAX_MODEL_BYTES)

/* ---- where the bytes go -------------------------------------------------- */

/* Writes to a file go through a buffer of this size: the serialized graph
 * and the small tensors between large ones are gathered into few write()
 * calls, and lazy tensors copied with pread() land in it directly. Small
 * enough to stay in the CPU's cache between the read and the write: with
 * 1 MiB, 15,000 GRUs of 64 KiB weights (1.9 GB) took 1.8 s against 1.15 s
 * (median of 6 interleaved runs; the same at 6,000). */
#define SINK_BUFFER ((size_t)256 << 10)

typedef struct sink {
    int fd;             /* a file, or -1 for memory */
    uint64_t written;   /* bytes put in the file so far (the buffer not included) */
    bool start_writeback; /* the file will be fsync()ed: start writing it out early */
    uint64_t flushed;   /* bytes handed to writeback so far */
    uint64_t fd_start;  /* the file offset at which writing began, or UINT64_MAX (a pipe) */
    uint64_t block;     /* the block size congruence is judged by */
    unsigned char *buf; /* memory, or a file's write buffer */
    size_t len, cap;
    int src_fd;         /* the lazy tensors' file */
    const volatile sig_atomic_t *cancel; /* the caller's request to stop, or NULL */
    int error;          /* errno of the first failure to write (or ECANCELED) */
    int src_error;      /* errno of the first failure to read the source, EIO when it shrank */
} sink;

/* The caller asked to stop: give up, so that the temporary file goes. */
static bool interrupted(sink *s)
{
    if (!s->error && !s->src_error && s->cancel && *s->cancel)
        s->error = ECANCELED;
    return s->error || s->src_error;
}

/* Kernel copies are made in steps of this size, so that a request to stop
 * is noticed soon. */
#define COPY_STEP ((uint64_t)64 << 20)
/* Ranges shorter than this go through the buffer even where the kernel
 * could copy them: a kernel copy first costs a write() of the buffer. */
#define KERNEL_COPY_MIN ((uint64_t)256 << 10)

static bool write_all(sink *s, const unsigned char *data, size_t size)
{
    while (size > 0) {
        ssize_t put = write(s->fd, data, size);
        if (put < 0 && errno == EINTR) {
            if (interrupted(s))
                return false;
            continue;
        }
        if (put <= 0) {
            s->error = put == 0 ? EIO : errno;
            return false;
        }
        data += put;
        size -= (size_t)put;
    }
    return true;
}

/* With --sync, hands what was written so far to the kernel's writeback in
 * large steps, so that the disk works while the copy goes on and the final
 * fsync() has little left to do. A hint only: failures are ignored (fsync
 * reports). */
static void start_writeback(sink *s)
{
    if (!s->start_writeback || s->written - s->flushed < ((uint64_t)64 << 20))
        return;
    sync_file_range(s->fd, (off64_t)s->flushed, (off64_t)(s->written - s->flushed),
                    SYNC_FILE_RANGE_WRITE);
    s->flushed = s->written;
}

/* Writes out a file sink's buffer. */
static bool sink_flush(sink *s)
{
    if (s->fd < 0 || !s->len)
        return !interrupted(s);
    if (interrupted(s) || !write_all(s, s->buf, s->len))
        return false;
    s->written += s->len;
    s->len = 0;
    start_writeback(s);
    return true;
}

/* Room for at least one byte at the end of the buffer: a file sink's is
 * flushed when full; memory grows. */
static bool sink_room(sink *s, size_t want)
{
    if (s->fd >= 0) {
        if (!s->buf && !(s->buf = malloc(s->cap = SINK_BUFFER))) {
            s->error = ENOMEM;
            return false;
        }
        return s->len < s->cap || sink_flush(s);
    }
    if (s->len + want > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + want)
            cap *= 2;
        unsigned char *grown = realloc(s->buf, cap);
        if (!grown) {
            s->error = ENOMEM;
            return false;
        }
        s->buf = grown;
        s->cap = cap;
    }
    return true;
}

static bool sink_write(sink *s, const void *data, size_t size)
{
    const unsigned char *p = data;
    if (interrupted(s))
        return false;
    if (s->fd >= 0 && size >= SINK_BUFFER) { /* large: straight to the file */
        if (!sink_flush(s) || !write_all(s, p, size))
            return false;
        s->written += size;
        start_writeback(s);
        return true;
    }
    while (size > 0) {
        if (!sink_room(s, size))
            return false;
        size_t n = s->cap - s->len < size ? s->cap - s->len : size;
        memcpy(s->buf + s->len, p, n);
        s->len += n;
        p += n;
        size -= n;
    }
    return true;
}

/* Copies [offset, offset + length) of the source file with pread() into
 * the buffer. */
static bool copy_by_reading(sink *s, uint64_t offset, uint64_t length)
{
    while (length > 0 && sink_room(s, length > SINK_BUFFER ? SINK_BUFFER : (size_t)length) &&
           !interrupted(s)) {
        size_t free_space = s->cap - s->len;
        size_t want = length < free_space ? (size_t)length : free_space;
        ssize_t got = pread(s->src_fd, s->buf + s->len, want, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            s->src_error = got < 0 ? errno : EIO; /* EOF: the file shrank */
            break;
        }
        s->len += (size_t)got;
        offset += (uint64_t)got;
        length -= (uint64_t)got;
    }
    return !interrupted(s);
}

/* copy_file_range() shares or copies whole blocks when the source and
 * destination offsets agree modulo the block size; otherwise the file
 * system copies through partial blocks, much slower than pread/write. */
static bool offsets_congruent(const sink *s, uint64_t offset)
{
    return s->fd >= 0 && s->fd_start != UINT64_MAX &&
           offset % s->block == (s->fd_start + s->written + s->len) % s->block;
}

/* Copies a lazy tensor's bytes file to file, in the kernel where that is
 * fast (large and congruent); through the buffer otherwise. */
static bool sink_copy(sink *s, uint64_t offset, uint64_t length)
{
    loff_t in = (loff_t)offset;
    if (length >= KERNEL_COPY_MIN && offsets_congruent(s, offset) && !sink_flush(s))
        return false;
    while (length >= KERNEL_COPY_MIN && offsets_congruent(s, (uint64_t)in) && !interrupted(s)) {
        size_t step = length > COPY_STEP ? (size_t)COPY_STEP : (size_t)length;
        ssize_t n = copy_file_range(s->src_fd, &in, s->fd, NULL, step, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EOF, or not supported here: pread says which */
        length -= (uint64_t)n;
        s->written += (uint64_t)n;
        start_writeback(s);
    }
    if (interrupted(s))
        return false;
    return length == 0 || copy_by_reading(s, (uint64_t)in, length);
}

/* A sink writing to fd from its current offset. */
static sink file_sink(int fd, int src_fd, const rnnstate_save_options *o)
{
    sink s = { .fd = fd, .src_fd = src_fd, .cancel = o->cancel, .block = 4096,
               .start_writeback = o->sync };
    off_t at = lseek(fd, 0, SEEK_CUR);
    s.fd_start = at < 0 ? UINT64_MAX : (uint64_t)at;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_blksize > 4096)
        s.block = (uint64_t)st.st_blksize;
    return s;
}

/* ---- serialization ------------------------------------------------------- */

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static bool sink_varint(sink *s, uint64_t v)
{
    strbuf sb = STRBUF_INIT;
    sb_add_varint(&sb, v);
    bool ok = !sb.oom && sink_write(s, sb.buf, sb.len);
    if (sb.oom)
        s->error = ENOMEM;
    sb_release(&sb);
    return ok;
}

/* Packs a message of `size` bytes (its packed size, known to the caller):
 * in place when it fits the buffer, else through a block of its own. */
static bool sink_message_sized(sink *s, const ProtobufCMessage *m, size_t size)
{
    if (s->fd >= 0 && size < SINK_BUFFER) {
        if (!sink_room(s, size) || (s->cap - s->len < size && !sink_flush(s)))
            return false;
        protobuf_c_message_pack(m, s->buf + s->len);
        s->len += size;
        return true;
    }
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        s->error = ENOMEM;
        return false;
    }
    protobuf_c_message_pack(m, buf);
    bool ok = sink_write(s, buf, size);
    free(buf);
    return ok;
}

/* The bytes one initializer takes inside the graph, tag included. */
static uint64_t initializer_field_size(const rnnstate_model *m, const Onnx__TensorProto *t)
{
    const lazy_tensor *lt = model_lazy_tensor(m, t);
    if (lt)
        return lt->length;
    size_t n = onnx__tensor_proto__get_packed_size(t);
    return 1 + varint_size(n) + n;
}

/* Consecutive lazy initializers usually lie back to back in the source file
 * (an exporter writes W, R and B of each layer in a row): their ranges are
 * merged, so that the kernel copies the weights in as few calls as cat
 * would. */
typedef struct pending_copy {
    uint64_t offset, length;
} pending_copy;

static bool flush_copy(sink *s, pending_copy *p)
{
    bool ok = p->length == 0 || sink_copy(s, p->offset, p->length);
    p->length = 0;
    return ok;
}

static bool emit_initializer(sink *s, const rnnstate_model *m, const Onnx__TensorProto *t,
                             pending_copy *pending)
{
    const lazy_tensor *lt = model_lazy_tensor(m, t);
    if (lt && pending->length && pending->offset + pending->length == lt->offset) {
        pending->length += lt->length;
        return true;
    }
    if (!flush_copy(s, pending))
        return false;
    if (lt) {
        *pending = (pending_copy){ lt->offset, lt->length };
        return true;
    }
    unsigned char key = FIELD_INITIALIZER_KEY;
    size_t size = onnx__tensor_proto__get_packed_size(t);
    return sink_write(s, &key, 1) && sink_varint(s, size) && sink_message_sized(s, &t->base, size);
}

/* The main graph and the model without the graph's initializers, and the
 * model without its graph: shallow copies, packed in place of the originals,
 * so that the model itself is never touched (several threads may save it at
 * once). */
typedef struct bare_parts {
    Onnx__GraphProto graph;
    Onnx__ModelProto model;
} bare_parts;

static bare_parts bare(const Onnx__ModelProto *proto)
{
    bare_parts b = { *proto->graph, *proto };
    b.graph.initializer = NULL;
    b.graph.n_initializer = 0;
    b.model.graph = NULL;
    return b;
}

/* The sizes of what is written, computed once before anything is: the
 * whole model and, for a lazy model, the model without its graph, the main
 * graph with its initializers as emit_lazy_model() writes them, and the
 * main graph without them. */
typedef struct output_sizes {
    uint64_t total, bare_model, graph, bare_graph;
} output_sizes;

static output_sizes output_size(const rnnstate_model *m, const Onnx__ModelProto *proto)
{
    output_sizes o = { 0, 0, 0, 0 };
    if (!m->n_lazy) {
        o.total = protobuf_c_message_get_packed_size(&proto->base);
        return o;
    }
    const Onnx__GraphProto *g = proto->graph;
    bare_parts b = bare(proto);
    for (size_t i = 0; i < g->n_initializer; i++)
        o.graph += initializer_field_size(m, g->initializer[i]);
    o.bare_graph = onnx__graph_proto__get_packed_size(&b.graph);
    o.graph += o.bare_graph;
    o.bare_model = protobuf_c_message_get_packed_size(&b.model.base);
    o.total = o.bare_model + 1 + varint_size(o.graph) + o.graph;
    return o;
}

/* The model with the main graph's initializers written one by one: lazy
 * ones copied from the source file, the others packed. The graph's other
 * fields come first, then its initializers, then nothing: protobuf allows
 * any field order, and merges nothing here (each field appears once). */
static void emit_lazy_model(const rnnstate_model *m, const Onnx__ModelProto *proto, sink *s,
                            const output_sizes *sizes)
{
    const Onnx__GraphProto *g = proto->graph;
    bare_parts b = bare(proto);
    unsigned char key = FIELD_GRAPH_KEY;
    bool ok = sink_message_sized(s, &b.model.base, sizes->bare_model) && sink_write(s, &key, 1) &&
              sink_varint(s, sizes->graph) &&
              sink_message_sized(s, &b.graph.base, sizes->bare_graph);
    pending_copy pending = { 0, 0 };
    for (size_t i = 0; ok && i < g->n_initializer; i++)
        ok = emit_initializer(s, m, g->initializer[i], &pending);
    if (ok)
        flush_copy(s, &pending);
}

/* The lazy weights are copied from the file the model was loaded from,
 * which must be unchanged (same device, inode, size and modification time):
 * checked just before the copy starts; a file that shrinks during the copy
 * is caught by the copy. */
static rnnstate_status check_source_unchanged(const rnnstate_model *m, rnnstate_error *err)
{
    struct stat now;
    const struct stat *then = &m->source_stat;
    if (m->source_fd < 0)
        return RNNSTATE_OK;
    if (fstat(m->source_fd, &now) != 0)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot read its weights back: %s", m->label,
                         strerror(errno));
    if (now.st_dev != then->st_dev || now.st_ino != then->st_ino ||
        now.st_size != then->st_size || now.st_mtim.tv_sec != then->st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != then->st_mtim.tv_nsec)
        return set_error(err, RNNSTATE_ERR_IO,
                         "%s: the file changed since it was loaded (its size or modification "
                         "time differs), so its weights cannot be copied: nothing written",
                         m->label);
    return RNNSTATE_OK;
}

/* What every save checks before it creates or writes anything: the output
 * stays within protobuf's limit. *sizes are for emit_model(). */
static rnnstate_status check_before_writing(const rnnstate_model *m,
                                            const Onnx__ModelProto *proto, output_sizes *sizes,
                                            rnnstate_error *err)
{
    *sizes = output_size(m, proto);
    if (sizes->total > MAX_OUTPUT_BYTES)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: the rewritten model would take %llu bytes, more than protobuf's "
                         "limit of 2 GiB: nothing written",
                         m->label, (unsigned long long)sizes->total);
    return RNNSTATE_OK;
}

/* Writes the model (checked by check_before_writing()) into the sink. An
 * error reading the source is reported here, naming the model; the caller
 * reports s->error, naming the destination. */
static rnnstate_status emit_model(const rnnstate_model *m, const Onnx__ModelProto *proto,
                                  sink *s, const output_sizes *sizes, rnnstate_error *err)
{
    rnnstate_status st = check_source_unchanged(m, err);
    if (st != RNNSTATE_OK)
        return st;
    if (!m->n_lazy)
        sink_message_sized(s, &proto->base, (size_t)sizes->total);
    else
        emit_lazy_model(m, proto, s, sizes);
    sink_flush(s);
    if (s->error == ENOMEM)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    if (s->src_error)
        return set_error(err, RNNSTATE_ERR_IO,
                         "%s: cannot read its weights back: %s: nothing written", m->label,
                         s->src_error == EIO ? "the file shrank since it was loaded"
                                             : strerror(s->src_error));
    return RNNSTATE_OK;
}

rnnstate_status rnnstate_model_save_memory(const rnnstate_model *model, unsigned char **data,
                                           size_t *size, rnnstate_error *err)
{
    *data = NULL;
    *size = 0;
    output_sizes sizes;
    rnnstate_status st = check_before_writing(model, model->proto, &sizes, err);
    if (st != RNNSTATE_OK)
        return st;
    sink s = { .fd = -1, .src_fd = model->source_fd };
    st = emit_model(model, model->proto, &s, &sizes, err);
    if (st != RNNSTATE_OK) {
        free(s.buf);
        return st;
    }
    *data = s.buf ? s.buf : malloc(1);
    *size = s.len;
    return *data ? RNNSTATE_OK
                 : set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
}

/* ---- external data --------------------------------------------------------- */

/* The model as it is written into another directory: the path from its root
 * to every tensor whose external data location changes is copied (a
 * shallow copy of each message on the way, sharing everything else), so
 * the model itself is never modified. */
typedef struct relocations {
    Onnx__ModelProto model; /* what to write when graph_copy is not NULL */
    Onnx__GraphProto *graph_copy;
    void **blocks; /* every allocation of the copies */
    size_t n_blocks;
    const char *source_dir;
    char *out_dir; /* resolved */
    const char *label;
    rnnstate_error *err;
    rnnstate_status status;
} relocations;

/* The length of the next path component at p (after any slashes). */
static size_t component(const char **p)
{
    while (**p == '/')
        (*p)++;
    return strcspn(*p, "/");
}

/* The relative path from directory `from` to file `to`, both absolute and
 * resolved (no "." or ".." components, no symbolic links). */
static char *relative_path(const char *from, const char *to)
{
    const char *f = from, *t = to;
    for (;;) {
        const char *fs = f, *ts = t;
        size_t fl = component(&fs), tl = component(&ts);
        if (!fl || fl != tl || strncmp(fs, ts, fl) != 0)
            break;
        f = fs + fl;
        t = ts + tl;
    }
    strbuf sb = STRBUF_INIT;
    for (const char *p = f; component(&p) > 0; p += strcspn(p, "/"))
        sb_adds(&sb, "../");
    while (*t == '/')
        t++;
    sb_adds(&sb, t);
    if (sb.oom) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb);
}

/* Keeps `block` (NULL: out of memory) for release_relocations(). */
static void *keep(relocations *r, void *block)
{
    void **grown = block ? owned_array_grow(r->blocks, r->n_blocks, sizeof *grown) : NULL;
    if (!grown) {
        free(block);
        if (r->status == RNNSTATE_OK)
            r->status = set_error(r->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", r->label);
        return NULL;
    }
    r->blocks = grown;
    r->blocks[r->n_blocks++] = block;
    return block;
}

static void *keep_copy(relocations *r, const void *from, size_t size)
{
    void *block = malloc(size);
    if (block)
        memcpy(block, from, size);
    return keep(r, block);
}

/* The location of external file `location` of tensor `t`, relative to the
 * output's directory; NULL on error (r->status). */
static char *relocated_location(relocations *r, const Onnx__TensorProto *t, const char *location)
{
    char joined[PATH_MAX * 2], target[PATH_MAX];
    snprintf(joined, sizeof joined, "%s/%s", r->source_dir, location);
    if (!realpath(joined, target)) {
        r->status = set_error(r->err, RNNSTATE_ERR_IO,
                              "%s: external data file '%s' of tensor '%s' cannot be found (%s)",
                              r->label, location, str_or_empty(t->name), strerror(errno));
        return NULL;
    }
    char *rel = keep(r, relative_path(r->out_dir, target));
    if (rel && !strncmp(rel, "../", 3)) {
        /* ONNX Runtime refuses external data outside the model's directory */
        r->status = set_error(r->err, RNNSTATE_ERR_INVALID,
                              "%s: tensor '%s' is stored in external file '%s', which would "
                              "lie outside the output's directory (ONNX Runtime refuses "
                              "that): write the output in '%s' or a directory above it, or "
                              "copy the file next to the output",
                              r->label, str_or_empty(t->name), location, r->source_dir);
        return NULL;
    }
    return rel;
}

/* Each relocated_* function returns a copy of its message with the external
 * data locations inside changed, or NULL when nothing inside changes (or on
 * error, in r->status). */
static Onnx__TensorProto *relocated_tensor(relocations *r, const Onnx__TensorProto *t)
{
    if (!t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return NULL;
    Onnx__TensorProto *copy = NULL;
    for (size_t i = 0; r->status == RNNSTATE_OK && i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (strcmp(str_or_empty(e->key), "location") || !e->value || e->value[0] == '/')
            continue;
        char *rel = relocated_location(r, t, e->value);
        if (rel && !copy && (copy = keep_copy(r, t, sizeof *t)))
            copy->external_data =
                keep_copy(r, t->external_data, t->n_external_data * sizeof *copy->external_data);
        Onnx__StringStringEntryProto *entry =
            copy && copy->external_data ? keep_copy(r, e, sizeof *e) : NULL;
        if (entry) {
            entry->value = rel;
            copy->external_data[i] = entry;
        }
    }
    return r->status == RNNSTATE_OK ? copy : NULL;
}

/* A copy of `message` (`size` bytes) in which the caller replaces the fields
 * that relocate, when any did (`changed`) and nothing failed; else NULL. */
static void *copy_if_changed(relocations *r, const void *message, size_t size, bool changed)
{
    return r->status == RNNSTATE_OK && changed ? keep_copy(r, message, size) : NULL;
}

/* A sparse tensor's values and indices are tensors of their own. */
static Onnx__SparseTensorProto *relocated_sparse(relocations *r, const Onnx__SparseTensorProto *s)
{
    Onnx__TensorProto *values = s->values ? relocated_tensor(r, s->values) : NULL;
    Onnx__TensorProto *indices = s->indices ? relocated_tensor(r, s->indices) : NULL;
    Onnx__SparseTensorProto *copy = copy_if_changed(r, s, sizeof *s, values || indices);
    if (copy) {
        copy->values = values ? values : s->values;
        copy->indices = indices ? indices : s->indices;
    }
    return copy;
}

static Onnx__AttributeProto *relocated_attribute(relocations *r, const Onnx__AttributeProto *a);
static Onnx__NodeProto *relocated_node(relocations *r, const Onnx__NodeProto *node);
static Onnx__GraphProto *relocated_graph(relocations *r, const Onnx__GraphProto *g);

/* The message types that arrays of relocated_array hold. */
typedef enum {
    RELOCATE_TENSORS,
    RELOCATE_SPARSE_TENSORS,
    RELOCATE_ATTRIBUTES,
    RELOCATE_NODES,
    RELOCATE_GRAPHS,
} relocated_kind;

static void *relocated_message(relocations *r, relocated_kind kind, const void *message)
{
    switch (kind) {
    case RELOCATE_TENSORS: return relocated_tensor(r, message);
    case RELOCATE_SPARSE_TENSORS: return relocated_sparse(r, message);
    case RELOCATE_ATTRIBUTES: return relocated_attribute(r, message);
    case RELOCATE_NODES: return relocated_node(r, message);
    case RELOCATE_GRAPHS: return relocated_graph(r, message);
    }
    return NULL;
}

/* A copy of the array `items` of `n` messages of type `kind` (pointers, as
 * protobuf-c keeps repeated messages) in which those whose locations change
 * are replaced, or NULL when none changes. */
static void *relocated_array(relocations *r, const void *items, size_t n, relocated_kind kind)
{
    void *const *messages = items;
    void **copy = NULL;
    for (size_t i = 0; r->status == RNNSTATE_OK && i < n; i++) {
        void *message = relocated_message(r, kind, messages[i]);
        if (message && (copy || (copy = keep_copy(r, messages, n * sizeof *copy))))
            copy[i] = message;
    }
    return r->status == RNNSTATE_OK ? copy : NULL;
}

/* TENSOR, TENSORS, SPARSE_TENSOR, SPARSE_TENSORS, GRAPH and GRAPHS attributes. */
static Onnx__AttributeProto *relocated_attribute(relocations *r, const Onnx__AttributeProto *a)
{
    Onnx__TensorProto *t = a->t ? relocated_tensor(r, a->t) : NULL;
    Onnx__TensorProto **tensors = relocated_array(r, a->tensors, a->n_tensors, RELOCATE_TENSORS);
    Onnx__SparseTensorProto *sparse =
        a->sparse_tensor ? relocated_sparse(r, a->sparse_tensor) : NULL;
    Onnx__SparseTensorProto **sparse_tensors =
        relocated_array(r, a->sparse_tensors, a->n_sparse_tensors, RELOCATE_SPARSE_TENSORS);
    Onnx__GraphProto *g = a->g ? relocated_graph(r, a->g) : NULL;
    Onnx__GraphProto **graphs = relocated_array(r, a->graphs, a->n_graphs, RELOCATE_GRAPHS);
    Onnx__AttributeProto *copy =
        copy_if_changed(r, a, sizeof *a, t || tensors || sparse || sparse_tensors || g || graphs);
    if (copy) {
        copy->t = t ? t : a->t;
        copy->tensors = tensors ? tensors : a->tensors;
        copy->sparse_tensor = sparse ? sparse : a->sparse_tensor;
        copy->sparse_tensors = sparse_tensors ? sparse_tensors : a->sparse_tensors;
        copy->g = g ? g : a->g;
        copy->graphs = graphs ? graphs : a->graphs;
    }
    return copy;
}

static Onnx__NodeProto *relocated_node(relocations *r, const Onnx__NodeProto *node)
{
    Onnx__AttributeProto **attrs =
        relocated_array(r, node->attribute, node->n_attribute, RELOCATE_ATTRIBUTES);
    Onnx__NodeProto *copy = copy_if_changed(r, node, sizeof *node, attrs);
    if (copy)
        copy->attribute = attrs;
    return copy;
}

static Onnx__GraphProto *relocated_graph(relocations *r, const Onnx__GraphProto *g)
{
    Onnx__TensorProto **inits =
        relocated_array(r, g->initializer, g->n_initializer, RELOCATE_TENSORS);
    Onnx__SparseTensorProto **sparse_inits = relocated_array(
        r, g->sparse_initializer, g->n_sparse_initializer, RELOCATE_SPARSE_TENSORS);
    Onnx__NodeProto **nodes = relocated_array(r, g->node, g->n_node, RELOCATE_NODES);
    Onnx__GraphProto *copy = copy_if_changed(r, g, sizeof *g, inits || sparse_inits || nodes);
    if (copy) {
        copy->initializer = inits ? inits : g->initializer;
        copy->sparse_initializer = sparse_inits ? sparse_inits : g->sparse_initializer;
        copy->node = nodes ? nodes : g->node;
    }
    return copy;
}

static const char *external_location(const Onnx__TensorProto *t)
{
    if (!t || !t->has_data_location ||
        t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return NULL;
    for (size_t i = 0; i < t->n_external_data; i++)
        if (!strcmp(str_or_empty(t->external_data[i]->key), "location"))
            return str_or_empty(t->external_data[i]->value);
    return NULL;
}

static const char *sparse_location(const Onnx__SparseTensorProto *s)
{
    const char *found = s ? external_location(s->values) : NULL;
    return found ? found : s ? external_location(s->indices) : NULL;
}

static const char *first_external_location(const Onnx__GraphProto *g);

static const char *attribute_location(const Onnx__AttributeProto *a)
{
    const char *found = external_location(a->t);
    if (!found)
        found = sparse_location(a->sparse_tensor);
    if (!found && a->g)
        found = first_external_location(a->g);
    for (size_t k = 0; !found && k < a->n_tensors; k++)
        found = external_location(a->tensors[k]);
    for (size_t k = 0; !found && k < a->n_sparse_tensors; k++)
        found = sparse_location(a->sparse_tensors[k]);
    for (size_t k = 0; !found && k < a->n_graphs; k++)
        found = first_external_location(a->graphs[k]);
    return found;
}

/* The location of the first tensor stored outside the model (wherever
 * relocated_graph() looks), or NULL. */
static const char *first_external_location(const Onnx__GraphProto *g)
{
    const char *found = NULL;
    for (size_t i = 0; !found && i < g->n_initializer; i++)
        found = external_location(g->initializer[i]);
    for (size_t i = 0; !found && i < g->n_sparse_initializer; i++)
        found = sparse_location(g->sparse_initializer[i]);
    for (size_t n = 0; !found && n < g->n_node; n++)
        for (size_t a = 0; !found && a < g->node[n]->n_attribute; a++)
            found = attribute_location(g->node[n]->attribute[a]);
    return found;
}

static void release_relocations(relocations *r)
{
    for (size_t i = 0; i < r->n_blocks; i++)
        free(r->blocks[i]);
    free(r->blocks);
    free(r->out_dir);
}

/* The model to write: the relocated copy, or the model itself. */
static const Onnx__ModelProto *relocated_model(const rnnstate_model *m, const relocations *r)
{
    return r->graph_copy ? &r->model : m->proto;
}

/* Points external data locations at the same files from the output's
 * directory, in a copy (see relocations). The external files are never read
 * or copied. */
static rnnstate_status relocate_external_data(const rnnstate_model *m, const char *path,
                                              relocations *r, rnnstate_error *err)
{
    memset(r, 0, sizeof *r);
    r->label = m->label;
    r->err = err;
    r->source_dir = m->source_dir;
    /* most models keep every tensor inside: no path to resolve (realpath()
     * costs a system call per directory of both paths) */
    const char *location = first_external_location(m->proto->graph);
    if (!location)
        return RNNSTATE_OK;
    if (!m->source_dir)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: initializers are stored in external files ('%s') whose location "
                         "is relative to the model's directory, which is unknown here: give "
                         "the model's path instead",
                         m->label, location);
    char *copy = strdup(path);
    char resolved[PATH_MAX];
    if (!copy)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    bool found = realpath(dirname(copy), resolved) != NULL;
    free(copy);
    char source[PATH_MAX];
    if (!found || !realpath(m->source_dir, source) || !strcmp(source, resolved))
        return RNNSTATE_OK; /* same directory: nothing to change */
    if (!(r->out_dir = strdup(resolved)))
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    r->source_dir = m->source_dir;
    r->graph_copy = relocated_graph(r, m->proto->graph);
    r->model = *m->proto;
    r->model.graph = r->graph_copy;
    return r->status;
}

/* ---- atomic files ---------------------------------------------------------- */

/* Temporary files are named TEMP_PREFIX "PID-RANDOM": short whatever the
 * target's name (a target name of NAME_MAX bytes still works), and telling
 * a later run which process made them (rnnstate_remove_stale_temp_files). */
#define TEMP_PREFIX ".rnnstate.tmp-"

static char *directory_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    char *dir = strdup(dirname(copy));
    free(copy);
    return dir;
}

/* A fresh temporary name in dir (the target's directory, so that rename()
 * stays within one file system and is atomic). */
static char *temp_name_in(const char *dir)
{
    unsigned char random_bytes[6];
    if (getrandom(random_bytes, sizeof random_bytes, GRND_NONBLOCK) != sizeof random_bytes) {
        /* no entropy yet (early boot): a clock is enough, EEXIST retries */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t mix = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)now.tv_sec;
        memcpy(random_bytes, &mix, sizeof random_bytes);
    }
    size_t need = strlen(dir) + sizeof TEMP_PREFIX + 48;
    char *tmp = malloc(need);
    if (tmp)
        snprintf(tmp, need, "%s/" TEMP_PREFIX "%ld-%02x%02x%02x%02x%02x%02x", dir, (long)getpid(),
                 random_bytes[0], random_bytes[1], random_bytes[2], random_bytes[3],
                 random_bytes[4], random_bytes[5]);
    return tmp;
}

/* What is at the target path now. */
typedef struct target {
    bool replaced;  /* a regular file (or a symbolic link to one) is replaced */
    struct stat st; /* its mode and owner, kept */
} target;

typedef struct emit_job {
    const rnnstate_model *model;
    const Onnx__ModelProto *proto; /* the model's, or its relocated copy */
    const rnnstate_save_options *options;
    const char *path;
    output_sizes sizes; /* from check_before_writing(), done before any file is touched */
    rnnstate_error *err;
    rnnstate_status status; /* a failure that is not an errno (out of memory, the source) */
} emit_job;

/* Writes the model to fd; returns an errno, or -1 for a failure already in
 * job->status. */
static int emit_to_fd(emit_job *job, int fd)
{
    sink s = file_sink(fd, job->model->source_fd, job->options);
    job->status = emit_model(job->model, job->proto, &s, &job->sizes, job->err);
    free(s.buf);
    if (job->status != RNNSTATE_OK)
        return -1;
    return s.error;
}

/* The replaced file's owner (where this process may set it: root, or a
 * group it belongs to) and mode go to the new file, so that a private model
 * stays private. chown() first: it clears set-user-ID bits. */
static int keep_owner_and_mode(int fd, const struct stat *was)
{
    struct stat now;
    if (fstat(fd, &now) == 0 && (now.st_uid != was->st_uid || now.st_gid != was->st_gid) &&
        fchown(fd, was->st_uid, was->st_gid) != 0 && now.st_gid != was->st_gid &&
        fchown(fd, (uid_t)-1, was->st_gid) != 0) {
        /* not permitted: the file keeps this process's owner, and the mode below */
    }
    return fchmod(fd, was->st_mode & 07777) == 0 ? 0 : errno;
}

/* The names of the extended attributes of `path` (a NUL-separated list of
 * *size bytes, malloc'd; NULL with *size 0 when it has none or its file
 * system keeps none); false with errno on failure. */
static bool list_xattrs(const char *path, char **names, ssize_t *size)
{
    *names = NULL;
    *size = 0;
    for (int attempt = 0; attempt < 8; attempt++) { /* the list may grow meanwhile */
        ssize_t n = listxattr(path, NULL, 0);
        if (n < 0)
            return errno == ENOTSUP;
        if (n == 0)
            return true;
        char *buf = malloc((size_t)n);
        if (!buf) {
            errno = ENOMEM;
            return false;
        }
        ssize_t got = listxattr(path, buf, (size_t)n);
        if (got >= 0) {
            *names = buf;
            *size = got;
            return true;
        }
        free(buf);
        if (errno != ERANGE)
            return false;
    }
    errno = ERANGE;
    return false;
}

/* Gives the new file the value of the replaced file's attribute `name`;
 * 0 or an errno. A value the new file already has (an SELinux label the
 * policy gave it) counts as kept. */
static int keep_xattr(int fd, const char *path, const char *name)
{
    ssize_t n = getxattr(path, name, NULL, 0);
    if (n < 0)
        return errno == ENODATA ? 0 : errno; /* removed meanwhile */
    char *value = malloc(n ? (size_t)n : 1), *now = malloc(n ? (size_t)n : 1);
    int e = 0;
    if (!value || !now)
        e = ENOMEM;
    else if ((n = getxattr(path, name, value, (size_t)n)) < 0)
        e = errno;
    else if (fsetxattr(fd, name, value, (size_t)n, 0) != 0) {
        e = errno;
        if (fgetxattr(fd, name, now, (size_t)n) == n && !memcmp(now, value, (size_t)n))
            e = 0;
    }
    free(value);
    free(now);
    return e;
}

/* The replaced file's extended attributes go to the new file, POSIX ACLs
 * (system.posix_acl_access) among them: without its ACL a file whose
 * owning group had no access would give that group the ACL's mask, and
 * named users would lose theirs. Called after the mode is set (setting the
 * ACL sets the group bits to its mask, as they were). Where one cannot be
 * kept, the replace is refused (-1, job->status) with a message naming it. */
static int keep_xattrs(emit_job *job, int fd)
{
    char *names;
    ssize_t size;
    if (!list_xattrs(job->path, &names, &size))
        return errno;
    int e = 0;
    const char *failed = NULL;
    for (const char *name = names; !e && names && name < names + size; name += strlen(name) + 1)
        if ((e = keep_xattr(fd, job->path, name)) != 0)
            failed = name;
    if (failed) {
        job->status = set_error(job->err, RNNSTATE_ERR_IO,
                                "%s: not replaced: its extended attribute '%s' cannot be kept "
                                "(%s); the file is as it was",
                                job->path, failed, strerror(e));
        e = -1;
    }
    free(names);
    return e;
}

/* A complete temporary file is made ready to take the target's place: the
 * replaced file's owner, mode and extended attributes (ACLs), fsync() when
 * asked, the caller's verification. Returns an errno, or -1 with
 * job->status. */
static int finish_file(emit_job *job, int fd, const target *t)
{
    const rnnstate_save_options *o = job->options;
    int e = t->replaced ? keep_owner_and_mode(fd, &t->st) : 0;
    if (!e && t->replaced)
        e = keep_xattrs(job, fd);
    if (!e && o->sync && fsync(fd) != 0)
        e = errno;
    if (!e && o->verify) {
        if (lseek(fd, 0, SEEK_SET) != 0)
            return errno;
        job->status = o->verify(fd, job->path, o->verify_arg, job->err);
        if (job->status != RNNSTATE_OK)
            return -1;
    }
    if (!e && o->cancel && *o->cancel)
        e = ECANCELED;
    return e;
}

/* With --sync (options->sync), the name linkat() or rename() just made is
 * made durable too: until the directory is fsync()ed, a crash of the
 * machine may lose a new file's name (ext4 and others), or keep the old
 * file under a replaced one. A file system that cannot fsync a directory
 * (fsync() fails with EINVAL: some FUSE and network file systems) makes
 * the name as durable as it makes it; that is not an error. Returns 0 or
 * an errno. */
static int sync_directory(const rnnstate_save_options *o, const char *dir)
{
    if (!o->sync)
        return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    close(fd);
    return e;
}

/* Set once linkat(AT_EMPTY_PATH) was refused and /proc served instead. */
static atomic_bool empty_path_refused;

/* Names the unnamed file fd at `to` (never replacing anything there); 0 or
 * an errno. linkat(AT_EMPTY_PATH) names the open file itself, without the
 * walk through /proc that /proc/self/fd/N costs each time; kernels before
 * 6.10 allow it only with CAP_DAC_READ_SEARCH and refuse others with ENOENT.
 * Then the file is named through /proc, from then on. */
static int link_unnamed(int fd, const char *to)
{
    int refused = 0;
    if (!atomic_load_explicit(&empty_path_refused, memory_order_relaxed)) {
        if (linkat(fd, "", AT_FDCWD, to, AT_EMPTY_PATH) == 0)
            return 0;
        refused = errno;
        if (refused != ENOENT && refused != EPERM && refused != EINVAL)
            return refused;
    }
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc_path, AT_FDCWD, to, AT_SYMLINK_FOLLOW) != 0)
        return errno;
    if (refused)
        atomic_store_explicit(&empty_path_refused, true, memory_order_relaxed);
    return 0;
}

/* Gives the complete unnamed file a temporary name, then renames it over the
 * target. A process killed between the two leaves the temporary name. The
 * file is locked first (nobody else can open it yet), so that while this
 * process holds it its temporary name is never taken for a stale one. */
static int link_and_rename(int fd, const char *dir, const char *path,
                           const rnnstate_save_options *o, bool *unsupported)
{
    (void)flock(fd, LOCK_EX | LOCK_NB);
    for (int attempt = 0; attempt < 64; attempt++) {
        char *tmp = temp_name_in(dir);
        if (!tmp)
            return ENOMEM;
        int e = link_unnamed(fd, tmp);
        if (!e && rename(tmp, path) != 0) {
            e = errno;
            unlink(tmp);
        }
        free(tmp);
        if (e != EEXIST) {
            *unsupported = e == ENOENT || e == EPERM; /* neither AT_EMPTY_PATH nor /proc */
            return e ? e : sync_directory(o, dir);
        }
    }
    return EEXIST;
}

/* Preferred route: an unnamed file (O_TMPFILE) in the target directory, which
 * disappears with the process until it is linked. A new output is linked
 * straight to the target (linkat() fails rather than replace anything); a
 * replaced one goes through link_and_rename(). */
static int write_via_unnamed_file(const char *path, emit_job *job, const target *t,
                                  bool *unsupported)
{
    *unsupported = false;
    char *dir = directory_of(path);
    int e = 0, fd = -1;
    if (!dir) {
        e = ENOMEM;
        goto done;
    }
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, t->replaced ? 0600 : 0666);
    if (fd < 0) {
        e = errno;
        *unsupported = e == EOPNOTSUPP || e == EISDIR || e == EINVAL;
        goto done;
    }
    if ((e = emit_to_fd(job, fd)) != 0 || (e = finish_file(job, fd, t)) != 0)
        goto done;
    if (!t->replaced) {
        if ((e = link_unnamed(fd, path)) == 0) {
            if ((e = sync_directory(job->options, dir)) != 0)
                unlink(path); /* a failed save leaves no new file */
            goto done;
        }
        if (e != EEXIST) {
            *unsupported = e == ENOENT || e == EPERM; /* neither AT_EMPTY_PATH nor /proc */
            goto done;
        }
        /* something was created at the target meanwhile: replace it */
    }
    e = link_and_rename(fd, dir, path, job->options, unsupported);
done:
    if (fd >= 0)
        close(fd);
    free(dir);
    return e;
}

/* Creates and locks a new temporary file in dir; *tmp gets its name. */
static int create_named_temp(const char *dir, const target *t, char **tmp, int *fd)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        if (!(*tmp = temp_name_in(dir)))
            return ENOMEM;
        *fd = open(*tmp, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
                   t->replaced ? 0600 : 0666);
        int e = *fd < 0 ? errno : 0;
        struct stat st;
        /* another run may take a file it finds unlocked for a stale one
         * before this one locks it: then start again */
        if (!e && flock(*fd, LOCK_EX | LOCK_NB) == 0 && fstat(*fd, &st) == 0 && st.st_nlink > 0)
            return 0;
        if (*fd >= 0)
            close(*fd);
        free(*tmp);
        *tmp = NULL;
        if (e && e != EEXIST)
            return e;
    }
    return EEXIST;
}

/* Fallback route (no O_TMPFILE): a named temporary file from the start,
 * removed on any failure, and after a request to stop. It stays locked
 * until it is renamed: a duplicate of its descriptor holds the lock (flock
 * locks belong to the open file, not the descriptor) across the close()
 * whose error tells of a failed write on NFS, so that no other run (in
 * another PID namespace, say) takes it for a stale file meanwhile. */
static int write_via_named_file(const char *path, emit_job *job, const target *t)
{
    char *dir = directory_of(path), *tmp = NULL;
    int fd = -1;
    int e = dir ? create_named_temp(dir, t, &tmp, &fd) : ENOMEM;
    if (e) {
        free(dir);
        return e;
    }
    e = emit_to_fd(job, fd);
    if (!e)
        e = finish_file(job, fd, t);
    int lock_fd = e ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (!e && lock_fd < 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (lock_fd >= 0)
        close(lock_fd);
    if (e)
        unlink(tmp);
    else if ((e = sync_directory(job->options, dir)) != 0 && !t->replaced)
        unlink(path); /* a failed save leaves no new file */
    free(tmp);
    free(dir);
    return e;
}

/* A device or FIFO (/dev/null, a named pipe) cannot be replaced by a
 * rename: it is written in place. Never through a symbolic link. */
static int write_to_special_file(const char *path, emit_job *job)
{
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : S_ISREG(st.st_mode) ? EAGAIN : emit_to_fd(job, fd);
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

static rnnstate_status write_error(const char *path, int e, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: %s", path, strerror(e));
}

/* Decides the route from what is at the target: a directory or a symbolic
 * link to anything but a regular file is refused, a device or FIFO written in
 * place, a regular file (or a link to one, replaced like mv does) replaced
 * keeping its mode, an absent target created. */
static rnnstate_status write_atomically(const char *path, emit_job *job, rnnstate_error *err)
{
    struct stat lst;
    target t = { .replaced = false };
    bool unsupported = false;
    int e;
    if (lstat(path, &lst) == 0) {
        bool symlink = S_ISLNK(lst.st_mode);
        bool resolves = symlink ? stat(path, &t.st) == 0 : (t.st = lst, true);
        if (resolves && S_ISDIR(t.st.st_mode))
            return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: is a directory", path);
        if (resolves && symlink && !S_ISREG(t.st.st_mode))
            return set_error(err, RNNSTATE_ERR_IO,
                             "%s: cannot write output: a symbolic link to a device, FIFO or "
                             "socket is not followed (name the device itself)",
                             path);
        if (resolves && !S_ISREG(t.st.st_mode)) {
            e = write_to_special_file(path, job);
            if (e != EAGAIN)
                goto written;
            /* replaced by a regular file meanwhile */
            if (stat(path, &t.st) != 0)
                return write_error(path, errno, err);
        }
        t.replaced = resolves;
    }
    e = write_via_unnamed_file(path, job, &t, &unsupported);
    if (unsupported)
        e = write_via_named_file(path, job, &t);
written:
    if (e < 0)
        return job->status;
    return e ? write_error(path, e, err) : RNNSTATE_OK;
}

rnnstate_status rnnstate_model_save_file(const rnnstate_model *model, const char *path,
                                         const rnnstate_save_options *options,
                                         rnnstate_error *err)
{
    rnnstate_save_options o;
    rnnstate_save_options_init(&o);
    rnnstate_status st = options_read(&o, sizeof o, options, "rnnstate_save_options", err);
    if (st != RNNSTATE_OK)
        return st;
    relocations r;
    st = relocate_external_data(model, path, &r, err);
    emit_job job = { .model = model, .proto = relocated_model(model, &r), .options = &o,
                     .path = path, .err = err, .status = RNNSTATE_OK };
    if (st == RNNSTATE_OK) /* after relocating: locations change sizes */
        st = check_before_writing(model, job.proto, &job.sizes, err);
    if (st == RNNSTATE_OK)
        st = write_atomically(path, &job, err);
    release_relocations(&r);
    return st;
}

rnnstate_status rnnstate_model_save_fd(const rnnstate_model *model, int fd, const char *label,
                                       rnnstate_error *err)
{
    rnnstate_save_options defaults;
    rnnstate_save_options_init(&defaults);
    emit_job job = { .model = model, .proto = model->proto, .options = &defaults, .path = label,
                     .err = err, .status = RNNSTATE_OK };
    rnnstate_status st = check_before_writing(model, job.proto, &job.sizes, err);
    if (st != RNNSTATE_OK)
        return st;
    int e = emit_to_fd(&job, fd);
    if (e < 0)
        return job.status;
    if (e)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write: %s", label, strerror(e));
    return RNNSTATE_OK;
}

/* ---- what killed runs left ------------------------------------------------- */

/* True when `name` is one of our temporary files' names: TEMP_PREFIX, a
 * process id, "-". */
static bool is_temp_name(const char *name)
{
    if (strncmp(name, TEMP_PREFIX, strlen(TEMP_PREFIX)) != 0)
        return false;
    char *end;
    long pid = strtol(name + strlen(TEMP_PREFIX), &end, 10);
    return pid > 0 && *end == '-';
}

/* A temporary file is stale when nothing holds its lock: a save locks its
 * file before it has a name and holds the lock until the file is renamed
 * (both routes). The process id in the name is not asked: a process in
 * another PID namespace (a container) may have a live save under an id
 * that is nobody here, and a run killed as a container's PID 1 leaves a
 * file whose id is always taken. */
size_t rnnstate_remove_stale_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_temp_name(e->d_name))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
            continue;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
        close(fd);
    }
    closedir(d);
    return removed;
}
