/* Loading and saving (issue 2, section 3): bad input is refused with the right
 * status and a message naming the buffer or file; saving is atomic and leaves
 * nothing behind on failure; unknown fields survive a round trip. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_builder.h"

/* ---- helpers --------------------------------------------------------------- */

static unsigned char *small_model_bytes(size_t *size)
{
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    unsigned char *bytes = mb_pack(m, size);
    mb_free(m);
    return bytes;
}

/* Loads bytes expecting failure with `status`; checks the message names the
 * label and contains `what` (when not NULL). */
static void assert_load_fails(const void *data, size_t size, const char *label,
                              const rnnstate_limits *limits, rnnstate_status status,
                              const char *what)
{
    rnnstate_error err;
    memset(&err, 0, sizeof err);
    rnnstate_model *model = (rnnstate_model *)&err; /* must be reset to NULL */
    assert_int_equal(rnnstate_model_load_memory(data, size, label, limits, &model, &err), status);
    assert_null(model);
    assert_int_equal(err.status, status);
    assert_non_null(strstr(err.message, label ? label : "<memory>"));
    if (what)
        assert_non_null(strstr(err.message, what));
    assert_null(strchr(err.message, '\n')); /* one line */
}

/* The names in a directory (without . and ..), sorted, comma-separated. */
static char *dir_listing(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    char *out = calloc(1, 4096);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(out, ",");
        strncat(out, names[i], 4096 - strlen(out) - 2);
        free(names[i]);
    }
    return out;
}

static rnnstate_model *load_ok(const void *data, size_t size)
{
    rnnstate_error err;
    rnnstate_model *model = NULL;
    if (rnnstate_model_load_memory(data, size, "ok.onnx", NULL, &model, &err) != RNNSTATE_OK)
        fail_msg("%s", err.message);
    return model;
}

/* ---- loading: bad input ------------------------------------------------------- */

static void test_load_empty_buffer_is_not_a_model(void **state)
{
    (void)state;
    assert_load_fails("", 0, "empty.onnx", NULL, RNNSTATE_ERR_NOT_MODEL, "empty");
}

static void test_load_text_is_not_a_model(void **state)
{
    (void)state;
    static const char text[] = "hello, this is certainly not an ONNX model\n";
    assert_load_fails(text, sizeof text - 1, "text.onnx", NULL, RNNSTATE_ERR_NOT_MODEL, NULL);
}

static void test_load_random_bytes_are_not_a_model(void **state)
{
    (void)state;
    unsigned char bytes[4096];
    uint32_t x = 12345;
    for (int round = 0; round < 64; round++) {
        for (size_t i = 0; i < sizeof bytes; i++) {
            x = x * 1103515245u + 12345u;
            bytes[i] = (unsigned char)(x >> 16);
        }
        assert_load_fails(bytes, sizeof bytes, "random.bin", NULL, RNNSTATE_ERR_NOT_MODEL, NULL);
    }
}

static void test_load_all_ff_bytes_is_not_a_model(void **state)
{
    (void)state;
    unsigned char bytes[64];
    memset(bytes, 0xff, sizeof bytes);
    assert_load_fails(bytes, sizeof bytes, "ff.bin", NULL, RNNSTATE_ERR_NOT_MODEL, NULL);
}

static void test_load_truncated_model_is_not_a_model(void **state)
{
    (void)state;
    /* a model whose last field is the graph: every cut is detectable */
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    for (size_t i = 0; i < m->n_opset_import; i++)
        protobuf_c_message_free_unpacked(&m->opset_import[i]->base, NULL);
    free(m->opset_import);
    m->opset_import = NULL;
    m->n_opset_import = 0;
    free(m->producer_name);
    m->producer_name = NULL;
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    assert_true(size > 100);
    assert_load_fails(bytes, size / 2, "cut.onnx", NULL, RNNSTATE_ERR_NOT_MODEL, "truncated");
    for (size_t cut = 1; cut < size; cut++)
        assert_load_fails(bytes, cut, "cut.onnx", NULL, RNNSTATE_ERR_NOT_MODEL, NULL);
    free(bytes);
}

static void test_load_tensor_proto_is_not_a_model(void **state)
{
    (void)state;
    Onnx__TensorProto *t = mb_tensor_filled("weights", MB_FLOAT, MB_DIMS(2, 3, 4), 0.5);
    size_t size = onnx__tensor_proto__get_packed_size(t);
    unsigned char *bytes = malloc(size);
    assert_non_null(bytes);
    assert_int_equal(onnx__tensor_proto__pack(t, bytes), size);
    protobuf_c_message_free_unpacked(&t->base, NULL);
    assert_load_fails(bytes, size, "tensor.pb", NULL, RNNSTATE_ERR_NOT_MODEL, "not an ONNX model");
    free(bytes);
}

static void test_load_model_without_graph_is_not_a_model(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    protobuf_c_message_free_unpacked(&m->graph->base, NULL);
    m->graph = NULL;
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    assert_load_fails(bytes, size, "nograph.onnx", NULL, RNNSTATE_ERR_NOT_MODEL, "graph");
    free(bytes);
}

static void test_load_model_without_ir_version_is_not_a_model(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    m->has_ir_version = 0;
    m->ir_version = 0;
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    assert_load_fails(bytes, size, "noir.onnx", NULL, RNNSTATE_ERR_NOT_MODEL, "ir_version");
    free(bytes);
}

static void test_load_without_label_names_memory(void **state)
{
    (void)state;
    assert_load_fails("", 0, NULL, NULL, RNNSTATE_ERR_NOT_MODEL, NULL);
}

static void test_load_larger_than_the_limit_is_refused(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = small_model_bytes(&size);
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    limits.max_model_bytes = size - 1;
    assert_load_fails(bytes, size, "big.onnx", &limits, RNNSTATE_ERR_INVALID, NULL);
    limits.max_model_bytes = size;
    rnnstate_error err;
    rnnstate_model *model = NULL;
    assert_int_equal(rnnstate_model_load_memory(bytes, size, "big.onnx", &limits, &model, &err),
                     RNNSTATE_OK);
    rnnstate_model_free(model);
    free(bytes);
}

/* `depth` If nodes, each in the then_branch of the previous one. */
static unsigned char *nested_if_model(int depth, size_t *size)
{
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    Onnx__GraphProto *g = m->graph;
    for (int i = 0; i < depth; i++) {
        Onnx__NodeProto *n = mb_graph_node(g, "If", "if", "cond", "if_out");
        g = mb_attr_graph(n, "then_branch", "then");
    }
    unsigned char *bytes = mb_pack(m, size);
    mb_free(m);
    return bytes;
}

static void test_load_nesting_deeper_than_the_limit_is_refused(void **state)
{
    (void)state;
    size_t size;
    /* model -> graph -> (node -> attribute -> graph) x 20: 62 nested messages */
    unsigned char *bytes = nested_if_model(20, &size);
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    limits.max_nesting = 16;
    assert_load_fails(bytes, size, "deep.onnx", &limits, RNNSTATE_ERR_INVALID, "nested");
    rnnstate_model *model = load_ok(bytes, size); /* within the default limit */
    rnnstate_model_free(model);
    free(bytes);
}

/* ---- files: each test gets a fresh directory and the small model, loaded ---- */

typedef struct io_fixture {
    char *dir;
    unsigned char *bytes; /* small_model_bytes() */
    size_t size;
    rnnstate_model *model; /* loaded from bytes */
} io_fixture;

static int io_setup(void **state)
{
    io_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->dir = mb_temp_dir();
    f->bytes = small_model_bytes(&f->size);
    f->model = load_ok(f->bytes, f->size);
    *state = f;
    return 0;
}

/* Removes what the test left in the directory (files, empty directories). */
static int io_teardown(void **state)
{
    io_fixture *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char *path = mb_path_in(f->dir, e->d_name);
            remove(path);
            free(path);
        }
    if (d)
        closedir(d);
    rmdir(f->dir);
    rnnstate_model_free(f->model);
    free(f->bytes);
    free(f->dir);
    free(f);
    return 0;
}

#define IO_TEST(f) cmocka_unit_test_setup_teardown(f, io_setup, io_teardown)

static void assert_listing(const char *dir, const char *expected)
{
    char *listing = dir_listing(dir);
    assert_string_equal(listing, expected);
    free(listing);
}

static void assert_file_holds(const char *path, const unsigned char *bytes, size_t size)
{
    size_t got_size;
    unsigned char *got = mb_read_file(path, &got_size);
    assert_int_equal(got_size, size);
    assert_memory_equal(got, bytes, size);
    free(got);
}

static void test_load_file_that_does_not_exist_fails_with_its_name(void **state)
{
    io_fixture *f = *state;
    char *path = mb_path_in(f->dir, "missing.onnx");
    rnnstate_error err;
    rnnstate_model *model = NULL;
    assert_int_equal(rnnstate_model_load_file(path, NULL, &model, &err), RNNSTATE_ERR_IO);
    assert_null(model);
    assert_non_null(strstr(err.message, path));
    free(path);
}

static void test_load_file_that_is_a_directory_fails(void **state)
{
    io_fixture *f = *state;
    rnnstate_error err;
    rnnstate_model *model = NULL;
    assert_int_equal(rnnstate_model_load_file(f->dir, NULL, &model, &err), RNNSTATE_ERR_IO);
    assert_null(model);
    assert_non_null(strstr(err.message, f->dir));
}

/* ---- saving ------------------------------------------------------------------- */

static void test_save_into_a_missing_directory_fails_and_leaves_no_file(void **state)
{
    io_fixture *f = *state;
    char *missing = mb_path_in(f->dir, "no-such-dir");
    char *path = mb_path_in(missing, "out.onnx");
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_file(f->model, path, NULL, &err), RNNSTATE_ERR_IO);
    assert_int_equal(err.status, RNNSTATE_ERR_IO);
    assert_non_null(strstr(err.message, path));
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    assert_int_not_equal(stat(missing, &st), 0);
    assert_listing(f->dir, "");
    free(path);
    free(missing);
}

static void test_save_writes_the_model_and_leaves_no_temporary_file(void **state)
{
    io_fixture *f = *state;
    char *path = mb_path_in(f->dir, "out.onnx");
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_file(f->model, path, NULL, &err), RNNSTATE_OK);
    assert_listing(f->dir, "out.onnx");
    assert_file_holds(path, f->bytes, f->size);
    free(path);
}

static void test_save_replaces_an_existing_file(void **state)
{
    io_fixture *f = *state;
    char *path = mb_path_in(f->dir, "out.onnx");
    mb_write_file(path, "previous contents", 17);
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_file(f->model, path, NULL, &err), RNNSTATE_OK);
    assert_listing(f->dir, "out.onnx");
    assert_file_holds(path, f->bytes, f->size);
    free(path);
}

static void test_save_over_a_directory_fails_and_removes_its_temporary_file(void **state)
{
    io_fixture *f = *state;
    char *target = mb_path_in(f->dir, "out.onnx");
    assert_int_equal(mkdir(target, 0755), 0);
    rnnstate_error err;
    assert_int_not_equal(rnnstate_model_save_file(f->model, target, NULL, &err), RNNSTATE_OK);
    assert_non_null(strstr(err.message, target));
    assert_listing(f->dir, "out.onnx"); /* the directory, and nothing else */
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    free(target);
}

static void test_save_memory_of_a_loaded_model_is_byte_identical(void **state)
{
    io_fixture *f = *state;
    mb_assert_saves_as(f->model, f->bytes, f->size);
}

/* ---- unknown fields ------------------------------------------------------------ */

static void test_unknown_field_appended_to_model_bytes_survives_a_round_trip(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = small_model_bytes(&size);
    /* field 99, wire type varint, value 42: tag (99 << 3) | 0 = 792 */
    static const unsigned char extra[] = { 0x98, 0x06, 0x2a };
    bytes = realloc(bytes, size + sizeof extra);
    assert_non_null(bytes);
    memcpy(bytes + size, extra, sizeof extra);
    size += sizeof extra;
    rnnstate_model *model = load_ok(bytes, size);
    unsigned char *out;
    size_t out_size;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_save_memory(model, &out, &out_size, &err), RNNSTATE_OK);
    assert_int_equal(out_size, size);
    assert_memory_equal(out, bytes, size);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, out_size, out);
    assert_non_null(m);
    const ProtobufCMessageUnknownField *u = mb_find_unknown(&m->base, 99);
    assert_non_null(u);
    assert_int_equal(u->wire_type, PROTOBUF_C_WIRE_TYPE_VARINT);
    assert_int_equal(u->len, 1);
    assert_int_equal(u->data[0], 42);
    onnx__model_proto__free_unpacked(m, NULL);
    rnnstate_buffer_free(out);
    rnnstate_model_free(model);
    free(bytes);
}

static void test_unknown_fields_in_nested_messages_survive_a_rewrite(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    mb_add_unknown_varint(&m->base, 100, 1);
    mb_add_unknown_varint(&m->graph->base, 101, 2);
    mb_add_unknown_varint(&m->graph->node[0]->base, 102, 3);    /* the GRU itself */
    mb_add_unknown_varint(&m->graph->initializer[0]->base, 103, 4);
    mb_add_unknown_varint(&m->graph->input[0]->base, 104, 5);
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_true(run.report->changed);
    const Onnx__GraphProto *g = run.g;
    const ProtobufCMessageUnknownField *u;
    assert_non_null(u = mb_find_unknown(&run.model->base, 100));
    assert_int_equal(u->data[0], 1);
    assert_non_null(u = mb_find_unknown(&g->base, 101));
    assert_int_equal(u->data[0], 2);
    const Onnx__NodeProto *gru = mb_find_node(g, "gru");
    assert_non_null(gru);
    assert_non_null(u = mb_find_unknown(&gru->base, 102));
    assert_int_equal(u->data[0], 3);
    assert_non_null(u = mb_find_unknown(&mb_find_initializer(g, "W")->base, 103));
    assert_int_equal(u->data[0], 4);
    assert_non_null(u = mb_find_unknown(&mb_find_input(g, "X")->base, 104));
    assert_int_equal(u->data[0], 5);
    mb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_empty_buffer_is_not_a_model),
        cmocka_unit_test(test_load_text_is_not_a_model),
        cmocka_unit_test(test_load_random_bytes_are_not_a_model),
        cmocka_unit_test(test_load_all_ff_bytes_is_not_a_model),
        cmocka_unit_test(test_load_truncated_model_is_not_a_model),
        cmocka_unit_test(test_load_tensor_proto_is_not_a_model),
        cmocka_unit_test(test_load_model_without_graph_is_not_a_model),
        cmocka_unit_test(test_load_model_without_ir_version_is_not_a_model),
        cmocka_unit_test(test_load_without_label_names_memory),
        cmocka_unit_test(test_load_larger_than_the_limit_is_refused),
        cmocka_unit_test(test_load_nesting_deeper_than_the_limit_is_refused),
        IO_TEST(test_load_file_that_does_not_exist_fails_with_its_name),
        IO_TEST(test_load_file_that_is_a_directory_fails),
        IO_TEST(test_save_into_a_missing_directory_fails_and_leaves_no_file),
        IO_TEST(test_save_writes_the_model_and_leaves_no_temporary_file),
        IO_TEST(test_save_replaces_an_existing_file),
        IO_TEST(test_save_over_a_directory_fails_and_removes_its_temporary_file),
        IO_TEST(test_save_memory_of_a_loaded_model_is_byte_identical),
        cmocka_unit_test(test_unknown_field_appended_to_model_bytes_survives_a_round_trip),
        cmocka_unit_test(test_unknown_fields_in_nested_messages_survive_a_rewrite),
    };
    return cmocka_run_group_tests_name("model_io", tests, NULL, NULL);
}
