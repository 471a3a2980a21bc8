/* The time axis (issue 14): the graph input axis that the recurrent nodes'
 * sequence axis traces back to, in the report (time_axes, the text line) and
 * the metadata (rnnstate.time), and a note naming the nodes it cannot find.
 * Each test builds a model in memory and runs the whole public pipeline. */
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

/* A GRU named `name` reading `x`, weights W_<name>/R_<name>, no state. */
static Onnx__NodeProto *add_gru(Onnx__ModelProto *m, const char *name, const char *x,
                                int64_t input_size, const char *outputs)
{
    char w[64], r[64], inputs[256];
    snprintf(w, sizeof w, "W_%s", name);
    snprintf(r, sizeof r, "R_%s", name);
    mb_weights(m, MB_FLOAT, w, r, 1, 3, H, input_size, 0.1);
    snprintf(inputs, sizeof inputs, "%s,%s,%s", x, w, r);
    return mb_recurrent(m, "GRU", name, H, NULL, inputs, outputs);
}

/* The report's time axes as "input:axis,...". */
static const char *time_axes_str(const rnnstate_report *r)
{
    static char buf[256];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_time_axes && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s:%zu", i ? "," : "",
                                r->time_axes[i].input, r->time_axes[i].axis);
    return buf;
}

/* The model's metadata entry `key`, or NULL. */
static const char *metadata(const Onnx__ModelProto *m, const char *key)
{
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (!strcmp(m->metadata_props[i]->key, key))
            return m->metadata_props[i]->value;
    return NULL;
}

/* The report's text form. */
static char *report_text(const rnnstate_report *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    rnnstate_report_write_text(r, "m.onnx", false, f);
    fclose(f);
    return text;
}

static void test_x_a_graph_input_is_its_sequence_axis_in_report_text_and_metadata(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    add_gru(m, "gru", "X", I, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(time_axes_str(run.report), "X:0");
    assert_int_equal(run.report->n_notes, 0);
    assert_string_equal(metadata(run.model, RNNSTATE_TIME_METADATA_KEY),
                        "[{\"input\": \"X\", \"axis\": 0}]");
    char *text = report_text(run.report);
    assert_non_null(strstr(text, "m.onnx: time axis X:0 (the sequence axis of the recurrent nodes)\n"));
    free(text);
    mb_run_free(&run);
}

static void test_layout_1_takes_axis_1(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 14);
    mb_input(m, "X", MB_FLOAT, "batch,T,3");
    mb_attr_int(add_gru(m, "gru", "X", I, "Y"), "layout", 1);
    mb_output(m, "Y", MB_FLOAT, "batch,T,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_string_equal(time_axes_str(run.report), "X:1");
    mb_run_free(&run);
}

/* x [batch, T, 3] -> Transpose(1, 0, 2) -> Relu -> GRU; its Y -> Squeeze ->
 * MatMul -> a second GRU: both run along x's axis 1, recorded once. */
static void test_traced_through_transpose_and_a_stack_of_layers_recorded_once(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 14);
    mb_input(m, "x", MB_FLOAT, "batch,T,3");
    mb_attr_ints(mb_node(m, "Transpose", "tr", "x", "xt"), "perm", 3, (int64_t[]){ 1, 0, 2 });
    mb_node(m, "Relu", "relu", "xt", "xr");
    add_gru(m, "gru0", "xr", I, "Y0");
    mb_initializer_int64(m, "axes", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Squeeze", "sq", "Y0,axes", "Y0s");
    mb_initializer_filled(m, "proj", MB_FLOAT, MB_DIMS(H, H), 0.5);
    mb_node(m, "MatMul", "mm", "Y0s,proj", "X1");
    add_gru(m, "gru1", "X1", H, "Y1");
    mb_output(m, "Y1", MB_FLOAT, "T,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_string_equal(time_axes_str(run.report), "x:1");
    assert_string_equal(metadata(run.model, RNNSTATE_TIME_METADATA_KEY),
                        "[{\"input\": \"x\", \"axis\": 1}]");
    mb_run_free(&run);
}

/* A GRU inside an If branch reads the main graph's X. */
static void test_node_in_a_branch_traces_to_the_outer_input(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 14);
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    Onnx__NodeProto *branch = mb_node(m, "If", "branch", "cond", "y");
    Onnx__GraphProto *then_g = mb_attr_graph(branch, "then_branch", "then");
    Onnx__NodeProto *gru = mb_graph_node(then_g, "GRU", "gru", "X,W,R", "Y");
    mb_attr_int(gru, "hidden_size", H);
    mb_graph_output(then_g, "Y", MB_FLOAT, NULL);
    Onnx__GraphProto *else_g = mb_attr_graph(branch, "else_branch", "else");
    mb_graph_node(else_g, "Identity", "else_id", "X", "else_out");
    mb_graph_output(else_g, "else_out", MB_FLOAT, NULL);
    mb_output(m, "y", MB_FLOAT, NULL);
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_string_equal(time_axes_str(run.report), "X:0");
    mb_run_free(&run);
}

/* X built by a Reshape to a constant shape: its sequence axis is no input's
 * axis. The report says so, and the metadata lists no time axis. */
static void test_reshaped_x_is_not_traced_and_a_note_says_so(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 14);
    mb_input(m, "frame", MB_FLOAT, "1,12");
    mb_initializer_int64(m, "shape", MB_DIMS(3), (int64_t[]){ 4, 1, 3 });
    mb_node(m, "Reshape", "rs", "frame,shape", "X");
    add_gru(m, "gru", "X", I, "Y");
    mb_output(m, "Y", MB_FLOAT, "4,1,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_int_equal(run.report->n_time_axes, 0);
    /* the fixed batch of 1 has its note first (state/pass.c) */
    assert_int_equal(run.report->n_notes, 2);
    assert_non_null(strstr(run.report->notes[0], "the batch is fixed at 1"));
    assert_string_equal(run.report->notes[1],
                        "time axis: the sequence axis of 1 recurrent node does not trace back to a "
                        "graph input: GRU 'gru' in main");
    assert_string_equal(metadata(run.model, RNNSTATE_TIME_METADATA_KEY), "[]");
    mb_run_free(&run);
}

/* An already-stateful model is only annotated: its metadata names the time
 * axis beside the pairs (issue 9, item 7). */
static void test_already_stateful_model_carries_the_axis_in_its_metadata(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(8, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "1,batch,4");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R,,,h0", "Y,hn");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "hn", MB_FLOAT, "1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_string_equal(time_axes_str(run.report), "X:0");
    assert_true(run.report->annotated);
    assert_string_equal(metadata(run.model, RNNSTATE_TIME_METADATA_KEY),
                        "[{\"input\": \"X\", \"axis\": 0}]");
    mb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x_a_graph_input_is_its_sequence_axis_in_report_text_and_metadata),
        cmocka_unit_test(test_layout_1_takes_axis_1),
        cmocka_unit_test(test_traced_through_transpose_and_a_stack_of_layers_recorded_once),
        cmocka_unit_test(test_node_in_a_branch_traces_to_the_outer_input),
        cmocka_unit_test(test_reshaped_x_is_not_traced_and_a_note_says_so),
        cmocka_unit_test(test_already_stateful_model_carries_the_axis_in_its_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
