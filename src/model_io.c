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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

/* protobuf's own limit on one message; a larger file cannot be a valid model
 * without external data. */
#define MAX_MODEL_BYTES ((size_t)2 << 30)

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

static rnnstate_status read_fd(int fd, const char *path, unsigned char **data, size_t *size,
                               rnnstate_error *err)
{
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", path);
    for (;;) {
        if (len == cap) {
            if (cap >= MAX_MODEL_BYTES) {
                free(buf);
                return set_error(err, RNNSTATE_ERR_INVALID,
                                 "%s: larger than the 2 GiB limit of a protobuf model", path);
            }
            unsigned char *grown = realloc(buf, cap * 2);
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

rnnstate_status rnnstate_model_load_file(const char *path, rnnstate_model **model,
                                         rnnstate_error *err)
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
    rnnstate_status status = rnnstate_model_load_fd(fd, path, model, err);
    close(fd);
    return status;
}

rnnstate_status rnnstate_model_load_fd(int fd, const char *label, rnnstate_model **model,
                                       rnnstate_error *err)
{
    unsigned char *data = NULL;
    size_t size = 0;
    *model = NULL;
    rnnstate_status status = read_fd(fd, label, &data, &size, err);
    if (status != RNNSTATE_OK)
        return status;
    status = rnnstate_model_load_memory(data, size, label, model, err);
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
                                           rnnstate_model **model, rnnstate_error *err)
{
    *model = NULL;
    if (!label)
        label = "<memory>";
    if (size == 0)
        return set_error(err, RNNSTATE_ERR_NOT_MODEL, "%s: empty file, not an ONNX model", label);
    if (size > MAX_MODEL_BYTES)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: larger than the 2 GiB limit of a protobuf model", label);
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
    if (n > MAX_MODEL_BYTES)
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
        if (put <= 0)
            return false;
        data += put;
        size -= (size_t)put;
    }
    return true;
}

/* The temporary file lives beside the target so that rename() stays within
 * one file system and is atomic. */
static char *temp_path_for(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    const char *dir = dirname(copy);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t need = strlen(dir) + strlen(base) + 32;
    char *tmp = malloc(need);
    if (tmp)
        snprintf(tmp, need, "%s/.%s.tmp-XXXXXX", dir, base);
    free(copy);
    return tmp;
}

static rnnstate_status write_atomically(const char *path, const unsigned char *data, size_t size,
                                        rnnstate_error *err)
{
    char *tmp = temp_path_for(path);
    if (!tmp)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rnnstate_status s = set_error(err, RNNSTATE_ERR_IO, "%s: cannot create output: %s", path,
                                      strerror(errno));
        free(tmp);
        return s;
    }
    /* mkstemp() creates 0600; give the result the mode a new file would get. */
    mode_t mask = umask(0);
    umask(mask);
    int e = 0;
    if (fchmod(fd, 0666 & ~mask) != 0 || !write_all(fd, data, size) || fsync(fd) != 0)
        e = errno ? errno : EIO;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e) {
        unlink(tmp);
        free(tmp);
        return set_error(err, RNNSTATE_ERR_IO, "%s: cannot write output: %s", path, strerror(e));
    }
    free(tmp);
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
