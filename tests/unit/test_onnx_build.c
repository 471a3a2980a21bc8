/* onnx_build: the one place that builds model pieces. Its text forms (comma
 * lists, shapes) and what each constructor leaves in the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"
#include "model/onnx_build.h"

typedef struct list_case {
    const char *list;
    size_t n;
    const char *joined; /* the names joined with '|' */
} list_case;

static const list_case list_cases[] = {
    { NULL, 0, "" },           { "", 0, "" },         { "X", 1, "X" },
    { "X,W,R", 3, "X|W|R" },   { "X,W,R,,,h0", 6, "X|W|R|||h0" },
    { ",W", 2, "|W" },         { "Y,", 2, "Y|" },      { ",", 2, "|" },
};

static void test_append_list(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof list_cases / sizeof list_cases[0]; c++) {
        char **names = NULL;
        size_t n = 0;
        assert_true(append_list(&names, &n, list_cases[c].list));
        char joined[64] = "";
        for (size_t i = 0; i < n; i++) {
            strcat(joined, i ? "|" : "");
            strcat(joined, names[i]);
            free(names[i]);
        }
        free(names);
        if (n != list_cases[c].n || strcmp(joined, list_cases[c].joined) != 0)
            fail_msg("'%s': %zu names '%s', expected %zu '%s'", list_cases[c].list, n, joined,
                     list_cases[c].n, list_cases[c].joined);
    }
}

typedef struct shape_case {
    const char *dims;
    const char *shape; /* mb_shape_str of the result */
} shape_case;

static const shape_case shape_cases[] = {
    { "T,batch,3", "T,batch,3" },
    { "1,?,4", "1,?,4" },
    { "-5,-3,4", "-5,-3,4" },
    { "", "" }, /* rank 0: a scalar */
    { NULL, "<none>" },
    { "a_symbolic_dimension_name_longer_than_sixty_four_characters_is_kept_whole",
      "a_symbolic_dimension_name_longer_than_sixty_four_characters_is_kept_whole" },
};

static void test_value_info_from_text(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof shape_cases / sizeof shape_cases[0]; c++) {
        Onnx__ValueInfoProto *vi = value_info_from_text("v", MB_FLOAT, shape_cases[c].dims);
        assert_non_null(vi);
        assert_string_equal(vi->name, "v");
        assert_int_equal(mb_elem_type(vi), MB_FLOAT);
        assert_string_equal(mb_shape_str(vi), shape_cases[c].shape);
        protobuf_c_message_free_unpacked(&vi->base, NULL);
    }
    Onnx__ValueInfoProto *bare = value_info_from_text(NULL, -1, "1,2");
    assert_non_null(bare);
    assert_null(bare->name);
    assert_null(bare->type);
    protobuf_c_message_free_unpacked(&bare->base, NULL);
}

static void test_value_info_copy_keeps_the_type(void **state)
{
    (void)state;
    Onnx__ValueInfoProto *src = value_info_from_text("h0", MB_FLOAT16, "1,batch,8");
    Onnx__ValueInfoProto *copy = value_info_copy(src, "h1");
    assert_non_null(copy);
    assert_string_equal(copy->name, "h1");
    assert_int_equal(mb_elem_type(copy), MB_FLOAT16);
    assert_string_equal(mb_shape_str(copy), "1,batch,8");
    assert_ptr_not_equal(copy->type, src->type);
    protobuf_c_message_free_unpacked(&src->base, NULL);
    protobuf_c_message_free_unpacked(&copy->base, NULL);
}

static void test_model_and_node_constructors(void **state)
{
    (void)state;
    Onnx__ModelProto *m = model_new(8, 17, "tester", "g");
    assert_non_null(m);
    assert_int_equal(m->ir_version, 8);
    assert_string_equal(m->producer_name, "tester");
    assert_int_equal(m->n_opset_import, 1);
    assert_string_equal(m->opset_import[0]->domain, "");
    assert_int_equal(m->opset_import[0]->version, 17);
    assert_string_equal(m->graph->name, "g");

    Onnx__NodeProto *n = node_new("Transpose", NULL);
    assert_non_null(n);
    assert_null(n->name);
    assert_true(node_add_ints_attr(n, "perm", (const int64_t[]){ 1, 0, 2 }, 3));
    assert_true(node_add_float_attr(n, "alpha", 0.5f));
    assert_true(node_add_string_attr(n, "direction", "reverse"));
    assert_true(node_add_graph_attr(n, "body", graph_new("body")));
    assert_int_equal(n->n_attribute, 4);
    assert_int_equal(n->attribute[0]->n_ints, 3);
    assert_int_equal(n->attribute[0]->ints[2], 2);
    assert_true(n->attribute[1]->has_f && n->attribute[1]->f == 0.5f);
    char buf[16];
    assert_string_equal(node_attr_string(n, "direction", buf, sizeof buf), "reverse");
    assert_string_equal(n->attribute[3]->g->name, "body");
    /* a value field without its type makes ONNX drop the attribute's type */
    static const Onnx__AttributeProto__AttributeType types[] = {
        ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT,
        ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH
    };
    for (size_t i = 0; i < n->n_attribute; i++) {
        assert_true(n->attribute[i]->has_type);
        assert_int_equal(n->attribute[i]->type, types[i]);
    }
    assert_true(APPEND_PTR(&m->graph->node, &m->graph->n_node, n));

    Onnx__TensorProto *t = tensor_shell_new(NULL, MB_INT64, (const int64_t[]){ 2, 3 }, 2);
    assert_non_null(t);
    assert_null(t->name);
    assert_string_equal(mb_dims_str(t), "2,3");
    assert_int_equal(t->raw_data.len, 0);
    protobuf_c_message_free_unpacked(&t->base, NULL);

    Onnx__StringStringEntryProto *e = string_entry_new("rnnstate.state");
    assert_non_null(e);
    assert_string_equal(e->key, "rnnstate.state");
    assert_null(e->value);
    assert_true(APPEND_PTR(&m->metadata_props, &m->n_metadata_props, e));
    /* everything is malloc'd: free_unpacked releases the whole model */
    protobuf_c_message_free_unpacked(&m->base, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_list),
        cmocka_unit_test(test_value_info_from_text),
        cmocka_unit_test(test_value_info_copy_keeps_the_type),
        cmocka_unit_test(test_model_and_node_constructors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
