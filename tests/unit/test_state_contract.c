/* The promise every state pair makes (issue 9, items 6-8): its input and
 * output have one element type and shape, it says which axis is the batch,
 * every model with pairs records them in its metadata (an already-stateful
 * one is "annotated"), a second run changes nothing, and only nodes the tool
 * exposes are warned about a fixed sequence length. Each test runs the whole
 * public pipeline and asserts exact results. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"

#define H 4 /* hidden_size */
#define I 3 /* input size of X */

static const char *metadata_state(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (!strcmp(m->metadata_props[i]->key, RNNSTATE_METADATA_KEY))
            return m->metadata_props[i]->value;
    return NULL;
}

/* A GRU reading its state from graph input h0 and writing it to output hn,
 * with `seq` time steps ("T" for a dynamic time axis). */
static Onnx__ModelProto *stateful_gru(const char *seq, int32_t h0_type, const char *hn_shape)
{
    char x_shape[32], y_shape[32];
    snprintf(x_shape, sizeof x_shape, "%s,batch,3", seq);
    snprintf(y_shape, sizeof y_shape, "%s,1,batch,4", seq);
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, x_shape);
    mb_input(m, "h0", h0_type, "1,batch,4");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R,,,h0", "Y,hn");
    mb_output(m, "Y", MB_FLOAT, y_shape);
    mb_output(m, "hn", MB_FLOAT, hn_shape);
    return m;
}

/* ---- item 6: element type and shape --------------------------------------- */

static void test_state_input_of_another_type_is_not_paired(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT16, "1,batch,4");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R,,,h0", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    const rnnstate_node_report *n = mb_report_node(run.report, "gru");
    assert_int_equal(n->status, RNNSTATE_NODE_SKIPPED);
    assert_string_equal(n->reason, "the state pair of initial_h would not fit: input 'h0' is "
                                   "float16 [1,batch,4], output (new) is float32 [1,batch,4]; "
                                   "not exposed");
    assert_int_equal(run.report->n_pairs, 0);
    assert_false(run.report->changed);
    assert_false(run.report->annotated);
    assert_int_equal(run.model->n_metadata_props, 0);
    mb_run_free(&run);
}

static void test_state_output_of_another_shape_is_not_paired(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(stateful_gru("T", MB_FLOAT, "2,batch,4"), NULL, &run);

    const rnnstate_node_report *n = mb_report_node(run.report, "gru");
    assert_int_equal(n->status, RNNSTATE_NODE_SKIPPED);
    assert_string_equal(n->reason, "the state pair of initial_h would not fit: input 'h0' is "
                                   "float32 [1,batch,4], output 'hn' is float32 [2,batch,4]; "
                                   "not exposed");
    assert_int_equal(run.report->n_pairs, 0);
    mb_run_free(&run);
}

/* ---- item 6: the batch axis ------------------------------------------------- */

static void test_new_pair_in_layout_0_has_batch_axis_1(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_pairs_str(run.report), "GRU_0_initial_h->GRU_0_Y_h:1,batch,4:float32:1");
    assert_string_equal(metadata_state(run.model),
                        "[{\"input\": \"GRU_0_initial_h\", \"output\": \"GRU_0_Y_h\", \"shape\": "
                        "[1, \"batch\", 4], \"dtype\": \"float32\", \"batch_axis\": 1, "
                        "\"optional\": true, \"kind\": \"recurrent\"}]");
    mb_run_free(&run);
}

static void test_new_pair_batch_first_has_batch_axis_0(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "batch,T,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_attr_int(mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y"), "layout", 1);
    mb_output(m, "Y", MB_FLOAT, "batch,T,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_pairs_str(run.report), "GRU_0_initial_h->GRU_0_Y_h:batch,1,4:float32:0");
    mb_run_free(&run);
}

/* Silero-like: h and c are views of stacked states [layers, batch, hidden]. */
static void test_stack_of_states_read_through_views_has_batch_axis_1(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "h", MB_FLOAT, "2,1,4");
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_initializer_int64(m, "s2", MB_DIMS(1), (int64_t[]){ 2 });
    mb_node(m, "Slice", "slice_0", "h,s0,s1,s0", "h_0");
    mb_node(m, "Slice", "slice_1", "h,s1,s2,s0", "h_1");
    mb_weights(m, MB_FLOAT, "W0", "R0", 1, 3, H, I, 0.1);
    mb_weights(m, MB_FLOAT, "W1", "R1", 1, 3, H, H, 0.1);
    mb_recurrent(m, "GRU", "gru_0", H, NULL, "X,W0,R0,,,h_0", "Y0,hn_0");
    mb_node(m, "Squeeze", "squeeze", "Y0,s1", "X1");
    mb_recurrent(m, "GRU", "gru_1", H, NULL, "X1,W1,R1,,,h_1", "Y1,hn_1");
    mb_attr_int(mb_node(m, "Concat", "concat", "hn_0,hn_1", "hn"), "axis", 0);
    mb_output(m, "Y1", MB_FLOAT, NULL);
    mb_output(m, "hn", MB_FLOAT, "2,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_pairs_str(run.report), "h->hn:2,1,4:float32:1");
    mb_run_free(&run);
}

/* DTLN-like: a packed cache [1, layers, hidden, h/c]; no axis is known to
 * be the batch. */
static void test_packed_cache_has_no_batch_axis(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "cache", MB_FLOAT, "1,1,4,1");
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s3", MB_DIMS(1), (int64_t[]){ 3 });
    mb_initializer_int64(m, "shape3", MB_DIMS(3), (int64_t[]){ 1, 1, 4 });
    mb_initializer_int64(m, "shape4", MB_DIMS(4), (int64_t[]){ 1, 1, 4, 1 });
    mb_node(m, "Squeeze", "squeeze_cache", "cache,s3", "c3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R,,,c3", "Y,hn");
    mb_node(m, "Unsqueeze", "unsqueeze_hn", "hn,s3", "cache_out");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_output(m, "cache_out", MB_FLOAT, "1,1,4,1");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_pairs_str(run.report), "cache->cache_out:1,1,4,1:float32:-1");
    assert_non_null(strstr(metadata_state(run.model), "\"batch_axis\": null"));
    mb_run_free(&run);
}

/* X computed from input x [batch_size, 2, T, 5] by a gated convolution
 * (Conv, Sigmoid, Mul), a ReduceMax and a Transpose: the state's batch is
 * x's batch_size, not a name made up for it. */
static void test_batch_is_named_after_x_through_conv_reduce_and_gating(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT, "batch_size,2,T,5");
    mb_initializer_filled(m, "conv_w", MB_FLOAT, MB_DIMS(I, 2, 1, 1), 0.1);
    mb_node(m, "Conv", "conv", "x,conv_w", "c");
    mb_node(m, "Sigmoid", "gate", "c", "g");
    mb_node(m, "Mul", "gated", "c,g", "cg");
    Onnx__NodeProto *reduce = mb_node(m, "ReduceMax", "pool_f", "cg", "r");
    mb_attr_ints(reduce, "axes", 1, (int64_t[]){ 3 });
    mb_attr_int(reduce, "keepdims", 0);
    mb_attr_ints(mb_node(m, "Transpose", "time_major", "r", "X"), "perm", 3,
                 (int64_t[]){ 2, 0, 1 });
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_pairs_str(run.report),
                        "GRU_0_initial_h->GRU_0_Y_h:1,batch_size,4:float32:1");
    mb_run_free(&run);
}

/* ---- item 7: metadata on every model with pairs, idempotent ----------------- */

static void test_already_stateful_model_is_annotated_and_a_second_run_changes_nothing(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(stateful_gru("T", MB_FLOAT, "1,batch,4"), NULL, &run);

    assert_false(run.report->changed);
    assert_true(run.report->annotated);
    assert_int_equal(mb_report_node(run.report, "gru")->status, RNNSTATE_NODE_ALREADY_EXPOSED);
    assert_string_equal(mb_pairs_str(run.report), "h0->hn:1,batch,4:float32:1");
    assert_string_equal(metadata_state(run.model),
                        "[{\"input\": \"h0\", \"output\": \"hn\", \"shape\": [1, \"batch\", 4], "
                        "\"dtype\": \"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}]");
    /* the graph is the one that went in */
    assert_string_equal(mb_input_names(run.g), "X,h0");
    assert_string_equal(mb_output_names(run.g), "Y,hn");
    assert_string_equal(mb_node_ops(run.g), "GRU");

    mb_run again;
    mb_rewrite_bytes(run.out, run.out_size, NULL, &again);
    assert_false(again.report->changed);
    assert_false(again.report->annotated);
    assert_int_equal(again.out_size, run.out_size);
    assert_memory_equal(again.out, run.out, run.out_size);
    mb_run_free(&again);
    mb_run_free(&run);
}

static void test_stale_metadata_is_replaced(void **state)
{
    (void)state;
    Onnx__ModelProto *m = stateful_gru("T", MB_FLOAT, "1,batch,4");
    Onnx__StringStringEntryProto *e = malloc(sizeof *e);
    assert_non_null(e);
    onnx__string_string_entry_proto__init(e);
    e->key = strdup(RNNSTATE_METADATA_KEY);
    e->value = strdup("[]");
    m->metadata_props = malloc(sizeof *m->metadata_props);
    assert_non_null(m->metadata_props);
    m->metadata_props[0] = e;
    m->n_metadata_props = 1;
    mb_run run;
    mb_rewrite(m, NULL, &run);

    mb_assert_annotated(&run,
                        "[{\"input\": \"h0\", \"output\": \"hn\", \"shape\": [1, \"batch\", 4], "
                        "\"dtype\": \"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}]",
                        "[{\"input\": \"X\", \"axis\": 0}]");
    mb_run_free(&run);
}

/* ---- item 8: the fixed-sequence-length warning -------------------------------- */

/* The warnings of a GRU exposed with X of fixed sequence length `steps`. */
static const char *fixed_length_warnings(const char *steps)
{
    char x[32], y[32];
    snprintf(x, sizeof x, "%s,batch,3", steps);
    snprintf(y, sizeof y, "%s,1,batch,4", steps);
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, x);
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, y);
    mb_run run;
    mb_rewrite(m, NULL, &run);
    const rnnstate_node_report *n = mb_report_node(run.report, "gru");
    assert_int_equal(n->status, RNNSTATE_NODE_UPDATED);
    assert_int_equal(n->fixed_sequence_length, atoi(steps));
    const char *warnings = mb_join(n->n_warnings, n->warnings);
    mb_run_free(&run);
    return warnings;
}

static void test_exposed_node_with_fixed_length_says_what_to_do(void **state)
{
    (void)state;
    assert_string_equal(fixed_length_warnings("5"),
                        "the sequence length is fixed at 5: chunks must then have exactly 5 "
                        "steps; re-export with a dynamic time axis to stream shorter chunks");
    /* one step per call (AECMOS): nothing shorter to stream */
    assert_string_equal(fixed_length_warnings("1"),
                        "the sequence length is fixed at 1: chunks must then have exactly 1 "
                        "step; re-export with a dynamic time axis to stream several steps per "
                        "call");
}

static void test_untouched_nodes_with_fixed_length_are_not_warned(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(stateful_gru("1", MB_FLOAT, "1,batch,4"), NULL, &run);
    const rnnstate_node_report *n = mb_report_node(run.report, "gru");
    assert_int_equal(n->status, RNNSTATE_NODE_ALREADY_EXPOSED);
    assert_int_equal(n->fixed_sequence_length, 1);
    assert_int_equal(n->n_warnings, 0);
    mb_run_free(&run);

    /* already stateful and bidirectional: nothing about chunks either */
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "2,batch,4");
    mb_weights(m, MB_FLOAT, "W", "R", 2, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, "bidirectional", "X,W,R,,,h0", "Y,hn");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_output(m, "hn", MB_FLOAT, "2,batch,4");
    mb_rewrite(m, NULL, &run);
    n = mb_report_node(run.report, "gru");
    assert_int_equal(n->status, RNNSTATE_NODE_ALREADY_EXPOSED);
    assert_int_equal(n->n_warnings, 0);
    mb_run_free(&run);

    /* skipped: its initial state is computed from data */
    m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "7,batch,3");
    mb_input(m, "a", MB_FLOAT, "1,batch,4");
    mb_node(m, "Neg", "h_from_data", "a", "h0");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R,,,h0", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_rewrite(m, NULL, &run);
    n = mb_report_node(run.report, "gru");
    assert_int_equal(n->status, RNNSTATE_NODE_SKIPPED);
    assert_int_equal(n->n_warnings, 0);
    mb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_input_of_another_type_is_not_paired),
        cmocka_unit_test(test_state_output_of_another_shape_is_not_paired),
        cmocka_unit_test(test_new_pair_in_layout_0_has_batch_axis_1),
        cmocka_unit_test(test_new_pair_batch_first_has_batch_axis_0),
        cmocka_unit_test(test_stack_of_states_read_through_views_has_batch_axis_1),
        cmocka_unit_test(test_packed_cache_has_no_batch_axis),
        cmocka_unit_test(test_batch_is_named_after_x_through_conv_reduce_and_gating),
        cmocka_unit_test(test_already_stateful_model_is_annotated_and_a_second_run_changes_nothing),
        cmocka_unit_test(test_stale_metadata_is_replaced),
        cmocka_unit_test(test_exposed_node_with_fixed_length_says_what_to_do),
        cmocka_unit_test(test_untouched_nodes_with_fixed_length_are_not_warned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
