#define _GNU_SOURCE /* O_TMPFILE, linkat */
/* Loading and saving models.
 *
 * Loading reads the whole file into memory and unpacks it with protobuf-c,
 * which keeps fields it does not know (from ONNX versions newer than the
 * compiled schema) and writes them back when packing, so they survive a
 * round trip. Saving is atomic: the model goes to a temporary file in the
 * target directory, is flushed with fsync(), then renamed over the target. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "wire_scan.h"

void rnnstate_limits_init(rnnstate_limits *limits)
{
    limits->max_model_bytes = RNNSTATE_DEFAULT_MAX_MODEL_BYTES;
    limits->max_nesting = RNNSTATE_DEFAULT_MAX_NESTING;
}

static rnnstate_limits limits_or_defaults(const rnnstate_limits *limits)
{
    rnnstate_limits l;
    rnnstate_limits_init(&l);
    if (limits) {
        if (limits->max_model_bytes)
            l.max_model_bytes = limits->max_model_bytes;
        if (limits->max_nesting)
            l.max_nesting = limits->max_nesting;
    }
    return l;
}

static rnnstate_status too_large(const char *label, size_t limit, rnnstate_error *err)
{
    return set_error(err, RNNSTATE_ERR_INVALID,
                     "%s: larger than the limit of %zu bytes (see --max-model-size)", label, limit);
}

rnnstate_status set_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

/* Reads to end of file, refusing more than `limit` bytes before it has
 * allocated them (the size of a pipe is not known in advance). */
static rnnstate_status read_fd(int fd, const char *path, size_t limit, unsigned char **data,
                               size_t *size, rnnstate_error *err)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > limit)
        return too_large(path, limit, err);
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

rnnstate_status rnnstate_model_load_file(const char *path, const rnnstate_limits *limits,
                                         rnnstate_model **model, rnnstate_error *err)
{
    *model = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return set_error(err, RNNSTATE_ERR_IO, "%s: is a directory, not a model file", path);
    }
    rnnstate_status status = rnnstate_model_load_fd(fd, path, limits, model, err);
    close(fd);
    return status;
}

rnnstate_status rnnstate_model_load_fd(int fd, const char *label, const rnnstate_limits *limits,
                                       rnnstate_model **model, rnnstate_error *err)
{
    unsigned char *data = NULL;
    size_t size = 0;
    *model = NULL;
    rnnstate_limits l = limits_or_defaults(limits);
    rnnstate_status status = read_fd(fd, label, l.max_model_bytes, &data, &size, err);
    if (status != RNNSTATE_OK)
        return status;
    status = rnnstate_model_load_memory(data, size, label, &l, model, err);
    free(data);
    return status;
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

rnnstate_status rnnstate_model_load_memory(const void *data, size_t size, const char *label,
                                           const rnnstate_limits *limits, rnnstate_model **model,
                                           rnnstate_error *err)
{
    *model = NULL;
    if (!label)
        label = "<memory>";
    rnnstate_limits l = limits_or_defaults(limits);
    if (size == 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: empty file, not an ONNX model", label);
    if (size > l.max_model_bytes)
        return too_large(label, l.max_model_bytes, err);
    rnnstate_status scanned = wire_scan_model(data, size, l.max_nesting, label, err);
    if (scanned != RNNSTATE_OK)
        return scanned;
    Onnx__ModelProto *proto = onnx__model_proto__unpack(NULL, size, data);
    if (!proto)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL,
                         "%s: not an ONNX model: protobuf parsing failed (truncated or corrupt "
                         "file, or not a protobuf)",
                         label);
    rnnstate_status status = check_is_model(proto, label, err);
    rnnstate_model *m = NULL;
    if (status == RNNSTATE_OK) {
        m = malloc(sizeof *m);
        if (!m || !(m->label = strdup(label))) {
            free(m);
            m = NULL;
            status = set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", label);
        }
    }
    if (status != RNNSTATE_OK) {
        onnx__model_proto__free_unpacked(proto, NULL);
        return status;
    }
    m->proto = proto;
    *model = m;
    return RNNSTATE_OK;
}

void rnnstate_model_free(rnnstate_model *model)
{
    if (!model)
        return;
    onnx__model_proto__free_unpacked(model->proto, NULL);
    free(model->label);
    free(model);
}

void rnnstate_buffer_free(unsigned char *data)
{
    free(data);
}

rnnstate_status rnnstate_model_save_memory(const rnnstate_model *model, unsigned char **data,
                                           size_t *size, rnnstate_error *err)
{
    *data = NULL;
    *size = 0;
    size_t n = onnx__model_proto__get_packed_size(model->proto);
    if (n > RNNSTATE_DEFAULT_MAX_MODEL_BYTES)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: the rewritten model exceeds the 2 GiB protobuf limit", model->label);
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", model->label);
    if (onnx__model_proto__pack(model->proto, buf) != n) {
        free(buf);
        return set_error(err, RNNSTATE_ERR_INVALID, "%s: serialization failed", model->label);
    }
    *data = buf;
    *size = n;
    return RNNSTATE_OK;
}

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

/* The directory part of path ("." when there is none), malloc'd. */
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

static int write_and_sync(int fd, const unsigned char *data, size_t size)
{
    if (!write_all(fd, data, size) || fsync(fd) != 0)
        return errno ? errno : EIO;
    return 0;
}

/* Preferred route: an unnamed file (O_TMPFILE) in the target directory. If
 * the process dies before it is linked, nothing is left behind, whatever the
 * signal. It is given a temporary name only once complete, then renamed. */
static int write_via_unnamed_file(const char *path, const unsigned char *data, size_t size,
                                  bool *unsupported)
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
    if ((e = write_and_sync(fd, data, size)) != 0)
        goto done;
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    /* mktemp()'s race does not matter here: linkat() fails rather than
     * overwrite, and we then retry with a new name */
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

/* Fallback route: a named temporary file, removed on any failure. */
static int write_via_named_file(const char *path, const unsigned char *data, size_t size)
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
    int e = fchmod(fd, 0666 & ~mask) != 0 ? errno : write_and_sync(fd, data, size);
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e)
        unlink(tmp);
    free(tmp);
    return e;
}

/* A device or FIFO (/dev/null, /dev/stdout, a pipe) cannot be replaced by a
 * rename: it is written in place. */
static int write_to_special_file(const char *path, const unsigned char *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = write_all(fd, data, size) ? 0 : errno;
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

static rnnstate_status write_atomically(const char *path, const unsigned char *data, size_t size,
                                        rnnstate_error *err)
{
    struct stat st;
    int e;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: is a directory", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        e = write_to_special_file(path, data, size);
    } else {
        bool unsupported;
        e = write_via_unnamed_file(path, data, size, &unsupported);
        if (unsupported)
            e = write_via_named_file(path, data, size);
    }
    if (e)
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: %s", path, strerror(e));
    return RNNSTATE_OK;
}

rnnstate_status rnnstate_model_save_file(const rnnstate_model *model, const char *path,
                                         rnnstate_error *err)
{
    unsigned char *data;
    size_t size;
    rnnstate_status status = rnnstate_model_save_memory(model, &data, &size, err);
    if (status != RNNSTATE_OK)
        return status;
    status = write_atomically(path, data, size, err);
    free(data);
    return status;
}
