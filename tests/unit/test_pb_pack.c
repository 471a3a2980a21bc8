/* pb_pack: the writer's packer gives protobuf_c_message_pack()'s bytes, for
 * every field type ONNX uses (negative int32 and int64, packed runs, strings,
 * bytes, oneofs, unknown fields, nested graphs), whatever room its buffer
 * has at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/pb_pack.h"
#include "model_builder.h"

/* A pb_out over a window of `window` bytes that is moved into `all` when
 * full: a small window makes the packer ask for room and write around it. */
typedef struct test_out {
    pb_out out;
    unsigned char *all;
    size_t len, cap, window;
    unsigned char *win;
} test_out;

static void take(test_out *t, const void *data, size_t size)
{
    if (size == 0) /* an empty window: memcpy() must not see t->all still NULL */
        return;
    if (t->len + size > t->cap) {
        t->cap = (t->len + size) * 2;
        t->all = mb_must(realloc(t->all, t->cap));
    }
    memcpy(t->all + t->len, data, size);
    t->len += size;
}

static void drain(test_out *t)
{
    take(t, t->win, (size_t)(t->out.pos - t->win));
    t->out.pos = t->win;
    t->out.end = t->win + t->window;
}

static bool test_room(pb_out *o, size_t want)
{
    test_out *t = (test_out *)o;
    assert_true(want <= PB_OUT_ROOM && want <= t->window);
    drain(t);
    return true;
}

static bool test_write(pb_out *o, const void *data, size_t size)
{
    test_out *t = (test_out *)o;
    drain(t);
    take(t, data, size);
    return true;
}

/* m packed by pb_pack through a window of each size equals protobuf-c's bytes. */
static void assert_packs_alike(const ProtobufCMessage *m)
{
    size_t size = protobuf_c_message_get_packed_size(m);
    unsigned char *expected = mb_must_malloc(size ? size : 1);
    assert_int_equal(protobuf_c_message_pack(m, expected), size);
    const size_t windows[] = { PB_OUT_ROOM, PB_OUT_ROOM + 7, 4096 };
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
        pb_sizes sizes = PB_SIZES_INIT;
        assert_int_equal(pb_sizes_add(&sizes, m), size);
        assert_false(sizes.oom);
        test_out t = { .out = { .room = test_room, .write = test_write }, .window = windows[w] };
        t.win = mb_must_malloc(t.window);
        t.out.pos = t.win;
        t.out.end = t.win + t.window;
        assert_true(pb_pack(&t.out, &sizes, m));
        drain(&t);
        assert_int_equal(sizes.next, sizes.n); /* every size read, in order */
        assert_int_equal(t.len, size);
        assert_memory_equal(t.all ? t.all : expected, expected, size);
        free(t.all);
        free(t.win);
        pb_sizes_free(&sizes);
    }
    free(expected);
}

/* m packed in two parts, split before each field in turn (as the writer
 * packs a model around its graph's initializers), equals protobuf-c's bytes:
 * the unknown fields come with the last part only. */
static void assert_packs_alike_in_parts(const ProtobufCMessage *m)
{
    size_t size = protobuf_c_message_get_packed_size(m);
    unsigned char *expected = mb_must_malloc(size ? size : 1);
    assert_int_equal(protobuf_c_message_pack(m, expected), size);
    unsigned n = m->descriptor->n_fields;
    for (unsigned at = 0; at < n; at++) { /* the second part ends at the last field */
        pb_sizes sizes = PB_SIZES_INIT;
        assert_int_equal(pb_sizes_add_fields(&sizes, m, 0, at) + pb_sizes_add_fields(&sizes, m, at, n),
                         size);
        test_out t = { .out = { .room = test_room, .write = test_write }, .window = 4096 };
        t.win = mb_must_malloc(t.window);
        t.out.pos = t.win;
        t.out.end = t.win + t.window;
        assert_true(pb_pack_fields(&t.out, &sizes, m, 0, at));
        assert_true(pb_pack_fields(&t.out, &sizes, m, at, n));
        drain(&t);
        assert_int_equal(sizes.next, sizes.n);
        assert_int_equal(t.len, size);
        assert_memory_equal(t.all ? t.all : expected, expected, size);
        free(t.all);
        free(t.win);
        pb_sizes_free(&sizes);
    }
    free(expected);
}

static void empty_model(void **state)
{
    (void)state;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    assert_packs_alike(&m.base);
}

static void small_recurrent_model(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_small_model("GRU", "gru");
    assert_packs_alike(&m->base);
    mb_free(m);
}

/* Every kind of value: negative and large integers take 10-byte varints;
 * packed runs of floats, doubles, int32, int64 and uint64; raw bytes and
 * strings; a dimension's oneof (value or parameter); unknown fields. */
static void every_kind_of_value(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "T,batch,16");
    mb_output(m, "y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "T,?,16");
    const int64_t big[] = { -1, INT64_MIN, INT64_MAX, 0, 127, 128, 300 };
    mb_initializer_int64(m, "ints", MB_DIMS(7), big);
    const float f[] = { 1.5f, -0.0f, 3e38f };
    mb_initializer_float(m, "floats", MB_DIMS(3), f);
    Onnx__TensorProto *t = mb_tensor_shell("mixed", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, MB_DIMS(3));
    t->int32_data = mb_must_malloc(3 * sizeof *t->int32_data);
    t->int32_data[0] = -5;
    t->int32_data[1] = INT32_MIN;
    t->int32_data[2] = 1 << 20;
    t->n_int32_data = 3;
    t->double_data = mb_must_malloc(sizeof *t->double_data);
    t->double_data[0] = -2.25;
    t->n_double_data = 1;
    t->uint64_data = mb_must_malloc(sizeof *t->uint64_data);
    t->uint64_data[0] = UINT64_MAX;
    t->n_uint64_data = 1;
    t->raw_data.data = mb_must_malloc(300);
    memset(t->raw_data.data, 0xab, 300);
    t->raw_data.len = 300;
    t->has_raw_data = true;
    t->doc_string = mb_must(strdup(""));
    mb_initializer(m, t);
    Onnx__NodeProto *n = mb_node(m, "Identity", "id", "x", "y");
    mb_attr_float(n, "alpha", -1.0f);
    mb_attr_int(n, "axis", -3);
    const int64_t ints[] = { -1, 2, 1LL << 40 };
    mb_attr_ints(n, "perm", 3, ints);
    mb_attr_string(n, "mode", "a string longer than one hundred and twenty-seven bytes, so that its "
                              "length takes two bytes of varint on the wire, as the packer must do");
    Onnx__GraphProto *g = mb_attr_graph(n, "body", "inner");
    mb_graph_input(g, "a", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "N");
    mb_graph_output(g, "b", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "N");
    mb_graph_node(g, "Identity", "inner_id", "a", "b");
    mb_add_unknown_varint(&m->base, 1000, UINT64_MAX);
    mb_add_unknown_varint(&n->base, 20, 7);
    mb_add_unknown_varint(&m->graph->base, 900, 5);
    assert_packs_alike(&m->base);
    assert_packs_alike_in_parts(&m->base);
    assert_packs_alike_in_parts(&m->graph->base);
    assert_int_equal(pb_field_index(m->base.descriptor, 7), /* graph */
                     (unsigned)(protobuf_c_message_descriptor_get_field(m->base.descriptor, 7) -
                                m->base.descriptor->fields));
    assert_int_equal(pb_field_index(m->base.descriptor, 999), m->base.descriptor->n_fields);
    mb_free(m);
}

/* A graph of several thousand nodes: lengths of three bytes and more. */
static void large_graph(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "v0", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "1");
    char in[32], out[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(in, sizeof in, "v%d", i);
        snprintf(out, sizeof out, "v%d", i + 1);
        mb_node(m, "Identity", out, in, out);
    }
    mb_output(m, out, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "1");
    assert_packs_alike(&m->base);
    mb_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_model),
        cmocka_unit_test(small_recurrent_model),
        cmocka_unit_test(every_kind_of_value),
        cmocka_unit_test(large_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
