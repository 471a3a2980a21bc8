/* scope: the tree of a model's graphs, outer-scope lookups, and the queued
 * additions a pass makes to a graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"
#include "model_builder.h"
#include "model/onnx_build.h"
#include "scope.h"

/* main: relu (X -> a), if (then: Identity a -> t, with loop (body: Add
 * a + h -> h_out); else: Identity X -> e), Identity if_out -> out. */
static Onnx__ModelProto *nested_model(void)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "2");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_initializer_filled(m, "W", MB_FLOAT, MB_DIMS(2), 1.0);
    mb_node(m, "Relu", "relu", "X", "a");
    Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "if_out");
    Onnx__GraphProto *then = mb_attr_graph(iff, "then_branch", "then");
    mb_graph_node(then, "Identity", "t_id", "a", "t");
    Onnx__NodeProto *loop = mb_graph_node(then, "Loop", "", ",cond,t", "t_final");
    Onnx__GraphProto *body = mb_attr_graph(loop, "body", "body");
    mb_graph_node(body, "Add", "add", "a,W", "h_out");
    mb_graph_output(body, "h_out", MB_FLOAT, NULL);
    mb_graph_output(then, "t_final", MB_FLOAT, NULL);
    Onnx__GraphProto *other = mb_attr_graph(iff, "else_branch", "else");
    mb_graph_node(other, "Identity", "e_id", "X", "e");
    mb_graph_output(other, "e", MB_FLOAT, NULL);
    mb_node(m, "Identity", "out_id", "if_out", "out");
    mb_output(m, "out", MB_FLOAT, NULL);
    return m;
}

typedef struct fixture {
    rnnstate_model *model;
    scope_tree tree;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    rnnstate_error err;
    bool ok = f && (f->model = mb_load(nested_model(), &err)) != NULL &&
              scope_tree_build(&f->tree, f->model);
    *state = f;
    return ok ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    scope_tree_free(&f->tree);
    rnnstate_model_free(f->model);
    free(f);
    return 0;
}

static void test_tree_in_pre_order(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->tree.n, 4);
    static const char *const paths[] = { "main", "main/if.then_branch",
                                         "main/if.then_branch/Loop.body", "main/if.else_branch" };
    static const bool in_loop[] = { false, false, true, false };
    for (size_t i = 0; i < 4; i++) {
        const scope *s = f->tree.scopes[i];
        assert_string_equal(s->path, paths[i]);
        assert_int_equal(s->in_loop, in_loop[i]);
    }
    const scope *main = f->tree.scopes[0], *then = f->tree.scopes[1], *body = f->tree.scopes[2];
    assert_null(main->parent);
    assert_ptr_equal(then->parent, main);
    assert_int_equal(then->parent_node, 1);
    assert_string_equal(scope_attr_name(then), "then_branch");
    assert_ptr_equal(body->parent, then);
    assert_int_equal(body->parent_node, 1);
    assert_ptr_equal(scope_of_graph(&f->tree, body->graph), body);
    assert_null(scope_of_graph(&f->tree, NULL));
}

/* A name resolves in the nearest scope that defines it. */
static void test_lookup_moves_outwards(void **state)
{
    fixture *f = *state;
    const scope *main = f->tree.scopes[0], *then = f->tree.scopes[1], *body = f->tree.scopes[2];
    const scope *owner = NULL;
    const value_entry *e = scope_lookup(body, "h_out", &owner);
    assert_non_null(e);
    assert_ptr_equal(owner, body);
    e = scope_lookup(body, "a", &owner); /* read by the body, produced in main */
    assert_ptr_equal(owner, main);
    assert_int_equal(e->producer, 0);
    e = scope_lookup(body, "W", &owner);
    assert_ptr_equal(owner, main);
    assert_true(e->initializer >= 0);
    e = scope_lookup(then, "t", &owner);
    assert_ptr_equal(owner, then);
    assert_null(scope_lookup(then, "e", &owner)); /* the sibling branch is not enclosing */
    assert_null(scope_lookup(main, "t", &owner)); /* nor is a branch */
    assert_null(scope_lookup(body, "ghost", &owner));
}

/* If branches, asked of the tree: a branch's If and its sibling; a Loop
 * body and the main graph are no If branch. */
static void test_if_branch_queries(void **state)
{
    fixture *f = *state;
    scope *main = f->tree.scopes[0], *then = f->tree.scopes[1], *body = f->tree.scopes[2],
          *other = f->tree.scopes[3];
    const Onnx__NodeProto *iff = main->graph->node[1];
    assert_true(node_is_if(iff));
    assert_ptr_equal(scope_if_node(then), iff);
    assert_ptr_equal(scope_if_node(other), iff);
    assert_ptr_equal(scope_if_sibling(&f->tree, then), other);
    assert_ptr_equal(scope_if_sibling(&f->tree, other), then);
    assert_ptr_equal(scope_if_branch(&f->tree, iff, 0), then);
    assert_ptr_equal(scope_if_branch(&f->tree, iff, 1), other);
    assert_null(scope_if_node(main));
    assert_null(scope_if_node(body));
    assert_null(scope_if_sibling(&f->tree, body));
    const char *name = NULL;
    bool repeated = true;
    assert_false(if_branch_fault(iff, &name, &repeated));
    assert_null(name);
}

/* One policy for an If's branches: each attribute once, with a graph. */
static void test_if_branch_fault(void **state)
{
    (void)state;
    static const struct {
        const char *attrs; /* t: then_branch, e: else_branch, in order */
        const char *fault;
        bool repeated;
    } cases[] = {
        { "te", NULL, false },          { "et", NULL, false },
        { "t", "else_branch", false },  { "e", "then_branch", false },
        { "", "then_branch", false },   { "tee", "else_branch", true },
        { "ttee", "then_branch", true }, { "etet", "else_branch", true },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Onnx__ModelProto *m = mb_new(8, 17);
        Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "out");
        for (const char *a = cases[i].attrs; *a; a++)
            mb_attr_graph(iff, *a == 't' ? "then_branch" : "else_branch", "g");
        const char *name = NULL;
        bool repeated = false;
        assert_int_equal(if_branch_fault(iff, &name, &repeated), cases[i].fault != NULL);
        if (cases[i].fault) {
            assert_string_equal(name, cases[i].fault);
            assert_int_equal(repeated, cases[i].repeated);
        }
        for (int b = 0; b < 2; b++) {
            size_t n = 0;
            for (const char *a = cases[i].attrs; *a; a++)
                n += *a == "te"[b];
            assert_int_equal(if_branch(iff, b) != NULL, n == 1);
        }
        mb_free(m);
    }
    Onnx__ModelProto *m = mb_new(8, 17);
    Onnx__NodeProto *iff = mb_node(m, "If", "if", "cond", "out");
    assert_true(node_is_if(iff));
    iff->domain = strdup("com.example");
    assert_false(node_is_if(iff));
    mb_free(m);
}

/* Staleness lives in the tree: a changed graph marks its scope and the
 * ones around it, and the tree; a scope is rebuilt alone on request, the
 * whole tree at the next refresh. */
static void test_staleness_marks_enclosing_scopes(void **state)
{
    fixture *f = *state;
    scope *main = f->tree.scopes[0], *then = f->tree.scopes[1], *body = f->tree.scopes[2],
          *other = f->tree.scopes[3];
    scope_mark_changed(&f->tree, body);
    assert_true(body->stale && then->stale && main->stale && f->tree.stale);
    assert_false(other->stale);
    assert_true(scope_refresh(body));
    assert_false(body->stale);
    assert_true(then->stale && f->tree.stale);
    assert_true(scope_tree_refresh(&f->tree));
    assert_false(f->tree.stale || then->stale || main->stale);
    scope_mark_changed(&f->tree, other);
    assert_true(other->stale && main->stale && !then->stale);
    assert_true(scope_tree_refresh(&f->tree));
    assert_false(f->tree.stale || other->stale || main->stale);
}

/* Queued nodes go before the node named, in the order they were queued;
 * pending inputs, outputs and initializers are appended; reindexing sees
 * them. */
static void test_flush_inserts_in_place(void **state)
{
    fixture *f = *state;
    scope *main = f->tree.scopes[0];
    Onnx__NodeProto *first = node_new("Identity", "q1"), *second = node_new("Identity", "q2");
    Onnx__NodeProto *last = node_new("Identity", "q3");
    assert_true(first && second && last);
    assert_true(append_string(&first->input, &first->n_input, "X"));
    assert_true(append_string(&first->output, &first->n_output, "q1_out"));
    assert_true(scope_queue_node(main, 1, first));
    assert_true(scope_queue_node(main, SIZE_MAX, last));
    assert_true(scope_queue_node(main, 1, second));
    dim_info dims[1] = { { .known = true, .value = 2 } };
    assert_true(scope_add_input(main, value_info_new("new_in", MB_FLOAT, dims, 1)));
    assert_true(scope_add_output(main, value_info_new("q1_out", MB_FLOAT, dims, 1)));
    assert_string_equal(mb_node_names(main->graph), "relu,if,out_id"); /* nothing until flushed */
    assert_true(scope_tree_flush(&f->tree));
    assert_true(scope_tree_reindex(&f->tree));
    assert_string_equal(mb_node_names(main->graph), "relu,q1,q2,if,out_id,q3");
    assert_string_equal(mb_input_names(main->graph), "X,cond,new_in");
    assert_string_equal(mb_output_names(main->graph), "out,q1_out");
    const scope *owner;
    const value_entry *e = scope_lookup(f->tree.scopes[2], "q1_out", &owner);
    assert_non_null(e);
    assert_int_equal(e->producer, 1);
    assert_int_equal(e->graph_output, 1);
}

/* The index gives every node's input and output values by position, -1
 * for an empty name. */
static void test_index_gives_node_values(void **state)
{
    fixture *f = *state;
    const graph_index *main = &f->tree.scopes[0]->index, *then = &f->tree.scopes[1]->index;
    assert_string_equal(main->values[graph_index_node_inputs(main, 0)[0]].name, "X");
    assert_string_equal(main->values[graph_index_node_outputs(main, 0)[0]].name, "a");
    assert_string_equal(main->values[graph_index_node_inputs(main, 2)[0]].name, "if_out");
    const int *loop_in = graph_index_node_inputs(then, 1); /* "", cond, t */
    assert_int_equal(loop_in[0], -1);
    assert_string_equal(then->values[loop_in[1]].name, "cond");
    assert_string_equal(then->values[loop_in[2]].name, "t");
    assert_string_equal(then->values[graph_index_node_outputs(then, 1)[0]].name, "t_final");
    assert_null(main->duplicate);
}

/* The kind of a duplicate name the index reports (NULL: none) when the
 * graph declares `extra` on top of X -> Relu -> y. */
static const char *duplicate_kind(const char *extra)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "2");
    mb_initializer_filled(m, "W", MB_FLOAT, MB_DIMS(2), 1.0);
    mb_node(m, "Relu", "relu", "X", "y");
    mb_output(m, "y", MB_FLOAT, NULL);
    if (strstr(extra, "output"))
        mb_output(m, "y", MB_FLOAT, NULL);
    if (strstr(extra, "produced"))
        mb_node(m, "Relu", "again", "X", "y");
    if (strstr(extra, "initializer"))
        mb_initializer_filled(m, "W", MB_FLOAT, MB_DIMS(2), 1.0);
    if (strstr(extra, "input"))
        mb_input(m, "X", MB_FLOAT, "2");
    graph_index gi = GRAPH_INDEX_INIT;
    assert_true(graph_index_build(&gi, m->graph));
    const char *kind = graph_index_duplicate_kind(&gi);
    if (kind)
        assert_non_null(gi.duplicate);
    graph_index_free(&gi);
    mb_free(m);
    return kind;
}

/* Duplicates are reported in the loader's order of precedence: inputs,
 * initializers, values produced (also over an input), outputs. */
static void test_index_reports_duplicates_by_precedence(void **state)
{
    (void)state;
    assert_null(duplicate_kind(""));
    assert_string_equal(duplicate_kind("output"), "graph output");
    assert_string_equal(duplicate_kind("output produced"), "value produced");
    assert_string_equal(duplicate_kind("output produced initializer"), "initializer");
    assert_string_equal(duplicate_kind("output produced initializer input"), "graph input");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_index_gives_node_values, setup, teardown),
        cmocka_unit_test(test_index_reports_duplicates_by_precedence),
        cmocka_unit_test_setup_teardown(test_tree_in_pre_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_moves_outwards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_inserts_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_if_branch_queries, setup, teardown),
        cmocka_unit_test(test_if_branch_fault),
        cmocka_unit_test_setup_teardown(test_staleness_marks_enclosing_scopes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
