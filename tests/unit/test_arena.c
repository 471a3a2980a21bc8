/* arena: the bump allocator a model is parsed into, and the rule that no
 * arena piece reaches free() or realloc() (util/arena.h). Under the memcheck
 * variant, a piece handed to free() by mistake is an invalid free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"
#include "model/onnx_build.h"
#include "model_builder.h"
#include "util/arena.h"

static void test_pieces_are_aligned_and_owned(void **state)
{
    (void)state;
    arena *a = arena_new();
    assert_non_null(a);
    char *small = arena_alloc(a, 3), *next = arena_alloc(a, 1);
    char *pair = arena_alloc(a, 2 * sizeof(void *)), *wide = arena_alloc(a, 48);
    char *large = arena_alloc(a, (size_t)8 << 20); /* a chunk of its own */
    assert_non_null(small);
    assert_non_null(next);
    assert_non_null(pair);
    assert_non_null(wide);
    assert_non_null(large);
    /* a piece is aligned as an object of its size must be, no more: a
     * string's bytes follow the one before */
    assert_ptr_equal(next, small + 3);
    assert_int_equal((uintptr_t)pair % _Alignof(void *), 0);
    assert_true(pair >= next + 1);
    assert_int_equal((uintptr_t)wide % _Alignof(max_align_t), 0);
    assert_true(wide >= pair + 2 * sizeof(void *));
    memset(large, 1, (size_t)8 << 20);
    char *heap = malloc(4);
    assert_true(arena_owns(small) && arena_owns(large + ((size_t)8 << 20) - 1));
    assert_false(arena_owns(heap));
    arena_piece_free(small); /* left in place */
    arena_piece_free(heap);  /* free()d */
    assert_false(arena_failed(a));
    arena_free(a);
    assert_false(arena_owns(large));
}

static void test_realloc_copies_out_of_the_arena(void **state)
{
    (void)state;
    arena *a = arena_new();
    int *parsed = arena_alloc(a, 3 * sizeof *parsed);
    for (int i = 0; i < 3; i++)
        parsed[i] = i + 1;
    int *grown = arena_piece_realloc(parsed, 3 * sizeof *parsed, 8 * sizeof *grown);
    assert_non_null(grown);
    assert_false(arena_owns(grown));
    assert_int_equal(grown[2], 3);
    grown = arena_piece_realloc(grown, 8 * sizeof *grown, 16 * sizeof *grown); /* realloc() */
    assert_int_equal(grown[0], 1);
    free(grown);
    arena_free(a);
}

/* A parsed model changed the ways the passes change one: a string replaced,
 * arrays grown, a node removed and freed, a node added; then freed whole. */
static void test_parsed_model_changed_and_freed(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "x", 1, "2");
    mb_output(m, "y", 1, "2");
    mb_node(m, "Identity", "a", "x", "t");
    mb_node(m, "Identity", "b", "t", "y");
    rnnstate_error err;
    rnnstate_model *model = mb_load(m, &err);
    assert_non_null(model);
    Onnx__GraphProto *g = model->proto->graph;
    assert_true(arena_owns(g->node) && arena_owns(g->node[0]->name));
    assert_true(set_string(&g->node[0]->name, "renamed"));
    assert_false(arena_owns(g->node[0]->name));
    assert_true(node_set_input(g->node[1], 2, "z")); /* grows the parsed input array */
    assert_false(arena_owns(g->node[1]->input));
    Onnx__NodeProto *removed = g->node[0];
    g->node[0] = g->node[1];
    g->n_node = 1;
    arena_message_free(&removed->base);
    Onnx__NodeProto *added = node_new("Identity", "c");
    assert_non_null(added);
    assert_true(append_string(&added->input, &added->n_input, "y"));
    assert_true(APPEND_PTR(&g->node, &g->n_node, added));
    assert_int_equal(g->n_node, 2);
    assert_string_equal(g->node[1]->name, "c");
    rnnstate_model_free(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_are_aligned_and_owned),
        cmocka_unit_test(test_realloc_copies_out_of_the_arena),
        cmocka_unit_test(test_parsed_model_changed_and_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
