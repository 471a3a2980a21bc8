/* Element types inferred through the graph (issue 9, item 1): models whose
 * intermediate values carry no value_info, with W computed from initializers
 * (paddle2onnx, Silero VAD v5), Cast, outer-scope values, If outputs, and the
 * type a recurrent node's X, W, R and states share. Each test runs the whole
 * public pipeline and asserts the exact state pairs, or the exact reason a
 * node is skipped when its type really cannot be known. */
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

static void expect_node(const rnnstate_report *r, const char *name, rnnstate_node_status status,
                        const char *reason)
{
    const rnnstate_node_report *n = mb_report_node(r, name);
    assert_non_null(n);
    assert_int_equal(n->status, status);
    if (reason)
        assert_string_equal(n->reason, reason);
    else
        assert_null(n->reason);
}

/* Rewrites `m` and expects node `name` updated with exactly `pairs`
 * (mb_pairs_str's format). */
static void expect_updated(Onnx__ModelProto *m, const char *name, const char *pairs)
{
    mb_run run;
    mb_rewrite(m, NULL, &run);
    expect_node(run.report, name, RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_pairs_str(run.report), pairs);
    mb_run_free(&run);
}

/* `out` = Mystery(value), an op of a domain the tool does not know: nothing
 * tells the type of its output. */
static void mystery(Onnx__ModelProto *m, const char *name, const char *value, const char *out)
{
    mb_node(m, "Mystery", name, value, out)->domain = strdup("com.example");
}

/* W and R of an op with `gates` gates, each the output of a Mystery op on a
 * float initializer: their type cannot be known from them. */
static void mystery_weights(Onnx__ModelProto *m, int64_t gates)
{
    mb_initializer_filled(m, "w_src", MB_FLOAT, MB_DIMS(1, gates * H, I), 0.1);
    mb_initializer_filled(m, "r_src", MB_FLOAT, MB_DIMS(1, gates * H, H), 0.1);
    mystery(m, "make_w", "w_src", "W");
    mystery(m, "make_r", "r_src", "R");
}

/* Unsqueeze(value, [0]) -> out, with the axes as an initializer. */
static void unsqueeze0(Onnx__ModelProto *m, Onnx__GraphProto *g, const char *name,
                       const char *value, const char *out)
{
    char inputs[128];
    if (!mb_find_initializer(m->graph, "axes0"))
        mb_initializer_int64(m, "axes0", MB_DIMS(1), (int64_t[]){ 0 });
    snprintf(inputs, sizeof inputs, "%s,axes0", value);
    mb_graph_node(g, "Unsqueeze", name, inputs, out);
}

/* `out` [gates*H, cols] computed as Concat of two initializer halves along
 * axis 0: no value_info declares it. */
static void concat_of_halves(Onnx__ModelProto *m, const char *out, int64_t gates, int64_t cols)
{
    char a[64], b[64], inputs[160], name[64];
    snprintf(a, sizeof a, "%s_a", out);
    snprintf(b, sizeof b, "%s_b", out);
    mb_initializer_filled(m, a, MB_FLOAT, MB_DIMS(gates * H / 2, cols), 0.1);
    mb_initializer_filled(m, b, MB_FLOAT, MB_DIMS(gates * H / 2, cols), 0.2);
    snprintf(inputs, sizeof inputs, "%s,%s", a, b);
    snprintf(name, sizeof name, "concat_%s", out);
    mb_attr_int(mb_node(m, "Concat", name, inputs, out), "axis", 0);
}

/* paddle2onnx: X transposed from a batch-first input, W = Unsqueeze(Concat
 * of initializers), R = Reshape(Transpose(initializer)); no value_info. */
static void test_paddle_style_computed_weights_are_typed_from_their_initializers(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT, "batch,T,3");
    mb_attr_ints(mb_node(m, "Transpose", "to_time_major", "x", "X"), "perm", 3,
                 (int64_t[]){ 1, 0, 2 });
    concat_of_halves(m, "w_cat", 4, I);
    unsqueeze0(m, m->graph, "unsqueeze_w", "w_cat", "W");
    mb_initializer_filled(m, "r_t", MB_FLOAT, MB_DIMS(H, 4 * H), 0.1);
    mb_attr_ints(mb_node(m, "Transpose", "transpose_r", "r_t", "r_cat"), "perm", 2,
                 (int64_t[]){ 1, 0 });
    mb_initializer_int64(m, "r_shape", MB_DIMS(3), (int64_t[]){ 1, 4 * H, H });
    mb_node(m, "Reshape", "reshape_r", "r_cat,r_shape", "R");
    mb_recurrent(m, "LSTM", "lstm", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    expect_node(run.report, "lstm", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_pairs_str(run.report),
                        "LSTM_0_initial_h->LSTM_0_Y_h:1,batch,4:float32:1,"
                        "LSTM_0_initial_c->LSTM_0_Y_c:1,batch,4:float32:1");
    assert_int_equal(mb_elem_type(mb_find_input(run.g, "LSTM_0_initial_h")), MB_FLOAT);
    assert_int_equal(mb_elem_type(mb_find_output(run.g, "LSTM_0_Y_c")), MB_FLOAT);
    mb_run_free(&run);
}

/* Cast sets the type: float inputs and weights cast to double make a double
 * state. */
static void test_cast_sets_the_state_type(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT, "T,batch,3");
    mb_weights(m, MB_FLOAT, "w32", "r32", 1, 3, H, I, 0.1);
    mb_attr_int(mb_node(m, "Cast", "cast_x", "x", "X"), "to", MB_DOUBLE);
    mb_attr_int(mb_node(m, "Cast", "cast_w", "w32", "W"), "to", MB_DOUBLE);
    mb_attr_int(mb_node(m, "Cast", "cast_r", "r32", "R"), "to", MB_DOUBLE);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_DOUBLE, "T,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    expect_node(run.report, "gru", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_pairs_str(run.report), "GRU_0_initial_h->GRU_0_Y_h:1,batch,4:float64:1");
    assert_int_equal(mb_elem_type(mb_find_input(run.g, "GRU_0_initial_h")), MB_DOUBLE);
    assert_int_equal(mb_find_initializer(run.g, "GRU_0_initial_h")->data_type, MB_DOUBLE);
    mb_run_free(&run);
}

/* X and W come from an op the tool does not know; R, an initializer, gives
 * the type they all share. */
static void test_recurrent_node_takes_the_type_r_declares(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT16, "T,2,3");
    mystery(m, "make_x", "x", "X");
    mb_initializer_filled(m, "w_src", MB_FLOAT16, MB_DIMS(1, H, I), 0.1);
    mystery(m, "make_w", "w_src", "W");
    mb_initializer_filled(m, "R", MB_FLOAT16, MB_DIMS(1, H, H), 0.1);
    mb_recurrent(m, "RNN", "rnn", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT16, NULL);
    /* nothing says the batch of X either: it gets a name of its own */
    expect_updated(m, "rnn", "RNN_0_initial_h->RNN_0_Y_h:1,RNN_0_batch,4:float16:1");
}

/* A GRU in an If branch reads W and R computed in the main graph (outer
 * scope, no value_info) through Unsqueezes inside the branch; X comes from
 * an op the tool does not know. */
static void test_outer_scope_values_are_typed_inside_a_branch(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_input(m, "x", MB_FLOAT, "T,batch,3");
    mystery(m, "make_x", "x", "X");
    concat_of_halves(m, "w_cat", 3, I);
    concat_of_halves(m, "r_cat", 3, H);
    Onnx__NodeProto *branch = mb_node(m, "If", "if", "cond", "y");
    Onnx__GraphProto *then_g = mb_attr_graph(branch, "then_branch", "then");
    unsqueeze0(m, then_g, "unsqueeze_w", "w_cat", "W");
    unsqueeze0(m, then_g, "unsqueeze_r", "r_cat", "R");
    Onnx__NodeProto *gru = mb_graph_node(then_g, "GRU", "gru", "X,W,R", "Y");
    mb_attr_int(gru, "hidden_size", H);
    mb_graph_output(then_g, "Y", 0, NULL);
    Onnx__GraphProto *else_g = mb_attr_graph(branch, "else_branch", "else");
    mb_graph_node(else_g, "Identity", "else_id", "x", "else_y");
    mb_graph_output(else_g, "else_y", 0, NULL);
    mb_output(m, "y", MB_FLOAT, NULL);
    mb_run run;
    mb_rewrite(m, NULL, &run);

    expect_node(run.report, "gru", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_report_node(run.report, "gru")->graph, "main/if.then_branch");
    assert_string_equal(mb_pairs_str(run.report),
                        "GRU_0_initial_h->GRU_0_Y_h:1,GRU_0_batch,4:float32:1");
    mb_run_free(&run);
}

/* X is an If output whose branches declare no type: it has the type of what
 * the branches return (an outer-scope graph input). */
static void test_if_output_takes_its_branch_type(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_input(m, "x", MB_FLOAT, "T,1,3");
    Onnx__NodeProto *branch = mb_node(m, "If", "if", "cond", "X");
    Onnx__GraphProto *then_g = mb_attr_graph(branch, "then_branch", "then");
    mb_graph_node(then_g, "Neg", "then_neg", "x", "then_x");
    mb_graph_output(then_g, "then_x", 0, NULL);
    Onnx__GraphProto *else_g = mb_attr_graph(branch, "else_branch", "else");
    mb_graph_node(else_g, "Identity", "else_id", "x", "else_x");
    mb_graph_output(else_g, "else_x", 0, NULL);
    mystery_weights(m, 3);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    expect_updated(m, "gru", "GRU_0_initial_h->GRU_0_Y_h:1,GRU_0_batch,4:float32:1");
}

static void graph_input(Onnx__GraphProto *g, const char *name, int32_t type)
{
    Onnx__ValueInfoProto **grown = realloc(g->input, (g->n_input + 1) * sizeof *grown);
    assert_non_null(grown);
    g->input = grown;
    g->input[g->n_input++] = mb_value_info_new(name, type, NULL);
}

/* X is the carried value of a Loop whose body declares no types: it has the
 * type of the Loop's initial value (a graph input). */
static void test_loop_carried_value_takes_its_initial_type(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT, "T,1,3");
    mb_initializer_int64(m, "trips", MB_SCALAR, (int64_t[]){ 1 });
    mb_initializer(m, mb_tensor("go", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, MB_SCALAR,
                                (unsigned char[]){ 1 }, 1));
    Onnx__NodeProto *loop = mb_node(m, "Loop", "loop", "trips,go,x", "X");
    Onnx__GraphProto *body = mb_attr_graph(loop, "body", "body");
    graph_input(body, "i", 0);
    graph_input(body, "cond_in", 0);
    graph_input(body, "v_in", 0);
    mb_graph_node(body, "Identity", "keep_going", "cond_in", "cond_out");
    mb_graph_node(body, "Neg", "step", "v_in", "v_out");
    mb_graph_output(body, "cond_out", 0, NULL);
    mb_graph_output(body, "v_out", 0, NULL);
    mystery_weights(m, 3);
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    expect_updated(m, "gru", "GRU_0_initial_h->GRU_0_Y_h:1,GRU_0_batch,4:float32:1");
}

/* Nothing fixes the type: the reason names the value where inference
 * stopped (behind a Transpose) and the node that produces it. */
static void test_unknowable_type_skips_the_node_naming_the_value(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT, "T,1,3");
    mystery(m, "mystery", "x", "hidden_x");
    mb_attr_ints(mb_node(m, "Transpose", "transpose_x", "hidden_x", "X"), "perm", 3,
                 (int64_t[]){ 0, 1, 2 });
    mystery_weights(m, 1);
    mb_recurrent(m, "RNN", "rnn", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_run run;
    mb_rewrite(m, NULL, &run);

    expect_node(run.report, "rnn", RNNSTATE_NODE_SKIPPED,
                "the element type of X ('X'), W ('W') and R cannot be inferred: 'hidden_x' "
                "comes from Mystery node 'mystery', whose output type is not known");
    assert_int_equal(run.report->n_pairs, 0);
    assert_false(run.report->changed);
    mb_run_free(&run);
}

/* A type that is known but not numeric is named. */
static void test_string_state_type_is_refused_by_name(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, "T,1,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 1, H, I, 0.1);
    mb_recurrent(m, "RNN", "rnn", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_run run;
    mb_rewrite(m, NULL, &run);

    expect_node(run.report, "rnn", RNNSTATE_NODE_SKIPPED,
                "the element type X, W and R share is string, not numeric");
    assert_int_equal(run.report->n_pairs, 0);
    mb_run_free(&run);
}

/* W at the end of a chain of 20000 Identity nodes, X and R from an op the
 * tool does not know: typed in one pass, with no recursion along the chain
 * (which would overflow the stack on long enough chains). */
static void test_long_chain_is_typed_in_one_pass(void **state)
{
    (void)state;
    enum { CHAIN = 20000 };
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "x", MB_FLOAT, "T,1,3");
    mystery(m, "make_x", "x", "X");
    mb_initializer_filled(m, "w0", MB_FLOAT, MB_DIMS(1, 3 * H, I), 0.1);
    mb_initializer_filled(m, "r_src", MB_FLOAT, MB_DIMS(1, 3 * H, H), 0.1);
    mystery(m, "make_r", "r_src", "R");
    char in[32], out[32], name[32];
    for (int i = 0; i < CHAIN; i++) {
        snprintf(in, sizeof in, "w%d", i);
        if (i + 1 == CHAIN)
            snprintf(out, sizeof out, "W");
        else
            snprintf(out, sizeof out, "w%d", i + 1);
        snprintf(name, sizeof name, "id%d", i);
        mb_node(m, "Identity", name, in, out);
    }
    mb_recurrent(m, "GRU", "gru", H, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    expect_updated(m, "gru", "GRU_0_initial_h->GRU_0_Y_h:1,GRU_0_batch,4:float32:1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paddle_style_computed_weights_are_typed_from_their_initializers),
        cmocka_unit_test(test_cast_sets_the_state_type),
        cmocka_unit_test(test_recurrent_node_takes_the_type_r_declares),
        cmocka_unit_test(test_outer_scope_values_are_typed_inside_a_branch),
        cmocka_unit_test(test_if_output_takes_its_branch_type),
        cmocka_unit_test(test_loop_carried_value_takes_its_initial_type),
        cmocka_unit_test(test_unknowable_type_skips_the_node_naming_the_value),
        cmocka_unit_test(test_string_state_type_is_refused_by_name),
        cmocka_unit_test(test_long_chain_is_typed_in_one_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
