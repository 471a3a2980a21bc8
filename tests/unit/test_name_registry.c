/* name_registry: fresh names that collide with no name of any graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"
#include "model_builder.h"
#include "name_registry.h"

/* main: Relu 'relu' (X -> a), If 'if' whose then branch holds Identity
 * 'inner' (a -> t) and whose else branch holds Identity (X -> e). */
static rnnstate_model *model_with_branches(void)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "2");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_node(m, "Relu", "relu", "X", "a");
    Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "if_out");
    Onnx__GraphProto *then = mb_attr_graph(iff, "then_branch", "then");
    mb_graph_node(then, "Identity", "inner", "a", "t");
    mb_graph_output(then, "t", MB_FLOAT, NULL);
    Onnx__GraphProto *other = mb_attr_graph(iff, "else_branch", "else");
    mb_graph_node(other, "Identity", "", "X", "e");
    mb_graph_output(other, "e", MB_FLOAT, NULL);
    mb_output(m, "if_out", MB_FLOAT, NULL);
    rnnstate_error err;
    rnnstate_model *model = mb_load(m, &err);
    if (!model)
        fail_msg("%s", err.message);
    return model;
}

typedef struct fixture {
    rnnstate_model *model;
    scope_tree tree;
    name_registry reg;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->model = model_with_branches();
    *state = f;
    if (!scope_tree_build(&f->tree, f->model))
        return -1;
    name_registry_init(&f->reg, &f->tree);
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    name_registry_free(&f->reg);
    scope_tree_free(&f->tree);
    rnnstate_model_free(f->model);
    free(f);
    return 0;
}

static void expect_unique(name_registry *reg, const char *base, const char *expected)
{
    char *name = name_registry_unique(reg, base);
    assert_non_null(name);
    assert_string_equal(name, expected);
    free(name);
}

/* Names are collected when the first one is asked for; values and nodes of
 * every graph are taken, and so is every name handed out. */
static void test_unique_names_avoid_every_graph(void **state)
{
    name_registry *reg = &((fixture *)*state)->reg;
    assert_false(reg->filled);
    assert_int_equal(reg->names.count, 0);
    expect_unique(reg, "fresh", "fresh");
    assert_true(reg->filled);
    expect_unique(reg, "fresh", "fresh_1");   /* handed out before */
    expect_unique(reg, "a", "a_1");           /* a main-graph value */
    expect_unique(reg, "relu", "relu_1");     /* a node */
    expect_unique(reg, "t", "t_1");           /* a value of a branch */
    expect_unique(reg, "inner", "inner_1");   /* a node of a branch */
    expect_unique(reg, "e", "e_1");
    expect_unique(reg, "if_out", "if_out_1"); /* a graph output */
}

/* A registry that hands out nothing collects nothing. */
static void test_nothing_collected_until_asked(void **state)
{
    name_registry *reg = &((fixture *)*state)->reg;
    assert_false(reg->filled);
    assert_null(reg->names.slots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unique_names_avoid_every_graph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_collected_until_asked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
