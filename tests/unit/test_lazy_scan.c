/* lazy_scan: the skeleton of a model file, with the large initializers of
 * the main graph left in the file. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/lazy_scan.h"
#include "model_builder.h"

#define MIN_BYTES 1024
enum { BIG = 512 }; /* floats: 2 KiB of data, above MIN_BYTES */

static float big_values[BIG];

/* A file holding `bytes`, opened for reading; unlinked at once. */
static int file_with(const unsigned char *bytes, size_t size)
{
    char path[] = "/tmp/test_lazy_scan.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, bytes, size), (ssize_t)size);
    return fd;
}

typedef struct scanned {
    unsigned char *file;
    size_t size;
    lazy_scan scan;
    Onnx__ModelProto *skeleton; /* the skeleton, unpacked */
} scanned;

static rnnstate_status scan_bytes(unsigned char *bytes, size_t size, scanned *s,
                                  rnnstate_error *err)
{
    s->file = bytes;
    s->size = size;
    int fd = file_with(bytes, size);
    rnnstate_status st = lazy_scan_file(fd, size, MIN_BYTES, "m", &s->scan, err);
    close(fd);
    s->skeleton = st == RNNSTATE_OK
                      ? onnx__model_proto__unpack(NULL, s->scan.skeleton_len,
                                                  s->scan.skeleton)
                      : NULL;
    return st;
}

static void scan_model(Onnx__ModelProto *m, scanned *s)
{
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    rnnstate_error err;
    if (scan_bytes(bytes, size, s, &err) != RNNSTATE_OK)
        fail_msg("%s", err.message);
    assert_non_null(s->skeleton);
}

static void scanned_free(scanned *s)
{
    free(s->file);
    lazy_scan_free(&s->scan);
    if (s->skeleton)
        onnx__model_proto__free_unpacked(s->skeleton, NULL);
}

/* A graph whose initializers are: small (kept), big as raw_data, big as
 * float_data, big as int64_data (packed varints: always decoded); a big one
 * in an If branch (not the main graph: kept). */
static Onnx__ModelProto *model_with_initializers(void)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "T,1,4");
    mb_initializer_filled(m, "small", MB_FLOAT, MB_DIMS(4), 1.0);
    mb_initializer_float(m, "big_raw", MB_DIMS(2, BIG / 2), big_values);
    mb_initializer(m, mb_tensor_float_typed("big_typed", MB_DIMS(BIG), big_values));
    static int64_t ints[BIG];
    Onnx__TensorProto *typed_ints = mb_tensor_int64("big_int64", MB_DIMS(BIG), ints);
    free(typed_ints->raw_data.data);
    typed_ints->raw_data = (ProtobufCBinaryData){ 0, NULL };
    typed_ints->has_raw_data = 0;
    typed_ints->int64_data = calloc(BIG, sizeof *typed_ints->int64_data);
    assert_non_null(typed_ints->int64_data);
    typed_ints->n_int64_data = BIG;
    mb_initializer(m, typed_ints);
    Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "out");
    Onnx__GraphProto *then = mb_attr_graph(iff, "then_branch", "then");
    Onnx__TensorProto *inner = mb_tensor_float("big_inner", MB_DIMS(BIG), big_values);
    then->initializer = malloc(sizeof *then->initializer);
    assert_non_null(then->initializer);
    then->initializer[then->n_initializer++] = inner;
    mb_output(m, "out", MB_FLOAT, NULL);
    return m;
}

static void test_big_initializers_of_the_main_graph_stay_in_the_file(void **state)
{
    (void)state;
    scanned s;
    scan_model(model_with_initializers(), &s);
    const Onnx__GraphProto *g = s.skeleton->graph;
    assert_string_equal(mb_initializer_names(g), "small,big_raw,big_typed,big_int64");
    assert_int_equal(s.scan.n_lazy, 2);
    assert_int_equal(s.scan.lazy[0].index, 1);
    assert_int_equal(s.scan.lazy[1].index, 2);
    /* stubs: every field but the data */
    const Onnx__TensorProto *raw = g->initializer[1], *typed = g->initializer[2];
    assert_string_equal(mb_dims_str(raw), "2,256");
    assert_int_equal(raw->data_type, MB_FLOAT);
    assert_int_equal(raw->raw_data.len, 0);
    assert_string_equal(mb_dims_str(typed), "512");
    assert_int_equal(typed->n_float_data, 0);
    /* kept whole */
    assert_int_equal(g->initializer[0]->raw_data.len, 16);
    assert_int_equal(g->initializer[3]->n_int64_data, BIG);
    const Onnx__GraphProto *then = mb_find_node(g, "if")->attribute[0]->g;
    assert_int_equal(then->initializer[0]->raw_data.len, BIG * 4);
    /* each range is the whole initializer field in the file */
    for (size_t i = 0; i < s.scan.n_lazy; i++) {
        const lazy_range *r = &s.scan.lazy[i];
        assert_true(r->offset + r->length <= s.size);
        Onnx__TensorProto *t = onnx__tensor_proto__unpack(
            NULL, r->length - 3, s.file + r->offset + 3); /* key and a 2-byte length */
        assert_non_null(t);
        assert_string_equal(t->name, i == 0 ? "big_raw" : "big_typed");
        onnx__tensor_proto__free_unpacked(t, NULL);
    }
    scanned_free(&s);
}

static void test_small_model_is_copied_as_is(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "T,1,4");
    mb_initializer_filled(m, "W", MB_FLOAT, MB_DIMS(3, 4), 0.5);
    mb_output(m, "X", MB_FLOAT, NULL);
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    scanned s;
    rnnstate_error err;
    assert_int_equal(scan_bytes(bytes, size, &s, &err), RNNSTATE_OK);
    assert_int_equal(s.scan.n_lazy, 0);
    assert_int_equal(s.scan.skeleton_len, size);
    assert_memory_equal(s.scan.skeleton, bytes, size);
    scanned_free(&s);
}

/* Hostile files: the exact message, and nothing kept. */
typedef struct bad_file {
    const char *why;
    const char *bytes;
    size_t size;
    const char *message;
} bad_file;

#define BYTES(s) s, sizeof(s) - 1
static const bad_file bad_files[] = {
    { "a graph longer than the file", BYTES("\x3a\x10\x00"),
      "m: not an ONNX model: truncated or corrupt (a field at byte 0 runs past its message, file "
      "size 3)" },
    { "wire type 6 in the graph", BYTES("\x3a\x01\x0e"),
      "m: not an ONNX model: unexpected wire type 6 at byte 2" },
    /* graph { initializer { raw_data: wire type 0 } } */
    { "raw_data of the wrong wire type", BYTES("\x3a\x04\x2a\x02\x48\x01"),
      "m: not an ONNX model: corrupt tensor data at byte 4" },
    /* graph { initializer { float_data: 3 bytes, not whole floats } } */
    { "float_data of 3 bytes", BYTES("\x3a\x07\x2a\x05\x22\x03\x00\x00\x00"),
      "m: not an ONNX model: corrupt tensor data at byte 4" },
};

static void test_bad_file(void **state)
{
    const bad_file *c = *state;
    unsigned char *bytes = malloc(c->size);
    assert_non_null(bytes);
    memcpy(bytes, c->bytes, c->size);
    scanned s;
    rnnstate_error err = { 0 };
    rnnstate_status st = scan_bytes(bytes, c->size, &s, &err);
    if (st != RNNSTATE_ERR_NOT_MODEL || strcmp(err.message, c->message) != 0)
        fail_msg("%s: status %d '%s', expected '%s'", c->why, (int)st, err.message, c->message);
    assert_int_equal(s.scan.n_lazy, 0);
    assert_null(s.scan.lazy);
    scanned_free(&s);
}

#define N_BAD (sizeof bad_files / sizeof bad_files[0])

int main(void)
{
    for (int i = 0; i < BIG; i++)
        big_values[i] = (float)i * 0.25f;
    struct CMUnitTest tests[N_BAD + 2];
    tests[0] = (struct CMUnitTest)cmocka_unit_test(
        test_big_initializers_of_the_main_graph_stay_in_the_file);
    tests[1] = (struct CMUnitTest)cmocka_unit_test(test_small_model_is_copied_as_is);
    for (size_t i = 0; i < N_BAD; i++)
        tests[i + 2] = (struct CMUnitTest){ .name = bad_files[i].why, .test_func = test_bad_file,
                                            .initial_state = (void *)&bad_files[i] };
    return _cmocka_run_group_tests("lazy_scan", tests, N_BAD + 2, NULL, NULL);
}
