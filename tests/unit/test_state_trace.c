/* state/trace.c: where an initial state comes from, where a final state goes,
 * and what a dimension is. Each case is a small graph around one value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"
#include "model_builder.h"
#include "scope.h"
#include "state/trace.h"

typedef struct traced {
    rnnstate_model *model;
    scope_tree tree;
} traced;

/* Loads `m` (freed) and builds its scopes; fails the test on error. */
static void trace_open(Onnx__ModelProto *m, traced *t)
{
    rnnstate_error err;
    if (!(t->model = mb_load(m, &err)))
        fail_msg("%s", err.message);
    assert_true(scope_tree_build(&t->tree, t->model));
}

static void trace_close(traced *t)
{
    scope_tree_free(&t->tree);
    rnnstate_model_free(t->model);
}

/* Every graph: X [T,batch,3] and state input "state" [2,batch,4]; each case
 * adds the nodes that produce "h" and, where it matters, an If whose
 * then-branch reads "h" as "inner". */
static Onnx__ModelProto *base(void)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "state", MB_FLOAT, "2,batch,4");
    return m;
}

static void h_graph_input(Onnx__ModelProto *m) { mb_input(m, "h", MB_FLOAT, "1,batch,4"); }
static void h_initializer(Onnx__ModelProto *m)
{
    mb_initializer_filled(m, "h", MB_FLOAT, MB_DIMS(1, 2, 4), 0.5);
}
static void h_expand_of_zeros(Onnx__ModelProto *m)
{
    mb_initializer_filled(m, "zero", MB_FLOAT, MB_DIMS(1, 1, 4), 0.0);
    mb_initializer_int64(m, "shape", MB_DIMS(3), (int64_t[]){ 1, 2, 4 });
    mb_node(m, "Expand", "expand", "zero,shape", "h");
}
static void h_expand_of_pattern(Onnx__ModelProto *m)
{
    mb_initializer_float(m, "pattern", MB_DIMS(1, 1, 4), (float[]){ 1, 2, 3, 4 });
    mb_initializer_int64(m, "shape", MB_DIMS(3), (int64_t[]){ 1, 2, 4 });
    mb_node(m, "Expand", "expand", "pattern,shape", "h");
}
static void h_slice_of_state(Onnx__ModelProto *m)
{
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Slice", "slice", "state,s0,s1,s0", "h");
}
static void h_from_data(Onnx__ModelProto *m) { mb_node(m, "ReduceMean", "mean", "X", "h"); }

/* Zeros through `n` Identity nodes id0 .. id<n-1>, the last writing h. */
static void zeros_through_identities(Onnx__ModelProto *m, int n)
{
    mb_initializer_filled(m, "zero", MB_FLOAT, MB_DIMS(1, 2, 4), 0.0);
    char in[16] = "zero", out[16], name[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "id%d", i);
        snprintf(out, sizeof out, i == n - 1 ? "h" : "v%d", i);
        mb_node(m, "Identity", name, in, out);
        snprintf(in, sizeof in, "%s", out);
    }
}
static void h_zeros_near(Onnx__ModelProto *m) { zeros_through_identities(m, MAX_TRACE_DEPTH - 1); }
static void h_zeros_too_far(Onnx__ModelProto *m) { zeros_through_identities(m, 100); }

typedef struct initial_case {
    const char *why;
    void (*build)(Onnx__ModelProto *m);
    const char *value; /* "" for an empty slot */
    state_source_kind kind;
    const char *input;   /* GRAPH_INPUT, INITIALIZER, VIEW_OF_INPUT */
    const char *node;    /* CONSTANT, DATA_DEPENDENT: the node named */
    bool via_expand, uniform;
    bool too_far; /* DATA_DEPENDENT: only because the walk reached its bound */
} initial_case;

static const initial_case initial_cases[] = {
    { "an empty slot", NULL, "", SOURCE_ABSENT, NULL, NULL, false, false, false },
    { "a graph input", h_graph_input, "h", SOURCE_GRAPH_INPUT, "h", NULL, false, false, false },
    { "an initializer", h_initializer, "h", SOURCE_INITIALIZER, "h", NULL, false, false, false },
    { "an Expand of zeros", h_expand_of_zeros, "h", SOURCE_CONSTANT, NULL, "expand", true, true, false },
    { "an Expand of a pattern", h_expand_of_pattern, "h", SOURCE_CONSTANT, NULL, "expand", true,
      false, false },
    { "a Slice of a graph input", h_slice_of_state, "h", SOURCE_VIEW_OF_INPUT, "state", NULL,
      false, false, false },
    { "computed from data", h_from_data, "h", SOURCE_DATA_DEPENDENT, NULL, "mean", false, false, false },
    { "zeros through 63 Identity nodes", h_zeros_near, "h", SOURCE_CONSTANT, NULL, "id62", false,
      true, false },
    /* the walk stops at the 64th node back: id36 of id0 .. id99 */
    { "zeros through 100 Identity nodes", h_zeros_too_far, "h", SOURCE_DATA_DEPENDENT, NULL, "id36",
      false, false, true },
};

static void test_initial_case(void **state)
{
    const initial_case *c = *state;
    Onnx__ModelProto *m = base();
    if (c->build)
        c->build(m);
    traced t;
    trace_open(m, &t);
    state_source src;
    assert_true(trace_initial_state(&t.tree, t.tree.scopes[0], c->value, &src));
    if (src.kind != c->kind)
        fail_msg("%s: kind %d, expected %d", c->why, (int)src.kind, (int)c->kind);
    if (c->input)
        assert_string_equal(src.input, c->input);
    if (c->node)
        assert_string_equal(src.node->name, c->node);
    assert_int_equal(src.via_expand, c->via_expand);
    assert_int_equal(src.uniform, c->uniform);
    assert_int_equal(src.too_far, c->too_far);
    if (c->kind == SOURCE_INITIALIZER)
        assert_ptr_equal(src.owner, t.tree.scopes[0]);
    /* a constant or a view names the ops it was traced through */
    if (c->kind == SOURCE_CONSTANT || c->kind == SOURCE_VIEW_OF_INPUT)
        assert_non_null(src.chain);
    state_source_clear(&src);
    trace_close(&t);
}

/* A branch reading a main-graph input sees it as that graph input. */
static void test_initial_state_from_inside_a_branch(void **state)
{
    (void)state;
    Onnx__ModelProto *m = base();
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "if_out");
    mb_identity_branch(iff, "then_branch", "then", "id", "state", "t");
    mb_identity_branch(iff, "else_branch", "else", "id2", "state", "e");
    mb_output(m, "if_out", MB_FLOAT, NULL);
    traced t;
    trace_open(m, &t);
    state_source src;
    assert_true(trace_initial_state(&t.tree, t.tree.scopes[1], "state", &src));
    assert_int_equal(src.kind, SOURCE_GRAPH_INPUT);
    assert_string_equal(src.input, "state");
    /* the branch's output reaches the main graph through the If */
    assert_string_equal(trace_final_state(&t.tree, t.tree.scopes[1], "t", false), "if_out");
    state_source_clear(&src);
    trace_close(&t);
}

typedef struct final_case {
    const char *why;
    const char *ops; /* the ops from "h" to the graph output, comma-separated */
    bool direct;
    bool reaches; /* trace_final_state finds that output */
} final_case;

static const final_case final_cases[] = {
    { "h is the output", "", false, true },
    { "h is the output, direct", "", true, true },
    { "through Identity", "Identity", false, true },
    { "through Identity, direct", "Identity", true, false },
    { "through Identity and Cast", "Identity,Cast", false, true },
    { "through Relu (it computes)", "Relu", false, false },
};

/* "h" (computed from X) through c->ops to the graph output, named "v<i>"
 * after the i-th op ("h" itself without ops). */
static void test_final_case(void **state)
{
    const final_case *c = *state;
    Onnx__ModelProto *m = base();
    mb_node(m, "ReduceMean", "mean", "X", "h");
    char value[16] = "h";
    for (const char *p = c->ops; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        char op[16], next[16];
        snprintf(op, sizeof op, "%.*s", (int)strcspn(p, ","), p);
        snprintf(next, sizeof next, "v%zu", m->graph->n_node - 1);
        Onnx__NodeProto *n = mb_node(m, op, NULL, value, next);
        if (!strcmp(op, "Cast"))
            mb_attr_int(n, "to", MB_FLOAT);
        strcpy(value, next);
    }
    mb_output(m, value, MB_FLOAT, NULL);
    traced t;
    trace_open(m, &t);
    const char *reached = trace_final_state(&t.tree, t.tree.scopes[0], "h", c->direct);
    if (c->reaches)
        assert_string_equal(reached, value);
    else
        assert_null(reached);
    trace_close(&t);
}

/* Dimensions: declared, carried through shape-preserving ops, moved by
 * Transpose, unknown where nothing says. */
static void test_infer_dim(void **state)
{
    (void)state;
    Onnx__ModelProto *m = base();
    mb_node(m, "Relu", "relu", "X", "r");
    Onnx__NodeProto *tr = mb_node(m, "Transpose", "tr", "r", "t");
    mb_attr_ints(tr, "perm", 3, (int64_t[]){ 1, 0, 2 });
    mb_node(m, "NonZero", "nz", "X", "nz_out");
    mb_output(m, "t", MB_FLOAT, NULL);
    traced t;
    trace_open(m, &t);
    const scope *s = t.tree.scopes[0];
    dim_info d = { 0 }; /* infer_dim clears it first */
    assert_true(infer_dim(s, "X", 1, &d));
    assert_true(d.known);
    assert_string_equal(d.param, "batch");
    dim_info_clear(&d);
    assert_true(infer_dim(s, "r", 2, &d));
    assert_true(d.known && !d.param);
    assert_int_equal(d.value, 3);
    dim_info_clear(&d);
    assert_true(infer_dim(s, "t", 0, &d)); /* Transpose: axis 0 is X's axis 1 */
    assert_string_equal(d.param, "batch");
    dim_info_clear(&d);
    assert_true(infer_dim(s, "nz_out", 0, &d));
    assert_false(d.known);
    dim_info_clear(&d);
    assert_int_equal(declared_elem_type(s, "state"), MB_FLOAT);
    assert_int_equal(declared_elem_type(s, "r"), 0);
    trace_close(&t);
}

/* A chain of `n` nodes of op `op` (one input each, or the value twice for
 * a two-input op) from X to "end". */
static Onnx__ModelProto *chain_of(const char *op, bool twice, size_t n)
{
    Onnx__ModelProto *m = base();
    char in[64] = "X", out[64], inputs[160], name[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(out, sizeof out, i + 1 == n ? "end" : "v%zu", i);
        snprintf(name, sizeof name, "n%zu", i);
        snprintf(inputs, sizeof inputs, twice ? "%s,%s" : "%s", in, in);
        mb_node(m, op, name, inputs, out);
        memcpy(in, out, sizeof in);
    }
    mb_output(m, "end", MB_FLOAT, NULL);
    return m;
}

/* Issue 24: no depth cut-off. Asked first from the far end of a chain far
 * deeper than a walk's stack allows (so every answer on the way is
 * deferred and answered in rounds), rank, dimensions and the time axis
 * trace back to X; then every value of the chain answers at once. */
static void test_a_deep_chain_is_followed_to_its_end(void **state)
{
    (void)state;
    traced t;
    trace_open(chain_of("Relu", false, 20000), &t);
    const scope *s = t.tree.scopes[0];
    const char *input = NULL;
    int64_t axis = -1;
    assert_true(trace_axis_to_input(s, "end", 0, &input, &axis));
    assert_non_null(input);
    assert_string_equal(input, "X");
    assert_int_equal(axis, 0);
    assert_int_equal(infer_rank(s, "end"), 3);
    dim_info d = { 0 };
    assert_true(infer_dim(s, "end", 1, &d));
    assert_true(d.known);
    assert_string_equal(d.param, "batch");
    assert_true(infer_dim(s, "end", 2, &d));
    assert_true(d.known && !d.param);
    assert_int_equal(d.value, 3);
    assert_true(infer_dim(s, "v5000", 2, &d));
    assert_int_equal(d.value, 3);
    dim_info_clear(&d);
    assert_true(trace_axis_to_input(s, "v17777", 0, &input, &axis));
    assert_string_equal(input, "X");
    trace_close(&t);
}

/* Add(v, v) reads every value twice: 2^N paths, each value walked once
 * per round, whatever the depth. */
static void test_a_deep_chain_read_twice_is_walked_once(void **state)
{
    (void)state;
    traced t;
    trace_open(chain_of("Add", true, 5000), &t);
    const scope *s = t.tree.scopes[0];
    const char *input = NULL;
    int64_t axis = -1;
    assert_true(trace_axis_to_input(s, "end", 0, &input, &axis));
    assert_non_null(input);
    assert_string_equal(input, "X");
    assert_int_equal(infer_rank(s, "end"), 3);
    dim_info d = { 0 };
    assert_true(infer_dim(s, "end", 2, &d));
    assert_int_equal(d.value, 3);
    dim_info_clear(&d);
    trace_close(&t);
}

/* An invalid graph: a cycle of 500 Relus fed by nothing else. Every
 * question ends, answered "not known". */
static void test_a_deep_cycle_ends_not_known(void **state)
{
    (void)state;
    Onnx__ModelProto *m = base();
    char in[32], out[32], name[32];
    for (size_t i = 0; i < 500; i++) {
        snprintf(in, sizeof in, "c%zu", (i + 499) % 500);
        snprintf(out, sizeof out, "c%zu", i);
        snprintf(name, sizeof name, "n%zu", i);
        mb_node(m, "Relu", name, in, out);
    }
    mb_output(m, "c0", MB_FLOAT, NULL);
    traced t;
    trace_open(m, &t);
    const scope *s = t.tree.scopes[0];
    const char *input = NULL;
    int64_t axis = -1;
    assert_true(trace_axis_to_input(s, "c250", 0, &input, &axis));
    assert_null(input);
    assert_int_equal(infer_rank(s, "c0"), -1);
    dim_info d = { 0 };
    assert_true(infer_dim(s, "c7", 1, &d));
    assert_false(d.known);
    assert_int_equal(infer_rank(s, "c499"), -1);
    trace_close(&t);
}

#define N_INITIAL (sizeof initial_cases / sizeof initial_cases[0])
#define N_FINAL (sizeof final_cases / sizeof final_cases[0])

int main(void)
{
    struct CMUnitTest tests[N_INITIAL + N_FINAL + 5];
    size_t n = 0;
    for (size_t i = 0; i < N_INITIAL; i++)
        tests[n++] = (struct CMUnitTest){ .name = initial_cases[i].why,
                                          .test_func = test_initial_case,
                                          .initial_state = (void *)&initial_cases[i] };
    for (size_t i = 0; i < N_FINAL; i++)
        tests[n++] = (struct CMUnitTest){ .name = final_cases[i].why,
                                          .test_func = test_final_case,
                                          .initial_state = (void *)&final_cases[i] };
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_initial_state_from_inside_a_branch);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_infer_dim);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_a_deep_chain_is_followed_to_its_end);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_a_deep_chain_read_twice_is_walked_once);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_a_deep_cycle_ends_not_known);
    return _cmocka_run_group_tests("state_trace", tests, n, NULL, NULL);
}
