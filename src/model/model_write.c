#define _GNU_SOURCE /* sync_file_range */
/* Serializing models (model_write.h).
 *
 * The writer serializes the model with protobuf-c, except the lazy
 * initializers (lazy_scan.h), whose bytes it copies from the source file, so
 * that they never pass through memory: with copy_file_range() where the
 * source and destination offsets are congruent modulo the block size (the
 * file system can then share or copy whole blocks), else with pread() and
 * write() through a large buffer (copy_file_range() between misaligned
 * offsets is several times slower on ext4). Fields are written in
 * protobuf-c's order, lazy initializers or not (a lazy tensor's own bytes are
 * the input's); every field, known or not, survives. Files are
 * made atomically by atomic_file.c; external data locations are moved by
 * external_data.c. */
#include "model/model_write.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/fdio.h"
#include "model/wire.h"
#include "options.h"

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

/* A failure, or a request to stop (ECANCELED), is kept in s->error. */
static bool write_all(sink *s, const unsigned char *data, size_t size)
{
    if (write_in_full(s->fd, data, size, s->cancel) < 0) {
        s->error = errno;
        return false;
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
        ssize_t got = pread_in_full(s->src_fd, s->buf + s->len, want, offset, s->cancel);
        if (got < 0 && errno == ECANCELED)
            break; /* interrupted() says so */
        if (got < (ssize_t)want) {
            s->src_error = got < 0 ? errno : EIO; /* short: the file shrank */
            break;
        }
        s->len += want;
        offset += want;
        length -= want;
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
    uint64_t in = offset;
    if (length >= KERNEL_COPY_MIN && offsets_congruent(s, offset) && !sink_flush(s))
        return false;
    while (length >= KERNEL_COPY_MIN && offsets_congruent(s, in) && !interrupted(s)) {
        size_t step = length > COPY_STEP ? (size_t)COPY_STEP : (size_t)length;
        ssize_t n = copy_range_some(s->src_fd, &in, s->fd, step, s->cancel);
        if (n <= 0)
            break; /* EOF, not supported here (pread says which), or asked to stop */
        length -= (uint64_t)n;
        s->written += (uint64_t)n;
        start_writeback(s);
    }
    if (interrupted(s))
        return false;
    return length == 0 || copy_by_reading(s, in, length);
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

/* A varint straight into the sink: once per packed initializer of a model
 * with lazy ones (a strbuf here cost a malloc() each). */
static bool sink_varint(sink *s, uint64_t v)
{
    unsigned char bytes[10];
    size_t n = 0;
    while (v >= 0x80) {
        bytes[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    bytes[n++] = (unsigned char)v;
    return sink_write(s, bytes, n);
}

/* Room for `want` bytes at the end of the buffer (a file sink's buffer is
 * flushed to make it). */
static bool sink_reserve(sink *s, size_t want)
{
    if (!sink_room(s, want))
        return false;
    return s->cap - s->len >= want || sink_flush(s);
}

/* The packer writes straight into the sink's buffer (pb_pack.h): [pos, end)
 * is the buffer's free room, handed back to the sink at each call. */
typedef struct sink_out {
    pb_out out;
    sink *s;
} sink_out;

static void out_sync(sink_out *o)
{
    o->s->len = (size_t)(o->out.pos - o->s->buf);
}

static void out_reload(sink_out *o)
{
    o->out.pos = o->s->buf + o->s->len;
    o->out.end = o->s->buf + o->s->cap;
}

static bool out_room(pb_out *out, size_t want)
{
    sink_out *o = (sink_out *)out;
    out_sync(o);
    bool ok = sink_reserve(o->s, want);
    out_reload(o);
    return ok;
}

static bool out_write(pb_out *out, const void *data, size_t size)
{
    sink_out *o = (sink_out *)out;
    out_sync(o);
    bool ok = sink_write(o->s, data, size);
    out_reload(o);
    return ok;
}

/* Packs message m's fields (its size, recorded at sizes->next, was written
 * by the caller, or is the whole output's). */
static bool sink_message(sink *s, pb_sizes *sizes, const ProtobufCMessage *m)
{
    if (interrupted(s) || !sink_reserve(s, PB_OUT_ROOM))
        return false;
    sink_out o = { .out = { .room = out_room, .write = out_write }, .s = s };
    out_reload(&o);
    bool ok = pb_pack(&o.out, sizes, m);
    out_sync(&o);
    return ok;
}

/* The graph's initializers are lazy or packed; a run of packed ones is
 * packed as the initializer field of a shallow copy of the graph holding
 * that run only (its bytes are the run's), in one call, as a model read
 * whole packs them. Returns the end of the packed run from `first`. */
static size_t packed_run_end(const rnnstate_model *m, const Onnx__GraphProto *g, size_t first)
{
    size_t end = first + 1;
    while (end < g->n_initializer && !model_lazy_tensor(m, g->initializer[end]))
        end++;
    return end;
}

static Onnx__GraphProto packed_run(const Onnx__GraphProto *g, size_t first, size_t end)
{
    Onnx__GraphProto run = *g;
    run.initializer = g->initializer + first;
    run.n_initializer = end - first;
    return run;
}

/* The bytes the graph's initializers take inside it, tags included; the
 * packed runs' sizes are recorded. */
static uint64_t initializers_size(const rnnstate_model *m, const Onnx__GraphProto *g,
                                  unsigned field, pb_sizes *packed)
{
    uint64_t total = 0;
    for (size_t i = 0; i < g->n_initializer;) {
        const lazy_tensor *lt = model_lazy_tensor(m, g->initializer[i]);
        if (lt) {
            total += lt->length;
            i++;
            continue;
        }
        size_t end = packed_run_end(m, g, i);
        Onnx__GraphProto run = packed_run(g, i, end);
        total += pb_sizes_add_fields(packed, &run.base, field, field + 1);
        i = end;
    }
    return total;
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

/* Packs fields [first, end) of m (sized in the same range, at sizes->next). */
static bool sink_fields(sink *s, pb_sizes *sizes, const ProtobufCMessage *m, unsigned first,
                        unsigned end)
{
    if (interrupted(s) || !sink_reserve(s, PB_OUT_ROOM))
        return false;
    sink_out o = { .out = { .room = out_room, .write = out_write }, .s = s };
    out_reload(&o);
    bool ok = pb_pack_fields(&o.out, sizes, m, first, end);
    out_sync(&o);
    return ok;
}

/* Copies a lazy initializer's bytes, joined to the pending copy when they
 * follow it in the source file. */
static bool emit_lazy(sink *s, const lazy_tensor *lt, pending_copy *pending)
{
    if (pending->length && pending->offset + pending->length == lt->offset) {
        pending->length += lt->length;
        return true;
    }
    if (!flush_copy(s, pending))
        return false;
    *pending = (pending_copy){ lt->offset, lt->length };
    return true;
}

static bool emit_initializers(sink *s, pb_sizes *sizes, const rnnstate_model *m,
                              const Onnx__GraphProto *g, unsigned field)
{
    pending_copy pending = { 0, 0 };
    bool ok = true;
    for (size_t i = 0; ok && i < g->n_initializer;) {
        const lazy_tensor *lt = model_lazy_tensor(m, g->initializer[i]);
        if (lt) {
            ok = emit_lazy(s, lt, &pending);
            i++;
            continue;
        }
        size_t end = packed_run_end(m, g, i);
        Onnx__GraphProto run = packed_run(g, i, end);
        ok = flush_copy(s, &pending) && sink_fields(s, sizes, &run.base, field, field + 1);
        i = end;
    }
    return ok && flush_copy(s, &pending);
}

/* A model with lazy initializers is written in parts, in the order
 * protobuf-c packs a whole model (descriptor order, unknown fields last),
 * so that its bytes are those of the model read whole: the model's fields
 * before its graph; the graph's key and length; the graph's fields before
 * its initializers; the initializers one by one (lazy ones copied from the
 * source file, the others packed); the graph's fields after them; the
 * model's fields after its graph. The model itself is never touched
 * (several threads may save it at once). */
typedef struct split {
    unsigned graph;       /* the graph's field index in the model's descriptor */
    unsigned initializer; /* the initializers' in the graph's */
} split;

static split split_of(const Onnx__ModelProto *proto)
{
    return (split){ pb_field_index(proto->base.descriptor, ONNX_MODEL_GRAPH),
                    pb_field_index(proto->graph->base.descriptor, ONNX_GRAPH_INITIALIZER) };
}

/* The messages are sized in the order emit_model() packs them. */
static output_sizes output_size(const rnnstate_model *m, const Onnx__ModelProto *proto)
{
    output_sizes o = { 0, 0, PB_SIZES_INIT };
    if (!m->n_lazy) {
        o.total = pb_sizes_add(&o.packed, &proto->base);
        return o;
    }
    const Onnx__GraphProto *g = proto->graph;
    const ProtobufCMessage *model = &proto->base, *graph = &g->base;
    split at = split_of(proto);
    uint64_t before = pb_sizes_add_fields(&o.packed, model, 0, at.graph);
    o.graph = pb_sizes_add_fields(&o.packed, graph, 0, at.initializer);
    o.graph += initializers_size(m, g, at.initializer, &o.packed);
    o.graph += pb_sizes_add_fields(&o.packed, graph, at.initializer + 1, graph->descriptor->n_fields);
    uint64_t after = pb_sizes_add_fields(&o.packed, model, at.graph + 1, model->descriptor->n_fields);
    o.total = before + 1 + wire_varint_size(o.graph) + o.graph + after;
    return o;
}

static void emit_lazy_model(const rnnstate_model *m, const Onnx__ModelProto *proto, sink *s,
                            const output_sizes *sizes, pb_sizes *packed)
{
    const Onnx__GraphProto *g = proto->graph;
    const ProtobufCMessage *model = &proto->base, *graph = &g->base;
    split at = split_of(proto);
    unsigned char key = WIRE_KEY(ONNX_MODEL_GRAPH, WIRE_LEN);
    bool ok = sink_fields(s, packed, model, 0, at.graph) && sink_write(s, &key, 1) &&
              sink_varint(s, sizes->graph) && sink_fields(s, packed, graph, 0, at.initializer);
    ok = ok && emit_initializers(s, packed, m, g, at.initializer) &&
         sink_fields(s, packed, graph, at.initializer + 1, graph->descriptor->n_fields);
    if (ok)
        sink_fields(s, packed, model, at.graph + 1, model->descriptor->n_fields);
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

/* The output stays within protobuf's limit. */
rnnstate_status model_write_check(const rnnstate_model *m, const Onnx__ModelProto *proto,
                                  output_sizes *sizes, rnnstate_error *err)
{
    *sizes = output_size(m, proto);
    if (sizes->packed.oom)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    if (sizes->total > MAX_OUTPUT_BYTES)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: the rewritten model would take %llu bytes, more than protobuf's "
                         "limit of 2 GiB: nothing written",
                         m->label, (unsigned long long)sizes->total);
    return RNNSTATE_OK;
}

void model_write_sizes_free(output_sizes *sizes)
{
    pb_sizes_free(&sizes->packed);
}

/* Writes the model (checked by model_write_check()) into the sink. An
 * error reading the source is reported here, naming the model; the caller
 * reports s->error, naming the destination. */
static rnnstate_status emit_model(const rnnstate_model *m, const Onnx__ModelProto *proto,
                                  sink *s, const output_sizes *sizes, rnnstate_error *err)
{
    rnnstate_status st = check_source_unchanged(m, err);
    if (st != RNNSTATE_OK)
        return st;
    pb_sizes packed = sizes->packed; /* read from the first size on, the sizes shared */
    packed.next = 0;
    if (!m->n_lazy)
        sink_message(s, &packed, &proto->base);
    else
        emit_lazy_model(m, proto, s, sizes, &packed);
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

/* Packs the model into a block of memory sized for it. */
static rnnstate_status save_to_memory(const rnnstate_model *model, const output_sizes *sizes,
                                      unsigned char **data, size_t *size, rnnstate_error *err)
{
    sink s = { .fd = -1, .src_fd = model->source_fd };
    /* the whole output and the packer's room: the block never grows */
    s.cap = (size_t)sizes->total + PB_OUT_ROOM;
    if (!(s.buf = malloc(s.cap)))
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
    rnnstate_status st = emit_model(model, model->proto, &s, sizes, err);
    if (st != RNNSTATE_OK) {
        free(s.buf);
        return st;
    }
    *data = s.buf;
    *size = s.len;
    return RNNSTATE_OK;
}

rnnstate_status rnnstate_model_save_memory(const rnnstate_model *model, unsigned char **data,
                                           size_t *size, rnnstate_error *err)
{
    *data = NULL;
    *size = 0;
    output_sizes sizes;
    rnnstate_status st = model_write_check(model, model->proto, &sizes, err);
    if (st == RNNSTATE_OK)
        st = save_to_memory(model, &sizes, data, size, err);
    model_write_sizes_free(&sizes);
    return st;
}

int model_write_to_fd(model_write_job *job, int fd)
{
    sink s = file_sink(fd, job->model->source_fd, job->options);
    job->status = emit_model(job->model, job->proto, &s, &job->sizes, job->err);
    free(s.buf);
    if (job->status != RNNSTATE_OK)
        return -1;
    return s.error;
}

rnnstate_status rnnstate_model_save_fd(const rnnstate_model *model, int fd, const char *label,
                                       rnnstate_error *err)
{
    rnnstate_save_options defaults;
    rnnstate_save_options_init(&defaults);
    model_write_job job = { .model = model, .proto = model->proto, .options = &defaults,
                            .path = label, .err = err, .status = RNNSTATE_OK };
    rnnstate_status st = model_write_check(model, job.proto, &job.sizes, err);
    int e = st == RNNSTATE_OK ? model_write_to_fd(&job, fd) : 0;
    model_write_sizes_free(&job.sizes);
    if (st != RNNSTATE_OK)
        return st;
    if (e < 0)
        return job.status;
    if (e)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write: %s", label, strerror(e));
    return RNNSTATE_OK;
}


void rnnstate_buffer_free(unsigned char *data)
{
    free(data);
}
