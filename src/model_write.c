#define _GNU_SOURCE /* O_TMPFILE, linkat, copy_file_range */
/* Saving models.
 *
 * The writer serializes the model with protobuf-c, except the lazy
 * initializers (lazy_scan.h), whose bytes it copies from the source file with
 * copy_file_range(), so that they never pass through memory. Field order in
 * the output may differ from the input; every field, known or not, survives.
 *
 * Saving to a file is atomic: the model is written to an unnamed file
 * (O_TMPFILE) in the target directory, flushed with fsync(), then linked
 * under a temporary name and renamed over the target. A process killed on
 * the way leaves nothing behind. Where O_TMPFILE is not supported, a named
 * temporary file is used and removed on failure. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "wire.h"
#include "model.h"
#include "options.h"
#include "onnx_build.h"

#define FIELD_GRAPH_KEY ((7 << 3) | 2)       /* ModelProto.graph */
#define FIELD_INITIALIZER_KEY ((5 << 3) | 2) /* GraphProto.initializer */
#define MAX_PROTOBUF_BYTES ((uint64_t)2 << 30)

/* ---- where the bytes go -------------------------------------------------- */

typedef struct sink {
    int fd;             /* a file, or -1 for memory */
    bool start_writeback; /* the file will be fsync()ed: start writing it out early */
    uint64_t written;   /* bytes put in the file so far */
    uint64_t flushed;   /* bytes handed to writeback so far */
    unsigned char *buf; /* memory */
    size_t len, cap;
    int src_fd;         /* the lazy tensors' file */
    const sigset_t *abort_on; /* blocked signals that, once pending, end the write */
    int error;          /* errno of the first failure */
} sink;

/* A blocked termination signal arrived: give up (EINTR), so the caller can
 * remove its temporary file before the signal takes effect. */
static bool interrupted(sink *s)
{
    sigset_t pending;
    if (!s->abort_on || s->error || sigpending(&pending) != 0)
        return s->error != 0;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(s->abort_on, sig) == 1 && sigismember(&pending, sig) == 1)
            s->error = EINTR;
    return s->error != 0;
}

/* Copies are made in steps of this size, so that a signal is noticed soon. */
#define COPY_STEP ((uint64_t)64 << 20)

static bool write_all(int fd, const unsigned char *data, size_t size)
{
    while (size > 0) {
        ssize_t put = write(fd, data, size);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            if (put == 0)
                errno = EIO;
            return false;
        }
        data += put;
        size -= (size_t)put;
    }
    return true;
}

/* Hands what was written so far to the kernel's writeback in large steps,
 * so that the disk works while the copy goes on and the final fsync() has
 * little left to do. A hint only: failures are ignored (fsync reports). */
static void start_writeback(sink *s)
{
    if (!s->start_writeback || s->written - s->flushed < ((uint64_t)64 << 20))
        return;
    sync_file_range(s->fd, (off64_t)s->flushed, (off64_t)(s->written - s->flushed),
                    SYNC_FILE_RANGE_WRITE);
    s->flushed = s->written;
}

static bool sink_write(sink *s, const void *data, size_t size)
{
    if (interrupted(s))
        return false;
    if (s->fd >= 0) {
        if (!write_all(s->fd, data, size))
            s->error = errno;
        s->written += size;
        start_writeback(s);
        return !s->error;
    }
    if (s->len + size > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + size)
            cap *= 2;
        unsigned char *grown = realloc(s->buf, cap);
        if (!grown) {
            s->error = ENOMEM;
            return false;
        }
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, size);
    s->len += size;
    return true;
}

/* Copies [offset, offset + length) of the source file with read/write. */
static bool copy_by_reading(sink *s, uint64_t offset, uint64_t length)
{
    unsigned char *chunk = malloc(1 << 20);
    if (!chunk) {
        s->error = ENOMEM;
        return false;
    }
    while (length > 0 && !s->error) {
        size_t want = length < (1 << 20) ? (size_t)length : (1 << 20);
        ssize_t got = pread(s->src_fd, chunk, want, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            s->error = got < 0 ? errno : EIO;
        else if (sink_write(s, chunk, (size_t)got)) {
            offset += (uint64_t)got;
            length -= (uint64_t)got;
        }
    }
    free(chunk);
    return !s->error;
}

/* Copies a lazy tensor's bytes file to file in the kernel where it can. */
static bool sink_copy(sink *s, uint64_t offset, uint64_t length)
{
    if (interrupted(s))
        return false;
    loff_t in = (loff_t)offset;
    while (s->fd >= 0 && length > 0 && !interrupted(s)) {
        uint64_t step = s->abort_on && length > COPY_STEP ? COPY_STEP : length;
        ssize_t n = copy_file_range(s->src_fd, &in, s->fd, NULL, step, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* not supported here (another file system, a pipe...): fall back */
        length -= (uint64_t)n;
        s->written += (uint64_t)n;
        start_writeback(s);
    }
    while (s->fd >= 0 && length > 0 && !interrupted(s)) {
        off_t at = (off_t)in;
        uint64_t step = s->abort_on && length > COPY_STEP ? COPY_STEP : length;
        ssize_t n = sendfile(s->fd, s->src_fd, &at, step);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        in = at;
        length -= (uint64_t)n;
        s->written += (uint64_t)n;
        start_writeback(s);
    }
    if (s->error)
        return false;
    return length == 0 || copy_by_reading(s, (uint64_t)in, length);
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

static bool sink_message(sink *s, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) {
        s->error = ENOMEM;
        return false;
    }
    protobuf_c_message_pack(m, buf);
    bool ok = sink_write(s, buf, n);
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
    return sink_write(s, &key, 1) && sink_varint(s, onnx__tensor_proto__get_packed_size(t)) &&
           sink_message(s, &t->base);
}

/* The model with the main graph's initializers written one by one: lazy
 * ones copied from the source file, the others packed. The graph's other
 * fields come first, then its initializers, then nothing: protobuf allows
 * any field order, and merges nothing here (each field appears once). */
static rnnstate_status emit_model(const rnnstate_model *m, const Onnx__ModelProto *proto, sink *s,
                                  rnnstate_error *err)
{
    const Onnx__GraphProto *g = proto->graph;
    if (!m->n_lazy) {
        sink_message(s, &proto->base);
    } else {
        Onnx__TensorProto **inits = g->initializer;
        size_t n_inits = g->n_initializer;
        uint64_t graph_size = 0;
        for (size_t i = 0; i < n_inits; i++)
            graph_size += initializer_field_size(m, inits[i]);
        /* shallow copies without the graph and its initializers are packed:
         * the model itself is not touched (it may be saved from several
         * threads at once) */
        Onnx__GraphProto bare_graph = *g;
        bare_graph.initializer = NULL;
        bare_graph.n_initializer = 0;
        Onnx__ModelProto bare_model = *proto;
        bare_model.graph = NULL;
        graph_size += onnx__graph_proto__get_packed_size(&bare_graph);
        unsigned char key = FIELD_GRAPH_KEY;
        bool ok = graph_size <= MAX_PROTOBUF_BYTES && sink_message(s, &bare_model.base) &&
                  sink_write(s, &key, 1) && sink_varint(s, graph_size) &&
                  sink_message(s, &bare_graph.base);
        if (graph_size > MAX_PROTOBUF_BYTES)
            return set_error(err, RNNSTATE_ERR_INVALID,
                             "%s: the rewritten model exceeds the 2 GiB protobuf limit", m->label);
        pending_copy pending = { 0, 0 };
        for (size_t i = 0; ok && i < n_inits; i++)
            ok = emit_initializer(s, m, inits[i], &pending);
        if (ok)
            flush_copy(s, &pending);
    }
    if (s->error == ENOMEM)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    return RNNSTATE_OK; /* I/O errors are the caller's to report, with the path */
}

rnnstate_status rnnstate_model_save_memory(const rnnstate_model *model, unsigned char **data,
                                           size_t *size, rnnstate_error *err)
{
    *data = NULL;
    *size = 0;
    sink s = { .fd = -1, .src_fd = model->source_fd };
    rnnstate_status st = emit_model(model, model->proto, &s, err);
    if (st == RNNSTATE_OK && s.error)
        st = set_error(err, RNNSTATE_ERR_IO, "%s: cannot read the source file: %s", model->label,
                       strerror(s.error));
    if (st != RNNSTATE_OK) {
        free(s.buf);
        return st;
    }
    *data = s.buf ? s.buf : malloc(1);
    *size = s.len;
    return *data ? RNNSTATE_OK : set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
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

static Onnx__GraphProto *relocated_graph(relocations *r, const Onnx__GraphProto *g);

static Onnx__AttributeProto *relocated_attribute(relocations *r, const Onnx__AttributeProto *a)
{
    Onnx__TensorProto *t = a->t ? relocated_tensor(r, a->t) : NULL;
    Onnx__GraphProto *g = a->g ? relocated_graph(r, a->g) : NULL;
    Onnx__GraphProto **graphs = NULL;
    for (size_t k = 0; r->status == RNNSTATE_OK && k < a->n_graphs; k++) {
        Onnx__GraphProto *sub = relocated_graph(r, a->graphs[k]);
        if (sub && (graphs || (graphs = keep_copy(r, a->graphs, a->n_graphs * sizeof *graphs))))
            graphs[k] = sub;
    }
    if (r->status != RNNSTATE_OK || (!t && !g && !graphs))
        return NULL;
    Onnx__AttributeProto *copy = keep_copy(r, a, sizeof *a);
    if (copy) {
        copy->t = t ? t : a->t;
        copy->g = g ? g : a->g;
        copy->graphs = graphs ? graphs : a->graphs;
    }
    return copy;
}

static Onnx__NodeProto *relocated_node(relocations *r, const Onnx__NodeProto *node)
{
    Onnx__AttributeProto **attrs = NULL;
    for (size_t a = 0; r->status == RNNSTATE_OK && a < node->n_attribute; a++) {
        Onnx__AttributeProto *attr = relocated_attribute(r, node->attribute[a]);
        if (attr && (attrs || (attrs = keep_copy(r, node->attribute,
                                                 node->n_attribute * sizeof *attrs))))
            attrs[a] = attr;
    }
    if (r->status != RNNSTATE_OK || !attrs)
        return NULL;
    Onnx__NodeProto *copy = keep_copy(r, node, sizeof *node);
    if (copy)
        copy->attribute = attrs;
    return copy;
}

static Onnx__GraphProto *relocated_graph(relocations *r, const Onnx__GraphProto *g)
{
    Onnx__TensorProto **inits = NULL;
    for (size_t i = 0; r->status == RNNSTATE_OK && i < g->n_initializer; i++) {
        Onnx__TensorProto *t = relocated_tensor(r, g->initializer[i]);
        if (t && (inits || (inits = keep_copy(r, g->initializer,
                                              g->n_initializer * sizeof *inits))))
            inits[i] = t;
    }
    Onnx__NodeProto **nodes = NULL;
    for (size_t n = 0; r->status == RNNSTATE_OK && n < g->n_node; n++) {
        Onnx__NodeProto *node = relocated_node(r, g->node[n]);
        if (node && (nodes || (nodes = keep_copy(r, g->node, g->n_node * sizeof *nodes))))
            nodes[n] = node;
    }
    if (r->status != RNNSTATE_OK || (!inits && !nodes))
        return NULL;
    Onnx__GraphProto *copy = keep_copy(r, g, sizeof *g);
    if (copy) {
        copy->initializer = inits ? inits : g->initializer;
        copy->node = nodes ? nodes : g->node;
    }
    return copy;
}

static const char *external_location(const Onnx__TensorProto *t)
{
    if (!t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return NULL;
    for (size_t i = 0; i < t->n_external_data; i++)
        if (!strcmp(str_or_empty(t->external_data[i]->key), "location"))
            return str_or_empty(t->external_data[i]->value);
    return NULL;
}

/* The location of the first tensor stored outside the model, or NULL. */
static const char *first_external_location(const Onnx__GraphProto *g)
{
    const char *found = NULL;
    for (size_t i = 0; !found && i < g->n_initializer; i++)
        found = external_location(g->initializer[i]);
    for (size_t n = 0; !found && n < g->n_node; n++)
        for (size_t a = 0; !found && a < g->node[n]->n_attribute; a++) {
            const Onnx__AttributeProto *attr = g->node[n]->attribute[a];
            found = attr->t ? external_location(attr->t) : NULL;
            if (!found && attr->g)
                found = first_external_location(attr->g);
            for (size_t k = 0; !found && k < attr->n_graphs; k++)
                found = first_external_location(attr->graphs[k]);
        }
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
    char *copy = strdup(path);
    char resolved[PATH_MAX];
    if (!copy)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    bool found = realpath(dirname(copy), resolved) != NULL;
    free(copy);
    char source[PATH_MAX];
    if (!m->source_dir) {
        const char *location = first_external_location(m->proto->graph);
        if (location)
            return set_error(err, RNNSTATE_ERR_INVALID,
                             "%s: initializers are stored in external files ('%s') whose location "
                             "is relative to the model's directory, which is unknown here: give "
                             "the model's path instead",
                             m->label, location);
        return RNNSTATE_OK;
    }
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

static char *directory_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    char *dir = strdup(dirname(copy));
    free(copy);
    return dir;
}

/* A name for the temporary file beside the target, so that rename() stays
 * within one file system and is atomic. */
static char *temp_name_for(const char *path)
{
    char *dir = directory_of(path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t need = (dir ? strlen(dir) : 0) + strlen(base) + 32;
    char *tmp = dir ? malloc(need) : NULL;
    if (tmp)
        snprintf(tmp, need, "%s/.%s.tmp-XXXXXX", dir, base);
    free(dir);
    return tmp;
}

typedef struct emit_job {
    const rnnstate_model *model;
    const Onnx__ModelProto *proto; /* the model's, or its relocated copy */
    bool sync;
    const sigset_t *abort_on;
    rnnstate_error *err;
    rnnstate_status status; /* a failure that is not an errno (out of memory, too large) */
} emit_job;

/* Writes the model to fd; returns an errno, or -1 for a non-I/O failure. */
static int emit_to_fd(emit_job *job, int fd, bool sync)
{
    sink s = { .fd = fd, .src_fd = job->model->source_fd, .start_writeback = sync && job->sync,
               .abort_on = job->abort_on };
    job->status = emit_model(job->model, job->proto, &s, job->err);
    if (job->status != RNNSTATE_OK)
        return -1;
    if (s.error)
        return s.error;
    return sync && job->sync && fsync(fd) != 0 ? errno : 0;
}

/* Preferred route: an unnamed file (O_TMPFILE) in the target directory. If
 * the process dies before it is linked, nothing is left behind, whatever the
 * signal. It is given a temporary name only once complete, then renamed. */
static int write_via_unnamed_file(const char *path, emit_job *job, bool *unsupported)
{
    *unsupported = false;
    char *dir = directory_of(path), *tmp = temp_name_for(path);
    int e = 0, fd = -1;
    if (!dir || !tmp) {
        e = ENOMEM;
        goto done;
    }
    fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) {
        e = errno;
        *unsupported = e == EOPNOTSUPP || e == EISDIR || e == EINVAL;
        goto done;
    }
    if ((e = emit_to_fd(job, fd, true)) != 0)
        goto done;
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    /* a fresh name from mkstemp(), freed for linkat(), which fails rather
     * than overwrite if another process takes it meanwhile: then retry */
    for (int attempt = 0; attempt < 16; attempt++) {
        strcpy(tmp + strlen(tmp) - 6, "XXXXXX");
        int tfd = mkstemp(tmp);
        if (tfd < 0) {
            e = errno;
            goto done;
        }
        close(tfd);
        unlink(tmp);
        if (linkat(AT_FDCWD, proc_path, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
            e = 0;
            break;
        }
        e = errno;
        if (e != EEXIST) {
            *unsupported = e == ENOENT || e == EPERM; /* no /proc */
            goto done;
        }
    }
    if (!e && rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
    }
done:
    if (fd >= 0)
        close(fd);
    free(dir);
    free(tmp);
    return e;
}

static int write_named_file(const char *path, emit_job *job);

/* Fallback route: a named temporary file, removed on any failure. The
 * signals that end a process politely (Ctrl-C, kill, a closed terminal) are
 * held back meanwhile; one that arrives stops the write, the file is
 * removed, and then the signal takes effect, so it cannot leave the file
 * behind. (SIGKILL cannot be held; the O_TMPFILE route is immune to it.) */
static int write_via_named_file(const char *path, emit_job *job)
{
    sigset_t termination, previous;
    sigemptyset(&termination);
    sigaddset(&termination, SIGINT);
    sigaddset(&termination, SIGTERM);
    sigaddset(&termination, SIGHUP);
    sigaddset(&termination, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &termination, &previous);
    job->abort_on = &termination;
    int e = write_named_file(path, job);
    job->abort_on = NULL;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return e;
}

static int write_named_file(const char *path, emit_job *job)
{
    char *tmp = temp_name_for(path);
    if (!tmp)
        return ENOMEM;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return e;
    }
    /* mkstemp() creates 0600; give the result the mode a new file would get */
    mode_t mask = umask(0);
    umask(mask);
    int e = fchmod(fd, 0666 & ~mask) != 0 ? errno : emit_to_fd(job, fd, true);
    if (close(fd) != 0 && !e)
        e = errno;
    sink last_look = { .abort_on = job->abort_on };
    if (!e && interrupted(&last_look))
        e = EINTR;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e)
        unlink(tmp);
    free(tmp);
    return e;
}

/* A device or FIFO (/dev/null, /dev/stdout, a pipe) cannot be replaced by a
 * rename: it is written in place. */
static int write_to_special_file(const char *path, emit_job *job)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = emit_to_fd(job, fd, false);
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

static rnnstate_status write_atomically(const char *path, emit_job *job, rnnstate_error *err)
{
    struct stat st;
    int e;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: is a directory", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        e = write_to_special_file(path, job);
    } else {
        bool unsupported;
        e = write_via_unnamed_file(path, job, &unsupported);
        if (unsupported)
            e = write_via_named_file(path, job);
    }
    if (e < 0)
        return job->status;
    if (e)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: %s", path, strerror(e));
    return RNNSTATE_OK;
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
    if (st == RNNSTATE_OK) {
        emit_job job = { model, relocated_model(model, &r), !o.no_sync, NULL, err, RNNSTATE_OK };
        st = write_atomically(path, &job, err);
    }
    release_relocations(&r);
    return st;
}

rnnstate_status rnnstate_model_save_fd(const rnnstate_model *model, int fd, const char *label,
                                       rnnstate_error *err)
{
    emit_job job = { model, model->proto, false, NULL, err, RNNSTATE_OK };
    int e = emit_to_fd(&job, fd, false);
    if (e < 0)
        return job.status;
    if (e)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write: %s", label, strerror(e));
    return RNNSTATE_OK;
}
