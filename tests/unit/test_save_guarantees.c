/* The writer's and loader's guarantees, through the public API (and, where a
 * model too large to build is needed, the internal model.h):
 * - no save route writes a model over protobuf's 2 GiB limit, and none
 *   creates or changes a file when it refuses;
 * - a failed verification leaves nothing at the target and keeps the old file;
 * - limits past their documented maxima are refused with ERR_ARGUMENT;
 * - external data locations are relocated in sparse initializers, TENSOR and
 *   TENSORS attributes and subgraphs;
 * - the lazy weights are copied with copy_file_range() only when the offsets
 *   are congruent modulo the block size, and every copy route (and
 *   save_memory) writes the same bytes.
 * copy_file_range() is wrapped (-Wl,--wrap) to count calls or to fail. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"
#include "model/onnx_build.h"
#include "model_builder.h"

/* ---- copy_file_range, wrapped ------------------------------------------------ */

static int copy_calls;
static bool copy_fails;
ssize_t __real_copy_file_range(int, loff_t *, int, loff_t *, size_t, unsigned);
ssize_t __wrap_copy_file_range(int, loff_t *, int, loff_t *, size_t, unsigned);
ssize_t __wrap_copy_file_range(int in, loff_t *in_off, int out, loff_t *out_off, size_t n,
                               unsigned flags)
{
    copy_calls++;
    if (copy_fails) {
        errno = EXDEV;
        return -1;
    }
    return __real_copy_file_range(in, in_off, out, out_off, n, flags);
}

/* ---- process-wide state, watched ------------------------------------------------ */

/* open() is wrapped so that O_TMPFILE can be made to fail (the named-file
 * route); umask() and the signal mask calls to count them: the library
 * must change no process-wide state on any route. */
static bool no_tmpfile;
static int umask_calls, sigmask_calls;
int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    if (no_tmpfile && (flags & O_TMPFILE) == O_TMPFILE) {
        errno = EOPNOTSUPP;
        return -1;
    }
    return __real_open(path, flags, mode);
}
mode_t __real_umask(mode_t);
mode_t __wrap_umask(mode_t);
mode_t __wrap_umask(mode_t mask)
{
    umask_calls++;
    return __real_umask(mask);
}
int __real_pthread_sigmask(int, const sigset_t *, sigset_t *);
int __wrap_pthread_sigmask(int, const sigset_t *, sigset_t *);
int __wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigmask_calls += set != NULL;
    return __real_pthread_sigmask(how, set, old);
}
int __real_sigprocmask(int, const sigset_t *, sigset_t *);
int __wrap_sigprocmask(int, const sigset_t *, sigset_t *);
int __wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    sigmask_calls += set != NULL;
    return __real_sigprocmask(how, set, old);
}

/* ---- helpers ------------------------------------------------------------------ */

static void remove_tree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* A GRU whose W and R (hidden 128: 196 KiB each) stay in the file when loaded. */
static Onnx__ModelProto *gru_with_large_weights(void)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,128");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, 128, 128, 0.25);
    mb_recurrent(m, "GRU", "gru", 128, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,1,128");
    return m;
}

static rnnstate_model *load_file_ok(const char *path)
{
    rnnstate_model *model = NULL;
    rnnstate_error err;
    rnnstate_status st = rnnstate_model_load_file(path, NULL, &model, &err);
    if (st != RNNSTATE_OK)
        fail_msg("%s", err.message);
    return model;
}

static rnnstate_model *load_memory_ok(const void *data, size_t size)
{
    rnnstate_model *model = NULL;
    rnnstate_error err;
    if (rnnstate_model_load_memory(data, size, "m", NULL, &model, &err) != RNNSTATE_OK)
        fail_msg("%s", err.message);
    return model;
}

/* ---- 2 GiB ------------------------------------------------------------------------ */

static void assert_refused_as_too_large(rnnstate_status st, const rnnstate_error *err)
{
    assert_int_equal(st, RNNSTATE_ERR_INVALID);
    assert_non_null(strstr(err->message, "more than protobuf's limit of 2 GiB: nothing written"));
}

static void test_output_over_2_gib_is_refused_on_every_route_before_writing(void **state)
{
    (void)state;
    size_t size;
    Onnx__ModelProto *proto = mb_new(7, 14);
    mb_input(proto, "X", MB_FLOAT, "1");
    mb_output(proto, "X", MB_FLOAT, "1");
    unsigned char *bytes = mb_pack(proto, &size);
    mb_free(proto);
    rnnstate_model *model = load_memory_ok(bytes, size);
    /* a tensor that claims 2 GiB + 1 byte: only its size is ever looked at */
    static unsigned char few[16];
    float one = 1.0f;
    Onnx__TensorProto *big = mb_tensor_float("big", MB_DIMS(1), &one);
    ProtobufCBinaryData kept = big->raw_data;
    big->raw_data = (ProtobufCBinaryData){ ((size_t)2 << 30) + 1, few };
    Onnx__GraphProto *g = model->proto->graph;
    g->initializer = realloc(g->initializer, sizeof *g->initializer);
    assert_non_null(g->initializer);
    g->initializer[g->n_initializer++] = big;

    char *dir = mb_temp_dir(), *fresh = mb_path_in(dir, "new.onnx"), *old = mb_path_in(dir, "old.onnx");
    mb_write_file(old, "previous", 8);
    rnnstate_error err;
    assert_refused_as_too_large(rnnstate_model_save_file(model, fresh, NULL, &err), &err);
    assert_refused_as_too_large(rnnstate_model_save_file(model, old, NULL, &err), &err);
    size_t n;
    unsigned char *still = mb_read_file(old, &n);
    assert_memory_equal(still, "previous", 8);
    assert_int_equal(n, 8);
    free(still);
    assert_int_equal(entries(dir), 1); /* old.onnx: no new file, no temporary file */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_refused_as_too_large(rnnstate_model_save_fd(model, fds[1], "<pipe>", &err), &err);
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 0); /* nothing written */
    close(fds[0]);
    unsigned char *data = (unsigned char *)&err;
    assert_refused_as_too_large(rnnstate_model_save_memory(model, &data, &size, &err), &err);
    assert_null(data);

    big->raw_data = kept;
    rnnstate_model_free(model);
    free(bytes);
    remove_tree(dir);
    free(fresh);
    free(old);
    free(dir);
}

/* ---- verification before the rename -------------------------------------------- */

static rnnstate_status refuse(int fd, const char *path, void *arg, rnnstate_error *err)
{
    char head;
    *(int *)arg = pread(fd, &head, 1, 0) == 1; /* the complete file, readable */
    snprintf(err->message, sizeof err->message, "%s: check failed: refused", path);
    return err->status = RNNSTATE_ERR_INVALID;
}

static void test_failed_verification_leaves_nothing_and_keeps_the_old_file(void **state)
{
    (void)state;
    size_t size;
    Onnx__ModelProto *proto = gru_with_large_weights();
    unsigned char *bytes = mb_pack(proto, &size);
    mb_free(proto);
    char *dir = mb_temp_dir(), *in = mb_path_in(dir, "in.onnx"), *fresh = mb_path_in(dir, "new.onnx"),
         *old = mb_path_in(dir, "old.onnx");
    mb_write_file(in, bytes, size);
    mb_write_file(old, "previous", 8);
    rnnstate_model *model = load_file_ok(in);
    int readable = 0;
    rnnstate_save_options options;
    rnnstate_save_options_init(&options);
    options.verify = refuse;
    options.verify_arg = &readable;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_file(model, fresh, &options, &err), RNNSTATE_ERR_INVALID);
    assert_true(readable);
    assert_int_equal(rnnstate_model_save_file(model, old, &options, &err), RNNSTATE_ERR_INVALID);
    assert_string_equal(err.message + strlen(old), ": check failed: refused");
    size_t n;
    unsigned char *still = mb_read_file(old, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(still, "previous", 8);
    free(still);
    assert_int_equal(entries(dir), 2); /* in.onnx, old.onnx */
    rnnstate_model_free(model);
    free(bytes);
    remove_tree(dir);
    free(in);
    free(fresh);
    free(old);
    free(dir);
}

/* ---- limits ------------------------------------------------------------------------- */

static void assert_argument_refused(rnnstate_limits limits, const char *what)
{
    size_t size;
    Onnx__ModelProto *proto = gru_with_large_weights();
    unsigned char *bytes = mb_pack(proto, &size);
    mb_free(proto);
    rnnstate_model *model = (rnnstate_model *)&size;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_memory(bytes, size, "m", &limits, &model, &err),
                     RNNSTATE_ERR_ARGUMENT);
    assert_null(model);
    assert_non_null(strstr(err.message, what));
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[1]);
    assert_int_equal(rnnstate_model_load_fd(fds[0], "p", &limits, &model, &err),
                     RNNSTATE_ERR_ARGUMENT);
    close(fds[0]);
    assert_int_equal(rnnstate_model_load_file("/nonexistent", &limits, &model, &err),
                     RNNSTATE_ERR_ARGUMENT);
    free(bytes);
}

static void test_limits_past_their_maxima_are_refused(void **state)
{
    (void)state;
    rnnstate_limits l;
    rnnstate_limits_init(&l);
    l.max_nesting = SIZE_MAX; /* (max + 1) * size used to wrap to 0 */
    assert_argument_refused(l, "max_nesting 18446744073709551615 is more than the maximum of 1024");
    l.max_nesting = RNNSTATE_MAX_NESTING + 1;
    assert_argument_refused(l, "max_nesting");
    rnnstate_limits_init(&l);
    l.max_model_bytes = RNNSTATE_DEFAULT_MAX_MODEL_BYTES + 1;
    assert_argument_refused(l, "max_model_bytes");
    /* the maxima themselves are accepted */
    l.max_model_bytes = RNNSTATE_DEFAULT_MAX_MODEL_BYTES;
    l.max_nesting = RNNSTATE_MAX_NESTING;
    size_t size;
    Onnx__ModelProto *proto = gru_with_large_weights();
    unsigned char *bytes = mb_pack(proto, &size);
    mb_free(proto);
    rnnstate_model *model = NULL;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_memory(bytes, size, "m", &l, &model, &err), RNNSTATE_OK);
    rnnstate_model_free(model);
    free(bytes);
}

/* ---- external data ---------------------------------------------------------------- */

static Onnx__SparseTensorProto *external_sparse(const char *name)
{
    Onnx__SparseTensorProto *s = malloc(sizeof *s);
    assert_non_null(s);
    onnx__sparse_tensor_proto__init(s);
    s->values = mb_external_tensor(name, "w.bin");
    s->indices = mb_external_tensor("", "w.bin");
    return s;
}

static void collect_locations(const Onnx__TensorProto *t, char *out)
{
    for (size_t i = 0; i < t->n_external_data; i++)
        if (!strcmp(t->external_data[i]->key, "location")) {
            strcat(out, t->external_data[i]->value);
            strcat(out, " ");
        }
}

static void test_external_data_is_relocated_everywhere(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "1");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    Onnx__GraphProto *g = m->graph;
    g->sparse_initializer = malloc(sizeof *g->sparse_initializer);
    assert_non_null(g->sparse_initializer);
    g->sparse_initializer[g->n_sparse_initializer++] = external_sparse("S");
    Onnx__NodeProto *node = mb_node(m, "Custom", "custom", "X", "Y");
    node->domain = strdup("test.domain");
    mb_attr_tensor(node, "one", mb_external_tensor("", "w.bin"));
    Onnx__AttributeProto *many = mb_attr_tensor(node, "many", mb_external_tensor("", "w.bin"));
    many->tensors = malloc(sizeof *many->tensors);
    assert_non_null(many->tensors);
    many->tensors[many->n_tensors++] = many->t;
    many->t = NULL;
    many->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    Onnx__AttributeProto *sparse = mb_attr_tensor(node, "sparse", NULL);
    sparse->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    sparse->sparse_tensor = external_sparse("");
    Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "Z");
    Onnx__GraphProto *then = mb_attr_graph(iff, "then_branch", "then");
    then->initializer = malloc(sizeof *then->initializer);
    assert_non_null(then->initializer);
    then->initializer[then->n_initializer++] = mb_external_tensor("inner", "w.bin");
    mb_graph_output(then, "inner", MB_FLOAT, "1");
    Onnx__GraphProto *other = mb_attr_graph(iff, "else_branch", "else");
    mb_graph_node(other, "Identity", "id", "X", "e");
    mb_graph_output(other, "e", MB_FLOAT, "1");
    mb_output(m, "Y", MB_FLOAT, "1");
    mb_output(m, "Z", MB_FLOAT, "1");
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);

    char *dir = mb_temp_dir(), *sub = mb_path_in(dir, "sub");
    assert_int_equal(mkdir(sub, 0755), 0);
    char *in = mb_path_in(sub, "model.onnx"), *bin = mb_path_in(sub, "w.bin"),
         *out = mb_path_in(dir, "out.onnx");
    mb_write_file(in, bytes, size);
    mb_write_file(bin, "\0\0\0\0", 4);
    rnnstate_model *model = load_file_ok(in);
    rnnstate_error err;
    rnnstate_save_options reference;
    rnnstate_save_options_init(&reference);
    reference.external_data = RNNSTATE_EXTERNAL_DATA_REFERENCE;
    if (rnnstate_model_save_file(model, out, &reference, &err) != RNNSTATE_OK)
        fail_msg("%s", err.message);
    rnnstate_model_free(model);
    size_t n;
    unsigned char *written = mb_read_file(out, &n);
    Onnx__ModelProto *w = onnx__model_proto__unpack(NULL, n, written);
    assert_non_null(w);
    char locations[1024] = "";
    Onnx__GraphProto *wg = w->graph;
    collect_locations(wg->sparse_initializer[0]->values, locations);
    collect_locations(wg->sparse_initializer[0]->indices, locations);
    Onnx__NodeProto *wc = wg->node[0];
    collect_locations(wc->attribute[0]->t, locations);
    collect_locations(wc->attribute[1]->tensors[0], locations);
    collect_locations(wc->attribute[2]->sparse_tensor->values, locations);
    collect_locations(wc->attribute[2]->sparse_tensor->indices, locations);
    collect_locations(wg->node[1]->attribute[0]->g->initializer[0], locations);
    assert_string_equal(locations, "sub/w.bin sub/w.bin sub/w.bin sub/w.bin sub/w.bin sub/w.bin "
                                   "sub/w.bin ");
    onnx__model_proto__free_unpacked(w, NULL);
    free(written);
    free(bytes);
    remove_tree(dir);
    free(in);
    free(bin);
    free(out);
    free(sub);
    free(dir);
}

/* ---- copy routes -------------------------------------------------------------------- */

/* Offset of the first lazy weight's bytes (W: 0.25f = 00 00 80 3e, repeated). */
static size_t weights_offset(const unsigned char *data, size_t size)
{
    static const unsigned char w[16] = { 0, 0, 0x80, 0x3e, 0, 0, 0x80, 0x3e,
                                         0, 0, 0x80, 0x3e, 0, 0, 0x80, 0x3e };
    for (size_t i = 0; i + sizeof w <= size; i++)
        if (!memcmp(data + i, w, sizeof w))
            return i;
    fail_msg("weights not found");
    return 0;
}

typedef struct copy_case {
    bool congruent;
    int calls;
    bool identical;
    uint64_t source_offset, output_offset, block;
} copy_case;

/* Saves a lazy model whose graph was renamed, after loading, to a name of
 * `pad` bytes; reports whether the weights' offsets were congruent,
 * copy_file_range() calls, and whether the file equals save_memory()'s
 * bytes (also with copy_file_range failing). */
static copy_case save_padded(const char *dir, size_t pad)
{
    char *name = calloc(pad + 1, 1);
    assert_non_null(name);
    memset(name, 'n', pad);
    size_t size;
    Onnx__ModelProto *proto = gru_with_large_weights();
    unsigned char *bytes = mb_pack(proto, &size);
    mb_free(proto);
    char *in = mb_path_in(dir, "in.onnx"), *out = mb_path_in(dir, "out.onnx"),
         *fallback = mb_path_in(dir, "fallback.onnx");
    mb_write_file(in, bytes, size);
    rnnstate_model *model = load_file_ok(in);
    assert_true(model->n_lazy > 0);
    assert_true(set_string(&model->proto->graph->name, name));
    free(name);
    rnnstate_error err;
    copy_case c = { 0 };
    copy_calls = 0;
    assert_int_equal(rnnstate_model_save_file(model, out, NULL, &err), RNNSTATE_OK);
    c.calls = copy_calls;
    copy_fails = true;
    assert_int_equal(rnnstate_model_save_file(model, fallback, NULL, &err), RNNSTATE_OK);
    copy_fails = false;
    unsigned char *memory;
    size_t memory_size, out_size, fallback_size;
    assert_int_equal(rnnstate_model_save_memory(model, &memory, &memory_size, &err), RNNSTATE_OK);
    unsigned char *written = mb_read_file(out, &out_size);
    unsigned char *fell_back = mb_read_file(fallback, &fallback_size);
    c.identical = out_size == memory_size && fallback_size == memory_size &&
                  !memcmp(written, memory, memory_size) && !memcmp(fell_back, memory, memory_size);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    uint64_t block = st.st_blksize > 4096 ? (uint64_t)st.st_blksize : 4096;
    c.block = block;
    c.source_offset = weights_offset(bytes, size);
    c.output_offset = weights_offset(written, out_size);
    c.congruent = c.source_offset % block == c.output_offset % block;
    rnnstate_buffer_free(memory);
    free(written);
    free(fell_back);
    rnnstate_model_free(model);
    free(bytes);
    unlink(in);
    unlink(out);
    unlink(fallback);
    free(in);
    free(out);
    free(fallback);
    return c;
}

static void assert_route(copy_case c, bool congruent)
{
    assert_true(c.identical);
    assert_int_equal(c.congruent, congruent);
    if (congruent)
        assert_true(c.calls > 0);
    else
        assert_int_equal(c.calls, 0);
}

static void test_copy_routes_write_identical_bytes(void **state)
{
    (void)state;
    char *dir = mb_temp_dir();
    /* The graph's name (packed before its initializers) moves the output's
     * weights against the source's, one byte per byte while its length takes
     * a 2-byte varint (128 to 16383): measured at 128, then a length that
     * lines them up with the source's, and one more that does not. */
    copy_case probe = save_padded(dir, 128);
    uint64_t b = probe.block;
    uint64_t k = 128 + (probe.source_offset + b - probe.output_offset % b) % b;
    assert_route(save_padded(dir, (size_t)k), true);
    assert_route(save_padded(dir, (size_t)k + 1), false);
    remove_tree(dir);
    free(dir);
}

/* ---- no process-wide state ------------------------------------------------------ */

static void test_saves_change_no_process_wide_state(void **state)
{
    (void)state;
    size_t size;
    Onnx__ModelProto *proto = gru_with_large_weights();
    unsigned char *bytes = mb_pack(proto, &size);
    mb_free(proto);
    char *dir = mb_temp_dir(), *in = mb_path_in(dir, "in.onnx"), *out = mb_path_in(dir, "out.onnx"),
         *named = mb_path_in(dir, "named.onnx");
    mb_write_file(in, bytes, size);
    rnnstate_model *model = load_file_ok(in);
    mode_t mask = umask(027);
    umask_calls = sigmask_calls = 0;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_file(model, out, NULL, &err), RNNSTATE_OK);
    no_tmpfile = true; /* the named temporary file route */
    assert_int_equal(rnnstate_model_save_file(model, named, NULL, &err), RNNSTATE_OK);
    assert_int_equal(rnnstate_model_save_file(model, named, NULL, &err), RNNSTATE_OK);
    no_tmpfile = false;
    assert_int_equal(umask_calls, 0);
    assert_int_equal(sigmask_calls, 0);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640); /* 0666 & ~umask, without asking umask() */
    assert_int_equal(stat(named, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    umask(mask);
    assert_int_equal(entries(dir), 3); /* no temporary file either */
    rnnstate_model_free(model);
    free(bytes);
    remove_tree(dir);
    free(in);
    free(out);
    free(named);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_over_2_gib_is_refused_on_every_route_before_writing),
        cmocka_unit_test(test_failed_verification_leaves_nothing_and_keeps_the_old_file),
        cmocka_unit_test(test_limits_past_their_maxima_are_refused),
        cmocka_unit_test(test_external_data_is_relocated_everywhere),
        cmocka_unit_test(test_copy_routes_write_identical_bytes),
        cmocka_unit_test(test_saves_change_no_process_wide_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
