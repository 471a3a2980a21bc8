#define _GNU_SOURCE /* realpath, flock */
/* External data files copied or linked beside the output
 * (external_files.h). */
#include "model/external_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/atomic_file.h"
#include "model/external_data.h"
#include "model/fdio.h"
#include "model/onnx_build.h"
#include "util/array.h"
#include "util/strmap.h"
#include "util/path.h"

/* One save's placing of files. */
typedef struct placing {
    const rnnstate_model *m;
    const rnnstate_save_options *o;
    char *out_dir;      /* the output's directory, as `path` names it */
    strmap seen;        /* locations handled */
    placed_files *placed;
    rnnstate_error *err;
    rnnstate_status status;
} placing;

static bool fail_nomem(placing *p)
{
    p->status = set_error(p->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", p->m->label);
    return false;
}

/* Records a file or directory made (takes `path`); false when out of memory
 * (the thing made is removed then: nothing made is left unrecorded). */
static bool record(placing *p, char *path, bool is_dir)
{
    placed_files *pf = p->placed;
    char **paths = path ? owned_array_grow(pf->paths, pf->n, sizeof *paths) : NULL;
    if (paths)
        pf->paths = paths;
    bool *dirs = paths ? owned_array_grow(pf->is_dir, pf->n, sizeof *dirs) : NULL;
    if (!dirs) {
        if (path)
            is_dir ? rmdir(path) : unlink(path);
        free(path);
        return fail_nomem(p);
    }
    pf->is_dir = dirs;
    pf->paths[pf->n] = path;
    pf->is_dir[pf->n++] = is_dir;
    return true;
}

/* True when `location` has a ".." component: it leaves the model's
 * directory, and no place beside the output corresponds to it. */
static bool leaves_directory(const char *location)
{
    for (const char *c = location; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.')
            return true;
        c += len;
        c += strspn(c, "/");
    }
    return false;
}

/* True when src_path, symbolic links resolved, lies in the model's
 * directory: a link planted there must not make the save copy a file from
 * elsewhere (ONNX Runtime refuses such files too). */
static bool inside_model_directory(placing *p, const char *src_path, const char *location,
                                   const Onnx__TensorProto *t)
{
    char dir[PATH_MAX], file[PATH_MAX];
    if (!realpath(p->m->source_dir, dir) || !realpath(src_path, file)) {
        p->status = set_error(p->err, RNNSTATE_ERR_IO, "%s: cannot resolve external data file '%s': %s",
                              p->m->label, location, strerror(errno));
        return false;
    }
    size_t n = strlen(dir);
    if (!strncmp(file, dir, n) && (file[n] == '/' || (n == 1 && dir[0] == '/')))
        return true;
    p->status = set_error(p->err, RNNSTATE_ERR_INVALID,
                          "%s: tensor '%s' is stored in external file '%s', a symbolic link to "
                          "'%s' outside the model's directory: refused (ONNX Runtime reads no "
                          "file there)",
                          p->m->label, str_or_empty(t->name), location, file);
    return false;
}

/* The directories between the output's directory and `dest` (a file below
 * it), made where missing and recorded. */
static bool make_dirs_for(placing *p, char *dest)
{
    size_t base = strlen(p->out_dir);
    for (char *slash = strchr(dest + base + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        bool made = mkdir(dest, 0777) == 0;
        int e = errno;
        char *copy = made ? strdup(dest) : NULL;
        *slash = '/';
        if (made && !record(p, copy, true))
            return false;
        if (!made && e != EEXIST) {
            p->status = set_error(p->err, RNNSTATE_ERR_IO, "%s: cannot make the directory of '%s': %s",
                                  p->m->label, dest, strerror(e));
            return false;
        }
    }
    return true;
}

/* True when the files open at a and b hold the same bytes (b is `size` bytes long, like a). */
static bool same_bytes(int a, int b, off_t size, fdio_cancel cancel)
{
    enum { STEP = 1 << 16 };
    char *x = malloc(STEP), *y = malloc(STEP);
    bool same = x && y;
    if (!same)
        oom_note(); /* "not the same" would refuse a correct save: the save fails instead */
    for (off_t at = 0; same && at < size; at += STEP) {
        size_t n = size - at < STEP ? (size_t)(size - at) : STEP;
        same = pread_in_full(a, x, n, (uint64_t)at, cancel) == (ssize_t)n &&
               pread_in_full(b, y, n, (uint64_t)at, cancel) == (ssize_t)n && !memcmp(x, y, n);
    }
    free(x);
    free(y);
    return same;
}

/* What is at `dest` already: 1 when it is the source file or a copy of it
 * (nothing to do), 0 when nothing is there, -1 on a refusal (p->status). */
static int already_there(placing *p, int src, const struct stat *sst, const char *dest,
                         const char *location)
{
    struct stat dst;
    if (stat(dest, &dst) != 0) {
        if (errno == ENOENT)
            return 0;
        p->status = set_error(p->err, RNNSTATE_ERR_IO, "%s: cannot look at '%s': %s",
                              p->m->label, dest, strerror(errno));
        return -1;
    }
    if (dst.st_dev == sst->st_dev && dst.st_ino == sst->st_ino)
        return 1;
    int fd = S_ISREG(dst.st_mode) && dst.st_size == sst->st_size
                 ? open(dest, O_RDONLY | O_CLOEXEC) : -1;
    bool same = fd >= 0 && same_bytes(src, fd, sst->st_size, p->o->cancel);
    if (fd >= 0)
        close(fd);
    if (oom_noted()) {
        fail_nomem(p);
        return -1;
    }
    if (same)
        return 1;
    p->status = set_error(p->err, RNNSTATE_ERR_IO,
                          "%s: '%s' is already there and is not a copy of external data file "
                          "'%s': remove it, or write the output elsewhere",
                          p->m->label, dest, location);
    return -1;
}

/* Copies the open file src to the new file out: copy_file_range() (which
 * may share blocks), else read() and write(). Returns 0 or an errno. */
static int copy_contents(int src, int out, fdio_cancel cancel)
{
    uint64_t in = 0;
    ssize_t n;
    while ((n = copy_range_some(src, &in, out, 1 << 30, cancel)) > 0) {
    }
    if (n == 0)
        return 0;
    if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return errno;
    enum { STEP = 1 << 20 };
    char *buf = malloc(STEP);
    if (!buf)
        return ENOMEM;
    int e = 0;
    while (!e && (n = pread_in_full(src, buf, STEP, in, cancel)) > 0) {
        in += (uint64_t)n;
        if (write_in_full(out, buf, (size_t)n, cancel) < 0)
            e = errno;
    }
    if (!e && n < 0)
        e = errno;
    free(buf);
    return e;
}

/* A copy of src at dest: written under a temporary name in dest's directory
 * (locked, so that rnnstate_remove_stale_temp_files() leaves it alone while
 * it is written), then linked to dest, which never replaces anything.
 * Returns 0 or an errno. */
static int copy_file(int src, const char *dest, const rnnstate_save_options *o)
{
    char *dir = directory_of(dest);
    char *tmp = dir ? temp_name_in(dir) : NULL;
    free(dir);
    if (!tmp)
        return ENOMEM;
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    int e = out < 0 ? errno : 0;
    if (!e) {
        (void)flock(out, LOCK_EX | LOCK_NB);
        e = copy_contents(src, out, o->cancel);
        if (!e && o->sync && fsync(out) != 0)
            e = errno;
        if (!e && o->cancel && *o->cancel)
            e = ECANCELED;
        if (!e && link(tmp, dest) != 0)
            e = errno;
        unlink(tmp);
        close(out);
    }
    free(tmp);
    return e;
}

/* Puts the file open at src at dest, as the mode says: a hard link where
 * asked and possible, else a copy. Returns 0 or an errno. */
static int put_file(placing *p, int src, const char *src_path, const char *dest)
{
    if (p->o->external_data == RNNSTATE_EXTERNAL_DATA_LINK) {
        if (link(src_path, dest) == 0)
            return 0;
        if (errno != EXDEV && errno != EPERM && errno != EMLINK && errno != EOPNOTSUPP)
            return errno;
    }
    return copy_file(src, dest, p->o);
}

/* Places one external file (location, first seen on tensor t). */
static bool place_one(placing *p, const char *location, const Onnx__TensorProto *t)
{
    if (leaves_directory(location)) {
        p->status = set_error(p->err, RNNSTATE_ERR_INVALID,
                              "%s: tensor '%s' is stored in external file '%s', outside the "
                              "model's directory: it cannot be placed beside the output "
                              "(--external-data=reference points at it instead)",
                              p->m->label, str_or_empty(t->name), location);
        return false;
    }
    char *src_path = path_join(p->m->source_dir, location);
    char *dest = path_join(p->out_dir, location);
    int src = src_path ? open(src_path, O_RDONLY | O_CLOEXEC) : -1;
    struct stat sst;
    bool ok = src_path && dest;
    if (!ok)
        fail_nomem(p);
    else if (src < 0 || fstat(src, &sst) != 0) {
        p->status = set_error(p->err, RNNSTATE_ERR_IO,
                              "%s: external data file '%s' of tensor '%s' cannot be %s (%s)",
                              p->m->label, location, str_or_empty(t->name),
                              errno == ENOENT ? "found" : "read", strerror(errno));
        ok = false;
    } else
        ok = inside_model_directory(p, src_path, location, t);
    int there = ok ? already_there(p, src, &sst, dest, location) : -1;
    ok = there == 1 || (there == 0 && make_dirs_for(p, dest));
    int e = ok && there == 0 ? put_file(p, src, src_path, dest) : 0;
    if (e)
        p->status = e == ENOMEM ? set_error(p->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", p->m->label)
                                : set_error(p->err, RNNSTATE_ERR_IO,
                                            "%s: cannot copy external data file '%s' to '%s': %s",
                                            p->m->label, location, dest, strerror(e));
    if (ok && !e && there == 0) {
        ok = record(p, dest, false);
        dest = NULL;
    }
    if (src >= 0)
        close(src);
    free(src_path);
    free(dest);
    return ok && !e;
}

static bool visit_location(const char *location, const Onnx__TensorProto *t, void *arg)
{
    placing *p = arg;
    if (location[0] == '/') /* absolute: found from anywhere */
        return true;
    if (strmap_get(&p->seen, location) >= 0)
        return true;
    if (!strmap_put(&p->seen, location, 1))
        return fail_nomem(p);
    return place_one(p, location, t);
}

/* True when the output's directory needs the files: it is there (else the
 * save fails on its own, with its own message) and it is not the model's. */
static bool needs_files(const char *source_dir, const char *out_dir)
{
    char a[PATH_MAX], b[PATH_MAX];
    return realpath(out_dir, b) && !(realpath(source_dir, a) && !strcmp(a, b));
}

rnnstate_status place_external_files(const rnnstate_model *m, const char *path,
                                     const rnnstate_save_options *o, placed_files *placed,
                                     rnnstate_error *err)
{
    memset(placed, 0, sizeof *placed);
    bool external;
    rnnstate_status st = find_external_data(m, &external, err);
    if (st != RNNSTATE_OK || !external)
        return st;
    placing p = { .m = m, .o = o, .placed = placed, .err = err, .status = RNNSTATE_OK,
                  .seen = STRMAP_INIT };
    if (!(p.out_dir = directory_of(path)))
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    if (needs_files(m->source_dir, p.out_dir))
        visit_external_locations(m->proto->graph, visit_location, &p);
    strmap_free(&p.seen);
    free(p.out_dir);
    return p.status;
}

void unplace_external_files(placed_files *placed)
{
    for (size_t i = placed->n; i-- > 0;)
        placed->is_dir[i] ? rmdir(placed->paths[i]) : unlink(placed->paths[i]);
}

void release_placed_files(placed_files *placed)
{
    for (size_t i = 0; i < placed->n; i++)
        free(placed->paths[i]);
    free(placed->paths);
    free(placed->is_dir);
    memset(placed, 0, sizeof *placed);
}
