/* The API's promises (issue 12): one version; options structs that can grow
 * (struct_size, *_init, NULL for the defaults, uninitialised or newer ones
 * refused); `const` models that saving never modifies, even while a save
 * is under way (so the same model can be saved from two threads at once);
 * and a JSON report that can be written one model at a time. */
#define _GNU_SOURCE /* F_GETPIPE_SZ */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_builder.h"

/* ---- helpers --------------------------------------------------------------- */

/* One GRU with a dynamic batch, whose initial state the rewrite exposes,
 * followed by `n` Identity nodes (enough to make a graph larger than a pipe
 * holds). */
static unsigned char *long_model_bytes(size_t n, size_t *size)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, 4, 3, 0.1);
    mb_recurrent(m, "GRU", "gru", 4, NULL, "X,W,R", "Y0");
    char in[32], out[32] = "Y0";
    for (size_t i = 0; i < n; i++) {
        snprintf(in, sizeof in, "Y%zu", i);
        snprintf(out, sizeof out, "Y%zu", i + 1);
        mb_node(m, "Identity", out, in, out);
    }
    mb_output(m, out, MB_FLOAT, "T,1,batch,4");
    unsigned char *bytes = mb_pack(m, size);
    mb_free(m);
    return bytes;
}

static rnnstate_model *load_bytes(const unsigned char *bytes, size_t size)
{
    rnnstate_model *model = NULL;
    rnnstate_error err;
    if (rnnstate_model_load_memory(bytes, size, "api.onnx", NULL, &model, &err) != RNNSTATE_OK)
        fail_msg("load: %s", err.message);
    return model;
}

static unsigned char *save_bytes(const rnnstate_model *model, size_t *size)
{
    unsigned char *out;
    rnnstate_error err;
    if (rnnstate_model_save_memory(model, &out, size, &err) != RNNSTATE_OK)
        fail_msg("save: %s", err.message);
    return out;
}

/* ---- version --------------------------------------------------------------- */

static void test_version_is_the_headers(void **state)
{
    (void)state;
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", RNNSTATE_VERSION_MAJOR,
             RNNSTATE_VERSION_MINOR, RNNSTATE_VERSION_PATCH);
    assert_string_equal(RNNSTATE_VERSION_STRING, expected);
    assert_string_equal(rnnstate_version(), expected);
}

/* The numeric version is the header's, so that a program can compare the
 * library it runs with against the one it was compiled with. */
static void test_version_number_is_the_headers(void **state)
{
    (void)state;
    assert_int_equal(RNNSTATE_VERSION_NUMBER, RNNSTATE_VERSION_MAJOR * 10000 +
                                                  RNNSTATE_VERSION_MINOR * 100 +
                                                  RNNSTATE_VERSION_PATCH);
    assert_int_equal(rnnstate_version_number(), RNNSTATE_VERSION_NUMBER);
}

/* ---- strings and statuses the library returns ---------------------------------- */

/* A string the library returns goes back through the library (its
 * allocator); NULL is accepted. Valgrind (unit.api.memcheck) sees a leak or a
 * mismatched free. */
static void test_returned_strings_are_freed_by_the_library(void **state)
{
    (void)state;
    char *text = rnnstate_escape_text("a\nb");
    assert_non_null(text);
    assert_string_equal(text, "a\\nb");
    rnnstate_string_free(text);
    rnnstate_string_free(NULL);
}

static rnnstate_report *rewrite_bytes(const unsigned char *bytes, size_t size,
                                      rnnstate_model **model)
{
    rnnstate_report *report = NULL;
    rnnstate_error err;
    *model = load_bytes(bytes, size);
    if (rnnstate_rewrite(*model, NULL, &report, &err) != RNNSTATE_OK)
        fail_msg("rewrite: %s", err.message);
    return report;
}

/* The model status is the one rule behind the text report's "model ..."
 * word and the JSON report's status and summary. */
static void test_model_status_is_the_reports(void **state)
{
    (void)state;
    size_t size, again_size;
    unsigned char *bytes = long_model_bytes(0, &size);
    rnnstate_model *model, *again;
    rnnstate_report *report = rewrite_bytes(bytes, size, &model);
    assert_int_equal(rnnstate_report_model_status(report), RNNSTATE_MODEL_REWRITTEN);
    unsigned char *rewritten = save_bytes(model, &again_size);
    rnnstate_report *second = rewrite_bytes(rewritten, again_size, &again);
    assert_int_not_equal(rnnstate_report_model_status(second), RNNSTATE_MODEL_REWRITTEN);
    rnnstate_report plain = { .changed = false, .annotated = false };
    rnnstate_report annotated = { .changed = false, .annotated = true };
    rnnstate_report both = { .changed = true, .annotated = true };
    assert_int_equal(rnnstate_report_model_status(&plain), RNNSTATE_MODEL_UNCHANGED);
    assert_int_equal(rnnstate_report_model_status(&annotated), RNNSTATE_MODEL_ANNOTATED);
    assert_int_equal(rnnstate_report_model_status(&both), RNNSTATE_MODEL_REWRITTEN);
    rnnstate_report_free(second);
    rnnstate_report_free(report);
    rnnstate_model_free(again);
    rnnstate_model_free(model);
    rnnstate_buffer_free(rewritten);
    free(bytes);
}

/* no_decisions leaves each node's decisions empty and changes nothing else:
 * the model saved, the text report without -v, the rest of the report. */
static void test_no_decisions_changes_only_the_decisions(void **state)
{
    (void)state;
    size_t size, with_size, without_size;
    unsigned char *bytes = long_model_bytes(0, &size);
    rnnstate_model *with_model, *without_model = load_bytes(bytes, size);
    rnnstate_report *with = rewrite_bytes(bytes, size, &with_model), *without = NULL;
    rnnstate_options options;
    rnnstate_options_init(&options);
    assert_false(options.no_decisions);
    options.no_decisions = true;
    assert_int_equal(rnnstate_rewrite(without_model, &options, &without, NULL), RNNSTATE_OK);
    assert_int_equal(with->n_nodes, without->n_nodes);
    assert_true(with->n_nodes > 0 && with->nodes[0].n_decisions > 0);
    for (size_t i = 0; i < without->n_nodes; i++)
        assert_int_equal(without->nodes[i].n_decisions, 0);
    char *with_text = rnnstate_report_text(with, "m", false);
    char *without_text = rnnstate_report_text(without, "m", false);
    assert_string_equal(with_text, without_text);
    unsigned char *with_bytes = save_bytes(with_model, &with_size);
    unsigned char *without_bytes = save_bytes(without_model, &without_size);
    assert_int_equal(with_size, without_size);
    assert_memory_equal(with_bytes, without_bytes, with_size);
    rnnstate_buffer_free(with_bytes);
    rnnstate_buffer_free(without_bytes);
    rnnstate_string_free(with_text);
    rnnstate_string_free(without_text);
    rnnstate_report_free(with);
    rnnstate_report_free(without);
    rnnstate_model_free(with_model);
    rnnstate_model_free(without_model);
    free(bytes);
}

/* The text writer says when its text was lost, like the JSON writers: a
 * full disk, a stream not open for writing. */
static void test_report_text_reports_a_failed_write(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = long_model_bytes(0, &size);
    rnnstate_model *model;
    rnnstate_report *report = rewrite_bytes(bytes, size, &model);
    FILE *ok = tmpfile();
    assert_non_null(ok);
    assert_true(rnnstate_report_write_text(report, "m.onnx", true, ok));
    fclose(ok);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        assert_false(rnnstate_report_write_text(report, "m.onnx", true, full));
        fclose(full);
    }
    FILE *read_only = fopen("/dev/null", "r");
    assert_non_null(read_only);
    assert_false(rnnstate_report_write_text(report, "m.onnx", false, read_only));
    fclose(read_only);
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    free(bytes);
}

/* ---- options structs -------------------------------------------------------- */

static void test_init_sets_struct_size_and_defaults(void **state)
{
    (void)state;
    rnnstate_limits limits;
    memset(&limits, 0xff, sizeof limits);
    rnnstate_limits_init(&limits);
    assert_int_equal(limits.struct_size, sizeof limits);
    assert_int_equal(limits.max_model_bytes, RNNSTATE_DEFAULT_MAX_MODEL_BYTES);
    assert_int_equal(limits.max_nesting, RNNSTATE_DEFAULT_MAX_NESTING);
    assert_int_equal(limits.lazy_tensor_bytes, RNNSTATE_DEFAULT_LAZY_TENSOR_BYTES);

    rnnstate_save_options save;
    memset(&save, 0xff, sizeof save);
    rnnstate_save_options_init(&save);
    assert_int_equal(save.struct_size, sizeof save);
    assert_false(save.sync);
    assert_null(save.cancel);
    assert_null(save.verify);

    rnnstate_options options;
    memset(&options, 0xff, sizeof options);
    rnnstate_options_init(&options);
    assert_int_equal(options.struct_size, sizeof options);
    assert_int_equal(options.state_inputs, RNNSTATE_STATE_INPUTS_OPTIONAL);
    assert_null(options.name_template);
    assert_int_equal(options.n_include, 0);
    assert_int_equal(options.n_exclude, 0);
    assert_false(options.to_layout0);
}

/* A program compiled when rnnstate_options ended before name_template: the
 * library reads state_inputs, and the later fields keep their defaults
 * whatever lies in memory after the caller's struct. */
static void test_options_are_read_up_to_their_struct_size(void **state)
{
    (void)state;
    rnnstate_options options;
    rnnstate_options_init(&options);
    options.state_inputs = RNNSTATE_STATE_INPUTS_REQUIRED;
    options.name_template = "not a template"; /* beyond struct_size: never read */
    options.struct_size = offsetof(rnnstate_options, name_template);
    size_t size;
    unsigned char *bytes = long_model_bytes(0, &size);
    mb_run run;
    mb_rewrite_bytes(bytes, size, &options, &run);
    assert_int_equal(run.report->n_pairs, 1);
    assert_string_equal(run.report->pairs[0].input, "GRU_0_initial_h");
    assert_false(run.report->pairs[0].optional);
    mb_run_free(&run);

    options.struct_size = sizeof options; /* now the template is read: refused */
    rnnstate_model *model = load_bytes(bytes, size);
    rnnstate_report *report = (rnnstate_report *)&options;
    rnnstate_error err;
    assert_int_equal(rnnstate_rewrite(model, &options, &report, &err), RNNSTATE_ERR_ARGUMENT);
    assert_null(report);
    rnnstate_model_free(model);
    free(bytes);
}

/* rewrite with options of struct_size `struct_size`: refused with
 * RNNSTATE_ERR_ARGUMENT and a message containing `what`; the model is
 * untouched (it saves to the bytes it was loaded from). */
static void assert_rewrite_refuses_struct_size(size_t struct_size, const char *what)
{
    struct {
        rnnstate_options options;
        char newer_fields[16];
    } newer;
    memset(&newer, 0, sizeof newer);
    rnnstate_options_init(&newer.options);
    newer.options.struct_size = struct_size;
    size_t size;
    unsigned char *bytes = long_model_bytes(0, &size);
    rnnstate_model *model = load_bytes(bytes, size);
    rnnstate_report *report = NULL;
    rnnstate_error err;
    assert_int_equal(rnnstate_rewrite(model, &newer.options, &report, &err),
                     RNNSTATE_ERR_ARGUMENT);
    assert_int_equal(err.status, RNNSTATE_ERR_ARGUMENT);
    assert_null(report);
    assert_non_null(strstr(err.message, what));
    mb_assert_saves_as(model, bytes, size);
    rnnstate_model_free(model);
    free(bytes);
}

static void test_uninitialised_options_are_refused(void **state)
{
    (void)state;
    assert_rewrite_refuses_struct_size(0, "rnnstate_options: struct_size is 0: fill the struct "
                                          "with rnnstate_options_init() first");
}

static void test_options_of_a_newer_header_are_refused(void **state)
{
    (void)state;
    assert_rewrite_refuses_struct_size(sizeof(rnnstate_options) + 8, "newer rnnstate.h");
}

static void test_uninitialised_limits_are_refused(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = long_model_bytes(0, &size);
    rnnstate_limits limits = { 0 };
    rnnstate_model *model = (rnnstate_model *)&limits;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_memory(bytes, size, "api.onnx", &limits, &model, &err),
                     RNNSTATE_ERR_ARGUMENT);
    assert_null(model);
    assert_non_null(strstr(err.message, "rnnstate_limits_init()"));
    assert_int_equal(rnnstate_model_load_file("/nonexistent", &limits, &model, &err),
                     RNNSTATE_ERR_ARGUMENT);
    assert_int_equal(rnnstate_model_load_fd(0, "<stdin>", &limits, &model, &err),
                     RNNSTATE_ERR_ARGUMENT);
    free(bytes);
}

static void test_uninitialised_save_options_are_refused_and_nothing_written(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = long_model_bytes(0, &size);
    rnnstate_model *model = load_bytes(bytes, size);
    char *dir = mb_temp_dir(), *out = mb_path_in(dir, "out.onnx");
    rnnstate_save_options options = { 0 };
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_file(model, out, &options, &err), RNNSTATE_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "rnnstate_save_options_init()"));
    assert_int_equal(access(out, F_OK), -1);
    rnnstate_save_options_init(&options);
    assert_int_equal(rnnstate_model_save_file(model, out, &options, &err), RNNSTATE_OK);
    assert_int_equal(unlink(out), 0);
    assert_int_equal(rmdir(dir), 0);
    rnnstate_model_free(model);
    free(out);
    free(dir);
    free(bytes);
}

static void test_null_options_are_the_defaults(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = long_model_bytes(0, &size);
    char *dir = mb_temp_dir(), *in = mb_path_in(dir, "in.onnx"), *out = mb_path_in(dir, "out.onnx");
    mb_write_file(in, bytes, size);
    rnnstate_model *model = NULL;
    rnnstate_report *report = NULL;
    assert_int_equal(rnnstate_model_load_file(in, NULL, &model, NULL), RNNSTATE_OK);
    assert_int_equal(rnnstate_rewrite(model, NULL, &report, NULL), RNNSTATE_OK);
    assert_true(report->pairs[0].optional);
    assert_int_equal(rnnstate_model_save_file(model, out, NULL, NULL), RNNSTATE_OK);
    assert_int_equal(access(out, F_OK), 0);
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    unlink(in);
    unlink(out);
    rmdir(dir);
    free(in);
    free(out);
    free(dir);
    free(bytes);
}

/* ---- const models are not modified by saving ----------------------------------- */

/* A save that stops in the middle: it writes into a pipe that nobody reads
 * until it is full, so the writer blocks halfway through the model, and the
 * test looks at the model meanwhile. */
typedef struct paused_save {
    const rnnstate_model *model;
    int fd;           /* save_fd into this pipe, or */
    const char *path; /* save_file to this FIFO */
    rnnstate_status status;
    pthread_t thread;
} paused_save;

/* Save options whose external data files stay where they are (the
 * locations are rewritten). */
static rnnstate_save_options referencing(void)
{
    rnnstate_save_options o;
    rnnstate_save_options_init(&o);
    o.external_data = RNNSTATE_EXTERNAL_DATA_REFERENCE;
    return o;
}

static void *run_save(void *arg)
{
    paused_save *p = arg;
    rnnstate_error err;
    rnnstate_save_options reference = referencing();
    if (p->path)
        p->status = rnnstate_model_save_file(p->model, p->path, &reference, &err);
    else
        p->status = rnnstate_model_save_fd(p->model, p->fd, "<pipe>", &err);
    return NULL;
}

/* Waits until the pipe read from `fd` is full (the writer is blocked). Its
 * pages fill up to a page less than its capacity: the small writes that
 * begin a model share its first page. */
static void wait_until_full(int fd)
{
    int capacity = fcntl(fd, F_GETPIPE_SZ);
    assert_true(capacity > 4096);
    for (int i = 0; i < 20000; i++) {
        int queued = 0;
        assert_int_equal(ioctl(fd, FIONREAD, &queued), 0);
        if (queued >= capacity - 4096)
            return;
        usleep(500);
    }
    fail_msg("the save never filled the pipe: the model is too small to pause it");
}

/* Reads `fd` until `size` bytes or end of file. */
static unsigned char *drain(int fd, size_t size, size_t *got)
{
    unsigned char *buf = malloc(size);
    assert_non_null(buf);
    *got = 0;
    ssize_t n;
    while (*got < size && (n = read(fd, buf + *got, size - *got)) > 0)
        *got += (size_t)n;
    return buf;
}

/* Weights left in the file (lazy): the writer packs the graph without them
 * and copies them from the file. */
static void test_a_model_with_lazy_weights_is_whole_while_it_is_saved(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = long_model_bytes(4000, &size);
    char *dir = mb_temp_dir(), *in = mb_path_in(dir, "in.onnx");
    mb_write_file(in, bytes, size);
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    limits.lazy_tensor_bytes = 16; /* W and R stay in the file */
    rnnstate_model *model = NULL;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_file(in, &limits, &model, &err), RNNSTATE_OK);
    size_t before_size;
    unsigned char *before = save_bytes(model, &before_size);

    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    paused_save p = { .model = model, .fd = pipe_fds[1] };
    assert_int_equal(pthread_create(&p.thread, NULL, run_save, &p), 0);
    wait_until_full(pipe_fds[0]);
    /* the writer is blocked halfway: the model is whole, and saves the same */
    mb_assert_saves_as(model, before, before_size);
    size_t streamed_size;
    unsigned char *streamed = drain(pipe_fds[0], before_size, &streamed_size);
    assert_int_equal(pthread_join(p.thread, NULL), 0);
    assert_int_equal(p.status, RNNSTATE_OK);
    assert_int_equal(streamed_size, before_size);
    assert_memory_equal(streamed, before, before_size);
    free(streamed);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    /* the lazy path writes initializers last: the same model, not the same bytes */
    Onnx__ModelProto *reread = onnx__model_proto__unpack(NULL, before_size, before);
    assert_non_null(reread);
    assert_string_equal(mb_initializer_names(reread->graph), "W,R");
    onnx__model_proto__free_unpacked(reread, NULL);
    rnnstate_buffer_free(before);
    rnnstate_model_free(model);
    unlink(in);
    rmdir(dir);
    free(in);
    free(dir);
    free(bytes);
}

/* The location of the external data of the main graph's initializer and of
 * the Constant in the If's then_branch, "main|then". */
static const char *external_locations(const unsigned char *bytes, size_t size)
{
    static char buf[512];
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, bytes);
    assert_non_null(m);
    const Onnx__NodeProto *if_node = mb_find_node(m->graph, "if");
    assert_non_null(if_node);
    const Onnx__GraphProto *then_g = mb_find_attr(if_node, "then_branch")->g;
    snprintf(buf, sizeof buf, "%s|%s", m->graph->initializer[0]->external_data[0]->value,
             mb_find_attr(then_g->node[0], "value")->t->external_data[0]->value);
    onnx__model_proto__free_unpacked(m, NULL);
    return buf;
}

/* External data in the main graph and in an If branch, saved into other
 * directories with RNNSTATE_EXTERNAL_DATA_REFERENCE: the output gets
 * relocated paths, and the model keeps its own, also while a save is under
 * way. */
static void test_a_model_with_external_data_is_unchanged_while_it_is_saved_elsewhere(void **state)
{
    (void)state;
    char *root = mb_temp_dir(), *src = mb_path_in(root, "src"), *sub = mb_path_in(src, "sub");
    assert_int_equal(mkdir(src, 0777), 0);
    assert_int_equal(mkdir(sub, 0777), 0);
    char *weights = mb_path_in(sub, "w.bin"), *in = mb_path_in(sub, "in.onnx");
    mb_write_file(weights, "\0\0\x80?\0\0\0@", 8);

    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_initializer(m, mb_external_tensor("W", "w.bin"));
    Onnx__NodeProto *if_node = mb_node(m, "If", "if", "cond", "Y0");
    Onnx__GraphProto *then_g = mb_attr_graph(if_node, "then_branch", "then");
    Onnx__GraphProto *else_g = mb_attr_graph(if_node, "else_branch", "else");
    Onnx__NodeProto *c = mb_graph_node(then_g, "Constant", "c", "", "Y_then");
    mb_attr_tensor(c, "value", mb_external_tensor("", "w.bin"));
    mb_graph_output(then_g, "Y_then", MB_FLOAT, "2");
    mb_graph_node(else_g, "Identity", "i", "W", "Y_else");
    mb_graph_output(else_g, "Y_else", MB_FLOAT, "2");
    char value[32], next[32];
    for (int i = 0; i < 4000; i++) { /* more than a pipe holds */
        snprintf(value, sizeof value, "Y%d", i);
        snprintf(next, sizeof next, "Y%d", i + 1);
        mb_node(m, "Identity", next, value, next);
    }
    mb_output(m, next, MB_FLOAT, "2");
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    mb_write_file(in, bytes, size);

    rnnstate_model *model = NULL;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_file(in, NULL, &model, &err), RNNSTATE_OK);
    char *out_a = mb_path_in(src, "a.onnx"), *fifo_b = mb_path_in(root, "b.onnx");
    rnnstate_save_options reference = referencing();
    assert_int_equal(rnnstate_model_save_file(model, out_a, &reference, &err), RNNSTATE_OK);
    size_t a_size;
    unsigned char *a = mb_read_file(out_a, &a_size);
    assert_string_equal(external_locations(a, a_size), "sub/w.bin|sub/w.bin");

    /* a save to a FIFO in root/, paused halfway */
    assert_int_equal(mkfifo(fifo_b, 0600), 0);
    paused_save p = { .model = model, .path = fifo_b };
    assert_int_equal(pthread_create(&p.thread, NULL, run_save, &p), 0);
    int fd = open(fifo_b, O_RDONLY);
    assert_true(fd >= 0);
    wait_until_full(fd);
    mb_assert_saves_as(model, bytes, size);
    size_t b_size;
    unsigned char *b = drain(fd, 4 * size, &b_size);
    assert_int_equal(pthread_join(p.thread, NULL), 0);
    assert_int_equal(p.status, RNNSTATE_OK);
    assert_string_equal(external_locations(b, b_size), "src/sub/w.bin|src/sub/w.bin");

    close(fd);
    free(a);
    free(b);
    rnnstate_model_free(model);
    unlink(out_a);
    unlink(fifo_b);
    unlink(in);
    unlink(weights);
    rmdir(sub);
    rmdir(src);
    rmdir(root);
    free(out_a);
    free(fifo_b);
    free(in);
    free(weights);
    free(sub);
    free(src);
    free(root);
    free(bytes);
}

/* The default (COPY) and LINK put the external file beside an output in
 * another directory, at the same location, before the model; the locations
 * are unchanged; a mode the library does not know is refused. */
static void test_external_data_is_copied_or_linked_beside_the_output(void **state)
{
    (void)state;
    char *root = mb_temp_dir(), *src = mb_path_in(root, "src"), *dst = mb_path_in(root, "dst");
    assert_int_equal(mkdir(src, 0777), 0);
    assert_int_equal(mkdir(dst, 0777), 0);
    char *weights = mb_path_in(src, "w.bin"), *in = mb_path_in(src, "in.onnx");
    mb_write_file(weights, "\0\0\x80?\0\0\0@", 8);
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_initializer(m, mb_external_tensor("W", "w.bin"));
    mb_node(m, "Identity", "i", "W", "Y");
    mb_output(m, "Y", MB_FLOAT, "2");
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    mb_write_file(in, bytes, size);
    rnnstate_model *model = NULL;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_file(in, NULL, &model, &err), RNNSTATE_OK);

    char *out = mb_path_in(dst, "out.onnx"), *copy = mb_path_in(dst, "w.bin");
    assert_int_equal(rnnstate_model_save_file(model, out, NULL, &err), RNNSTATE_OK);
    size_t out_size, copy_size;
    unsigned char *written = mb_read_file(out, &out_size), *copied = mb_read_file(copy, &copy_size);
    Onnx__ModelProto *saved = onnx__model_proto__unpack(NULL, out_size, written);
    assert_non_null(saved);
    assert_string_equal(saved->graph->initializer[0]->external_data[0]->value, "w.bin");
    onnx__model_proto__free_unpacked(saved, NULL);
    assert_memory_equal(copied, "\0\0\x80?\0\0\0@", 8);
    assert_int_equal(copy_size, 8);
    struct stat a, b;
    assert_int_equal(stat(weights, &a), 0);
    assert_int_equal(stat(copy, &b), 0);
    assert_true(a.st_ino != b.st_ino); /* a file of its own */
    unlink(copy);

    rnnstate_save_options o;
    rnnstate_save_options_init(&o);
    o.external_data = RNNSTATE_EXTERNAL_DATA_LINK;
    assert_int_equal(rnnstate_model_save_file(model, out, &o, &err), RNNSTATE_OK);
    assert_int_equal(stat(copy, &b), 0);
    assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);

    o.external_data = (rnnstate_external_data)7;
    assert_int_equal(rnnstate_model_save_file(model, out, &o, &err), RNNSTATE_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "external_data 7 is not a mode"));

    rnnstate_model_free(model);
    free(written);
    free(copied);
    unlink(copy);
    unlink(out);
    unlink(in);
    unlink(weights);
    rmdir(dst);
    rmdir(src);
    rmdir(root);
    free(copy);
    free(out);
    free(in);
    free(weights);
    free(dst);
    free(src);
    free(root);
    free(bytes);
}

/* ---- the JSON report, one model at a time ------------------------------------ */

/* Each entry is written, and flushed, when it is added, not held to the end
 * (a batch's memory would grow with its number of models, and a reader
 * would see nothing until then), and the three calls write exactly the
 * document of rnnstate_report_write_json(). A memstream's text and len are
 * only brought up to date by a flush: nothing here flushes but the stream. */
static void test_json_stream_writes_each_entry_as_it_is_added(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = long_model_bytes(1, &size);
    rnnstate_model *model = load_bytes(bytes, size);
    rnnstate_report *report = NULL;
    assert_int_equal(rnnstate_rewrite(model, NULL, &report, NULL), RNNSTATE_OK);
    const rnnstate_model_result results[] = {
        { "a\".onnx", NULL, NULL, "a\".onnx: not an ONNX model" },
        { "b.onnx", "out/b.onnx", report, NULL },
    };

    char *text = NULL, *whole = NULL;
    size_t len = 0, whole_len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    rnnstate_json_stream json;
    rnnstate_json_stream_begin(&json, out);
    assert_string_equal(text, "{\"tool\": \"rnnstate-rewrite\", \"version\": \"" RNNSTATE_VERSION_STRING
                              "\",\n  \"models\": [\n");
    size_t head = len;
    rnnstate_json_stream_add(&json, &results[0]);
    const char *first = "    {\"input\": \"a\\\".onnx\", \"output\": null, \"status\": \"error\", "
                        "\"error\": \"a\\\".onnx: not an ONNX model\",\n     \"nodes\": [],\n     "
                        "\"state\": [],\n     \"time_axes\": [],\n     \"stream\": null,\n     "
                        "\"notes\": []}";
    assert_string_equal(text + head, first);
    size_t before_second = len;
    rnnstate_json_stream_add(&json, &results[1]);
    const char *second = ",\n    {\"input\": \"b.onnx\", \"output\": \"out/b.onnx\", "
                         "\"status\": \"rewritten\", \"error\": null,";
    assert_int_equal(strncmp(text + before_second, second, strlen(second)), 0);
    assert_true(rnnstate_json_stream_end(&json));
    assert_int_equal(json.error, 0);
    assert_int_equal(json.models, 2);
    assert_int_equal(json.errors, 1);
    assert_int_equal(json.rewritten, 1);
    const char *tail = "\n  ],\n  \"summary\": {\"models\": 2, \"rewritten\": 1, \"annotated\": 0, "
                       "\"unchanged\": 0, \"errors\": 1}\n}\n";
    assert_true(len > strlen(tail));
    assert_string_equal(text + len - strlen(tail), tail);
    fclose(out);

    FILE *all = open_memstream(&whole, &whole_len);
    assert_non_null(all);
    assert_true(rnnstate_report_write_json(results, 2, all));
    fclose(all);
    assert_int_equal(whole_len, len);
    assert_string_equal(whole, text);

    free(whole);
    free(text);
    rnnstate_report_free(report);
    rnnstate_model_free(model);
    free(bytes);
}

/* A write that fails is remembered, with its errno, and ends in false. */
static void test_json_stream_reports_a_failed_write(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    rnnstate_json_stream json;
    rnnstate_json_stream_begin(&json, full);
    const rnnstate_model_result failed = { "a.onnx", NULL, NULL, "a.onnx: empty file" };
    for (int i = 0; i < 1000; i++) /* past stdio's buffer */
        rnnstate_json_stream_add(&json, &failed);
    assert_false(rnnstate_json_stream_end(&json));
    assert_int_equal(json.error, ENOSPC);
    assert_int_equal(json.models, 1000);
    fclose(full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_is_the_headers),
        cmocka_unit_test(test_version_number_is_the_headers),
        cmocka_unit_test(test_returned_strings_are_freed_by_the_library),
        cmocka_unit_test(test_model_status_is_the_reports),
        cmocka_unit_test(test_report_text_reports_a_failed_write),
        cmocka_unit_test(test_init_sets_struct_size_and_defaults),
        cmocka_unit_test(test_options_are_read_up_to_their_struct_size),
        cmocka_unit_test(test_uninitialised_options_are_refused),
        cmocka_unit_test(test_options_of_a_newer_header_are_refused),
        cmocka_unit_test(test_uninitialised_limits_are_refused),
        cmocka_unit_test(test_uninitialised_save_options_are_refused_and_nothing_written),
        cmocka_unit_test(test_null_options_are_the_defaults),
        cmocka_unit_test(test_no_decisions_changes_only_the_decisions),
        cmocka_unit_test(test_a_model_with_lazy_weights_is_whole_while_it_is_saved),
        cmocka_unit_test(test_a_model_with_external_data_is_unchanged_while_it_is_saved_elsewhere),
        cmocka_unit_test(test_external_data_is_copied_or_linked_beside_the_output),
        cmocka_unit_test(test_json_stream_writes_each_entry_as_it_is_added),
        cmocka_unit_test(test_json_stream_reports_a_failed_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
