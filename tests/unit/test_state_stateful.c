/* Models that already carry state (issue 9): caches read through views and
 * written back through data movement, nodes reset at every call, half-stateful
 * inputs assembled into one output, encoder-decoder hand-offs; and the two
 * issue-15 corners of --to-layout0 and If pass-through. Each test builds the
 * pattern in memory, runs the public pipeline and asserts the exact pairs,
 * statuses and graph.
 *
 * Set MB_PRINT=1 in the environment to print every rewritten graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"

#define H 4 /* hidden_size */
#define I 3 /* input size of X */

static int gates_of(const char *op)
{
    return !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
}

/* A recurrent node `name` of `dirs` directions reading `x` [T, B, I], its
 * weights W_<name>/R_<name>; the state inputs and outputs as given. */
static Onnx__NodeProto *layer(Onnx__ModelProto *m, const char *op, const char *name, int dirs,
                              const char *x, const char *h0, const char *c0, const char *outputs)
{
    char w[64], r[64], inputs[512];
    snprintf(w, sizeof w, "W_%s", name);
    snprintf(r, sizeof r, "R_%s", name);
    mb_weights(m, MB_FLOAT, w, r, dirs, gates_of(op), H, I, 0.1);
    snprintf(inputs, sizeof inputs, "%s,%s,%s,,,%s%s%s", x, w, r, h0, c0 ? "," : "",
             c0 ? c0 : "");
    return mb_recurrent(m, op, name, H, dirs == 2 ? "bidirectional" : NULL, inputs, outputs);
}

/* Cuts `input` in two along `axis`, the bounds computed from its shape:
 * n = Shape(input)[axis] / 2, "half0" = [0:n], "half1" = [n:2n]. */
static void halves_from_shape(Onnx__ModelProto *m, const char *input, int64_t axis)
{
    char in[128];
    mb_initializer_int64(m, "zero", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "two", MB_DIMS(1), (int64_t[]){ 2 });
    mb_initializer_int64(m, "axis", MB_DIMS(1), (int64_t[]){ axis });
    mb_node(m, "Shape", "shape", input, "in_shape");
    mb_attr_int(mb_node(m, "Gather", "width", "in_shape,axis", "width"), "axis", 0);
    mb_node(m, "Div", "half", "width,two", "n");
    mb_node(m, "Mul", "end", "n,two", "n2");
    snprintf(in, sizeof in, "%s,zero,n,axis", input);
    mb_node(m, "Slice", "s0", in, "half0");
    snprintf(in, sizeof in, "%s,n,n2,axis", input);
    mb_node(m, "Slice", "s1", in, "half1");
}

static void assert_pair(const rnnstate_report *r, const char *input, const char *output,
                        const char *shape, bool optional, bool added)
{
    const rnnstate_state_pair *p = mb_report_pair(r, input);
    assert_non_null(p);
    assert_string_equal(p->output, output);
    assert_string_equal(mb_pair_shape_str(p), shape);
    assert_string_equal(p->dtype, "float32");
    assert_int_equal(p->optional, optional);
    assert_int_equal(p->added, added);
}

/* The model's one state pair, which it already had: in the report, and in
 * the metadata as `state_json` beside X's time axis, the graph untouched
 * (status annotated). */
static void assert_only_pair_annotated(const mb_run *run, const char *input, const char *output,
                                       const char *shape, const char *state_json)
{
    assert_int_equal(run->report->n_pairs, 1);
    assert_pair(run->report, input, output, shape, false, false);
    mb_assert_annotated(run, state_json, "[{\"input\": \"X\", \"axis\": 0}]");
}

static const rnnstate_node_report *assert_status(const rnnstate_report *r, const char *name,
                                                 rnnstate_node_status status,
                                                 const char *reason_part)
{
    const rnnstate_node_report *n = mb_report_node(r, name);
    assert_non_null(n);
    assert_int_equal(n->status, status);
    if (reason_part) {
        assert_non_null(n->reason);
        assert_non_null(strstr(n->reason, reason_part));
    } else {
        assert_null(n->reason);
    }
    return n;
}

/* ---- caches read through views, written back by data movement ------------ */

/* GTCRN's cache [rows, 1, 1, H]: node k reads Gather(cache_k, k) where
 * cache_k is the cache after the ScatterNDs of nodes 0..k-1 (`read_written`
 * makes node 1 read the row node 0 wrote instead); the last ScatterND is the
 * cache output. With `intra`, a bidirectional GRU from a zero initializer,
 * its Y_h unused (an intra-frame node). */
static Onnx__ModelProto *gtcrn_like(bool read_written, bool intra)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "cache", MB_FLOAT, "2,1,1,4");
    mb_initializer_int64(m, "row0", MB_SCALAR, (int64_t[]){ 0 });
    mb_initializer_int64(m, "row1", MB_SCALAR, (int64_t[]){ 1 });
    mb_initializer_int64(m, "at0", MB_DIMS(1, 1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "at1", MB_DIMS(1, 1), (int64_t[]){ 1 });
    mb_initializer_int64(m, "shape_row", MB_DIMS(4), (int64_t[]){ 1, 1, 1, H });
    mb_attr_int(mb_node(m, "Gather", "read0", "cache,row0", "h0"), "axis", 0);
    layer(m, "GRU", "gru0", 1, "X", "h0", NULL, "Y0,hn0");
    mb_node(m, "Reshape", "put0", "hn0,shape_row", "upd0");
    mb_node(m, "ScatterND", "write0", "cache,at0,upd0", "cache1");
    mb_attr_int(mb_node(m, "Gather", "read1", read_written ? "cache1,row0" : "cache1,row1", "h1"),
                "axis", 0);
    layer(m, "GRU", "gru1", 1, "X", "h1", NULL, "Y1,hn1");
    mb_node(m, "Reshape", "put1", "hn1,shape_row", "upd1");
    mb_node(m, "ScatterND", "write1", "cache1,at1,upd1", "cache_out");
    mb_output(m, "Y1", MB_FLOAT, "T,1,1,4");
    mb_output(m, "cache_out", MB_FLOAT, "2,1,1,4");
    if (intra) {
        mb_initializer_filled(m, "zeros", MB_FLOAT, MB_DIMS(2, 1, H), 0.0);
        layer(m, "GRU", "intra", 2, "X", "zeros", NULL, "Y2");
        mb_output(m, "Y2", MB_FLOAT, "T,2,1,4");
    }
    return m;
}

static void test_cache_rows_read_through_scatternd_of_other_rows(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(gtcrn_like(false, false), NULL, &run);

    assert_status(run.report, "gru0", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_status(run.report, "gru1", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_only_pair_annotated(
        &run, "cache", "cache_out", "2,1,1,4",
        "[{\"input\": \"cache\", \"output\": \"cache_out\", \"shape\": [2, 1, 1, 4], "
        "\"dtype\": \"float32\", \"batch_axis\": null, \"optional\": false, \"kind\": \"recurrent\"}]");
    mb_run_free(&run);
}

/* Reading the row another node wrote is taking over its final state. */
static void test_row_written_before_it_is_read_is_a_hand_off(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(gtcrn_like(true, false), NULL, &run);

    assert_status(run.report, "gru0", RNNSTATE_NODE_SKIPPED,
                  "hands its state to GRU 'gru1' as its initial state: a hand-off");
    assert_status(run.report, "gru1", RNNSTATE_NODE_SKIPPED,
                  "initial_h is computed from the outputs of GRU 'gru0': a hand-off");
    assert_int_equal(run.report->n_pairs, 0);
    mb_assert_unchanged(&run);
    mb_run_free(&run);
}

/* ---- nodes reset at every call ---------------------------------------------- */

static void test_zero_state_node_in_a_stateful_model_stays_reset(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(gtcrn_like(false, true), NULL, &run);

    const rnnstate_node_report *n =
        assert_status(run.report, "intra", RNNSTATE_NODE_RESET_EACH_CALL,
                      "starts from a fixed state at every call and its final state goes "
                      "nowhere, in a model that carries its other state itself (cache -> "
                      "cache_out)");
    assert_int_equal(n->n_inputs_added, 0);
    assert_int_equal(n->n_outputs_added, 0);
    assert_only_pair_annotated(
        &run, "cache", "cache_out", "2,1,1,4",
        "[{\"input\": \"cache\", \"output\": \"cache_out\", \"shape\": [2, 1, 1, 4], "
        "\"dtype\": \"float32\", \"batch_axis\": null, \"optional\": false, \"kind\": \"recurrent\"}]");
    /* the text report counts them apart from the skipped nodes */
    char text[4096] = "";
    FILE *f = tmpfile();
    assert_non_null(f);
    rnnstate_report_write_text(run.report, "m.onnx", false, f);
    rewind(f);
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    assert_non_null(strstr(text, "m.onnx: main GRU 'intra': reset-each-call (starts from"));
    assert_non_null(strstr(text, "m.onnx: 3 recurrent nodes: 0 updated, 2 already exposed, 0 "
                                 "skipped, 1 reset at every call; model annotated\n"));
    mb_run_free(&run);
}

/* DPCRN: the intra-frame GRU runs across the bins (axis 1 of X), the time GRU
 * across the frames (axis 0): only axis 0 is the time axis. */
static void test_time_axis_leaves_out_nodes_reset_at_every_call(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,5,3");
    mb_input(m, "cache", MB_FLOAT, "1,5,4");
    Onnx__NodeProto *t = mb_node(m, "Transpose", "bins_first", "X", "X_bins");
    mb_attr_ints(t, "perm", 3, (int64_t[]){ 1, 0, 2 });
    layer(m, "GRU", "intra", 2, "X_bins", "", NULL, "Y_intra");
    layer(m, "GRU", "inter", 1, "X", "cache", NULL, "Y_inter,cache_out");
    mb_output(m, "Y_intra", MB_FLOAT, "5,2,T,4");
    mb_output(m, "Y_inter", MB_FLOAT, "T,1,5,4");
    mb_output(m, "cache_out", MB_FLOAT, "1,5,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "intra", RNNSTATE_NODE_RESET_EACH_CALL, "the time axis is in its batch");
    assert_int_equal(run.report->n_time_axes, 1);
    assert_string_equal(run.report->time_axes[0].input, "X");
    assert_int_equal(run.report->time_axes[0].axis, 0);
    mb_run_free(&run);
}

static void test_include_forces_a_node_reset_at_every_call(void **state)
{
    (void)state;
    rnnstate_options o;
    rnnstate_options_init(&o);
    const char *include[] = { "intra", "gru*" };
    o.include = include;
    o.n_include = 2;
    mb_run run;
    mb_rewrite(gtcrn_like(false, true), &o, &run);

    assert_status(run.report, "intra", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_input_names(run.g), "X,cache,GRU_2_initial_h");
    assert_pair(run.report, "GRU_2_initial_h", "GRU_2_Y_h", "2,1,4", true, true);
    assert_pair(run.report, "cache", "cache_out", "2,1,1,4", false, false);
    mb_run_free(&run);
}

/* A pair that cannot be fed back (h [1,1,4] -> hn2 [2,1,4]) carries no state:
 * its node is skipped before the nodes reset at every call are told, so the
 * zero-state node is not taken for one and is exposed as usual. */
static void test_carried_pair_of_another_shape_makes_no_node_reset(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "h", MB_FLOAT, "1,1,4");
    layer(m, "GRU", "gru", 1, "X", "h", NULL, "Y,hn");
    mb_node(m, "Concat", "twice", "hn,hn", "hn2");
    mb_output(m, "hn2", MB_FLOAT, "2,1,4");
    mb_initializer_filled(m, "zeros", MB_FLOAT, MB_DIMS(1, 1, H), 0.0);
    layer(m, "GRU", "other", 1, "X", "zeros", NULL, "Y2");
    mb_output(m, "Y2", MB_FLOAT, "T,1,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "gru", RNNSTATE_NODE_SKIPPED,
                  "the state pair of initial_h would not fit: input 'h' is float32 [1,1,4], "
                  "output 'hn2' is float32 [2,1,4]; not exposed");
    assert_status(run.report, "other", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_pairs_str(run.report), "GRU_1_initial_h->GRU_1_Y_h:1,1,4:float32:1");
    mb_run_free(&run);
}

static void test_zero_state_node_without_carried_state_is_exposed(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_initializer_filled(m, "zeros", MB_FLOAT, MB_DIMS(2, 1, H), 0.0);
    layer(m, "GRU", "intra", 2, "X", "zeros", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,2,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "intra", RNNSTATE_NODE_UPDATED, NULL);
    assert_pair(run.report, "GRU_0_initial_h", "GRU_0_Y_h", "2,1,4", true, true);
    mb_run_free(&run);
}

/* ---- flat caches sliced with bounds from Shape arithmetic ------------------- */

static void test_flat_cache_sliced_with_bounds_from_shape(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "cache", MB_FLOAT, "batch,8");
    halves_from_shape(m, "cache", 1);
    mb_node(m, "Unsqueeze", "u0", "half0,zero", "h0");
    mb_node(m, "Unsqueeze", "u1", "half1,zero", "h1");
    layer(m, "GRU", "gru0", 1, "X", "h0", NULL, "Y0,hn0");
    layer(m, "GRU", "gru1", 1, "X", "h1", NULL, "Y1,hn1");
    mb_node(m, "Squeeze", "q0", "hn0,zero", "f0");
    mb_node(m, "Squeeze", "q1", "hn1,zero", "f1");
    mb_attr_int(mb_node(m, "Concat", "cat", "f0,f1", "cache_out"), "axis", 1);
    mb_output(m, "Y1", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "cache_out", MB_FLOAT, "batch,8");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "gru0", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_status(run.report, "gru1", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_only_pair_annotated(
        &run, "cache", "cache_out", "batch,8",
        "[{\"input\": \"cache\", \"output\": \"cache_out\", \"shape\": [\"batch\", 8], "
        "\"dtype\": \"float32\", \"batch_axis\": 0, \"optional\": false, \"kind\": \"recurrent\"}]");
    mb_run_free(&run);
}

/* ---- state picked out of an input inside If branches (Silero v5) ------------ */

static void test_view_through_both_branches_of_an_if(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_input(m, "state", MB_FLOAT, "2,1,4");
    mb_initializer_int64(m, "row0", MB_SCALAR, (int64_t[]){ 0 });
    mb_initializer_int64(m, "row1", MB_SCALAR, (int64_t[]){ 1 });
    mb_initializer_int64(m, "axis0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_attr_int(mb_node(m, "Gather", "g0", "state,row0", "s0"), "axis", 0);
    mb_attr_int(mb_node(m, "Gather", "g1", "state,row1", "s1"), "axis", 0);
    Onnx__NodeProto *pick = mb_node(m, "If", "pick", "cond", "hs,cs");
    Onnx__GraphProto *then_g = mb_attr_graph(pick, "then_branch", "then");
    mb_graph_node(then_g, "Unsqueeze", "tu0", "s0,axis0", "t0");
    mb_graph_node(then_g, "Unsqueeze", "tu1", "s1,axis0", "t1");
    mb_graph_output(then_g, "t0", MB_FLOAT, NULL);
    mb_graph_output(then_g, "t1", MB_FLOAT, NULL);
    Onnx__GraphProto *else_g = mb_attr_graph(pick, "else_branch", "else");
    mb_graph_node(else_g, "Unsqueeze", "eu0", "s0,axis0", "e0");
    mb_graph_node(else_g, "Unsqueeze", "eu1", "s1,axis0", "e1");
    mb_graph_node(else_g, "Identity", "ei0", "e0", "f0");
    mb_graph_node(else_g, "Identity", "ei1", "e1", "f1");
    mb_graph_output(else_g, "f0", MB_FLOAT, NULL);
    mb_graph_output(else_g, "f1", MB_FLOAT, NULL);
    layer(m, "LSTM", "lstm", 1, "X", "hs", "cs", "Y,hn,cn");
    mb_attr_int(mb_node(m, "Concat", "cat", "hn,cn", "stateN"), "axis", 0);
    mb_output(m, "Y", MB_FLOAT, "T,1,1,4");
    mb_output(m, "stateN", MB_FLOAT, "2,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "lstm", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_only_pair_annotated(
        &run, "state", "stateN", "2,1,4",
        "[{\"input\": \"state\", \"output\": \"stateN\", \"shape\": [2, 1, 4], "
        "\"dtype\": \"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}]");
    mb_run_free(&run);
}

/* Silero v5 again: the final states reach stateN through an If whose branches
 * read them as outer-scope values (one squeezes, one passes them). */
static void test_final_state_through_if_branches_that_read_it(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_input(m, "state", MB_FLOAT, "1,1,4");
    layer(m, "GRU", "gru", 1, "X", "state", NULL, "Y,hn");
    mb_initializer_int64(m, "axis0", MB_DIMS(1), (int64_t[]){ 0 });
    Onnx__NodeProto *pass = mb_node(m, "If", "pass", "cond", "hn_out");
    Onnx__GraphProto *then_g = mb_attr_graph(pass, "then_branch", "then");
    mb_graph_node(then_g, "Squeeze", "sq", "hn,axis0", "sq_hn");
    mb_graph_node(then_g, "Unsqueeze", "unsq", "sq_hn,axis0", "back");
    mb_graph_output(then_g, "back", MB_FLOAT, NULL);
    Onnx__GraphProto *else_g = mb_attr_graph(pass, "else_branch", "else");
    mb_graph_node(else_g, "Identity", "same", "hn", "same_hn");
    mb_graph_output(else_g, "same_hn", MB_FLOAT, NULL);
    mb_node(m, "Identity", "to_out", "hn_out", "stateN");
    mb_output(m, "Y", MB_FLOAT, "T,1,1,4");
    mb_output(m, "stateN", MB_FLOAT, "1,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "gru", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_only_pair_annotated(
        &run, "state", "stateN", "1,1,4",
        "[{\"input\": \"state\", \"output\": \"stateN\", \"shape\": [1, 1, 4], "
        "\"dtype\": \"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}]");
    mb_run_free(&run);
}

/* ---- half-stateful inputs --------------------------------------------------- */

/* AECMOS: IR 6, opset 9, Slice with attributes; two bidirectional GRUs from
 * rows [2:4] (first in the graph) and [0:2] of h0 [4,1,4]. */
static void test_half_stateful_slices_with_attributes_give_one_output(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(6, 9);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "h0", MB_FLOAT, "4,1,4");
    Onnx__NodeProto *hi = mb_node(m, "Slice", "upper", "h0", "h_hi");
    mb_attr_ints(hi, "starts", 1, (int64_t[]){ 2 });
    mb_attr_ints(hi, "ends", 1, (int64_t[]){ 4 });
    mb_attr_ints(hi, "axes", 1, (int64_t[]){ 0 });
    Onnx__NodeProto *lo = mb_node(m, "Slice", "lower", "h0", "h_lo");
    mb_attr_ints(lo, "starts", 1, (int64_t[]){ 0 });
    mb_attr_ints(lo, "ends", 1, (int64_t[]){ 2 });
    layer(m, "GRU", "gru_hi", 2, "X", "h_hi", NULL, "Y_hi");
    layer(m, "GRU", "gru_lo", 2, "X", "h_lo", NULL, "Y_lo,unused_lo");
    mb_output(m, "Y_hi", MB_FLOAT, "T,2,1,4");
    mb_output(m, "Y_lo", MB_FLOAT, "T,2,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    const Onnx__GraphProto *g = run.g;

    assert_string_equal(mb_input_names(g), "X,h0");
    assert_string_equal(mb_output_names(g), "Y_hi,Y_lo,h0_out");
    assert_string_equal(mb_shape_str(mb_find_output(g, "h0_out")), "4,1,4");
    /* rows 0:2 first: the node that reads them comes second in the graph */
    assert_string_equal(mb_inputs_str(mb_producer(g, "h0_out")), "GRU_1_Y_h,GRU_0_Y_h");
    assert_string_equal(mb_outputs_str(mb_find_node(g, "gru_lo")), "Y_lo,GRU_1_Y_h");
    assert_int_equal(run.report->n_pairs, 1);
    assert_pair(run.report, "h0", "h0_out", "4,1,4", false, true);
    const rnnstate_node_report *n =
        assert_status(run.report, "gru_hi", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_join(n->n_outputs_added, n->outputs_added), "h0_out");
    mb_run_free(&run);
}

/* The rows of each layer computed from Shape(h0): H = Shape(h0)[0] / 2,
 * layer 0 reads [0:H], layer 1 [H:2H]. */
static void test_half_stateful_bounds_from_shape_arithmetic(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 13);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "h0", MB_FLOAT, "4,1,4");
    halves_from_shape(m, "h0", 0);
    layer(m, "GRU", "gru0", 2, "X", "half0", NULL, "Y0");
    layer(m, "GRU", "gru1", 2, "X", "half1", NULL, "Y1");
    mb_output(m, "Y0", MB_FLOAT, "T,2,1,4");
    mb_output(m, "Y1", MB_FLOAT, "T,2,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_output_names(run.g), "Y0,Y1,h0_out");
    assert_string_equal(mb_inputs_str(mb_producer(run.g, "h0_out")), "GRU_0_Y_h,GRU_1_Y_h");
    assert_int_equal(run.report->n_pairs, 1);
    assert_pair(run.report, "h0", "h0_out", "4,1,4", false, true);
    mb_run_free(&run);
}

/* Rows gathered one at a time (Unsqueeze(Gather(h0, k))), row 1 read by no
 * node: it passes through unchanged. */
static void test_half_stateful_gathered_rows_and_an_unread_row(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 13);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "h0", MB_FLOAT, "3,1,4");
    mb_initializer_int64(m, "k0", MB_SCALAR, (int64_t[]){ 0 });
    mb_initializer_int64(m, "k2", MB_SCALAR, (int64_t[]){ 2 });
    mb_initializer_int64(m, "axis0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_attr_int(mb_node(m, "Gather", "g0", "h0,k0", "r0"), "axis", 0);
    mb_attr_int(mb_node(m, "Gather", "g2", "h0,k2", "r2"), "axis", 0);
    mb_node(m, "Unsqueeze", "u0", "r0,axis0", "h_a");
    mb_node(m, "Unsqueeze", "u2", "r2,axis0", "h_b");
    layer(m, "GRU", "gru_a", 1, "X", "h_a", NULL, "Y_a");
    layer(m, "GRU", "gru_b", 1, "X", "h_b", NULL, "Y_b");
    mb_output(m, "Y_a", MB_FLOAT, "T,1,1,4");
    mb_output(m, "Y_b", MB_FLOAT, "T,1,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    const Onnx__GraphProto *g = run.g;

    assert_string_equal(mb_output_names(g), "Y_a,Y_b,h0_out");
    assert_string_equal(mb_inputs_str(mb_producer(g, "h0_out")), "GRU_0_Y_h,h0_rows_1_2,GRU_1_Y_h");
    int64_t *rows;
    size_t count;
    const Onnx__NodeProto *pass = mb_producer(g, "h0_rows_1_2");
    assert_string_equal(mb_inputs_str(pass), "h0,rows_indices");
    rows = mb_tensor_int64s(mb_find_attr(mb_producer(g, "rows_indices"), "value")->t, &count);
    assert_int_equal(count, 1);
    assert_int_equal(rows[0], 1);
    free(rows);
    assert_pair(run.report, "h0", "h0_out", "3,1,4", false, true);
    mb_run_free(&run);
}

/* When another node reads h0 too (here as a whole, and carries it to hn), the
 * rows the sliced node leaves out are not known to be unchanged: no assembly.
 * Its Y_h alone ([1,1,4]) cannot be fed back as h0 ([2,1,4]), so it gets no
 * pair (issue 9, item 6): it is left alone, and only h0 -> hn is reported. */
static void test_half_stateful_rows_are_not_filled_when_another_node_reads_the_input(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 13);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "h0", MB_FLOAT, "2,1,4");
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Slice", "layer0", "h0,s0,s1,s0", "h_l0");
    layer(m, "GRU", "gru", 1, "X", "h_l0", NULL, "Y");
    layer(m, "GRU", "whole", 2, "X", "h0", NULL, "Y2,hn");
    mb_output(m, "Y", MB_FLOAT, "T,1,1,4");
    mb_output(m, "Y2", MB_FLOAT, "T,2,1,4");
    mb_output(m, "hn", MB_FLOAT, "2,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_string_equal(mb_output_names(run.g), "Y,Y2,hn");
    assert_status(run.report, "gru", RNNSTATE_NODE_SKIPPED,
                  "the state pair of initial_h would not fit: input 'h0' is float32 [2,1,4], "
                  "output (new) is float32 [1,1,4]; the views of the input do not tile it, so no "
                  "output can carry it");
    assert_status(run.report, "whole", RNNSTATE_NODE_ALREADY_EXPOSED, NULL);
    assert_int_equal(run.report->n_pairs, 1);
    assert_pair(run.report, "h0", "hn", "2,1,4", false, false);
    mb_run_free(&run);
}

/* A GRU in the then branch reads Slice(h, 0:1), one layer of a 2-layer h;
 * its Y_h goes nowhere. */
static void test_half_stateful_slice_inside_an_if_passes_exactly_its_rows(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_input(m, "h", MB_FLOAT, "2,1,4");
    Onnx__NodeProto *branch = mb_node(m, "If", "branch", "cond", "y");
    Onnx__GraphProto *then_g = mb_attr_graph(branch, "then_branch", "then");
    Onnx__GraphProto *else_g = mb_attr_graph(branch, "else_branch", "else");
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, H, I, 0.1);
    mb_graph_node(then_g, "Slice", "layer0", "h,s0,s1,s0", "h_l0");
    mb_attr_int(mb_graph_node(then_g, "GRU", "gru", "X,W,R,,,h_l0", "Y_then"), "hidden_size", H);
    mb_graph_output(then_g, "Y_then", MB_FLOAT, "T,1,1,4");
    mb_graph_node(else_g, "Unsqueeze", "else_y", "X,s1", "Y_else");
    mb_graph_output(else_g, "Y_else", MB_FLOAT, NULL);
    mb_output(m, "y", MB_FLOAT, NULL);
    mb_run run;
    mb_rewrite(m, NULL, &run);
    const Onnx__GraphProto *g = run.g;

    assert_string_equal(mb_output_names(g), "y,h_out");
    assert_string_equal(mb_shape_str(mb_find_output(g, "h_out")), "2,1,4");
    assert_string_equal(mb_node_ops(g), "Constant,Gather,Constant,Gather,If,Concat");
    assert_string_equal(mb_inputs_str(mb_producer(g, "h_out")), "GRU_0_Y_h,h_rows_1_2");
    const Onnx__NodeProto *if_node = mb_find_node(g, "branch");
    assert_string_equal(mb_outputs_str(if_node), "y,GRU_0_Y_h");
    /* the else branch passes through rows 0:1 of h, the shape of the GRU's Y_h */
    const Onnx__GraphProto *els = mb_find_attr(if_node, "else_branch")->g;
    const Onnx__GraphProto *thn = mb_find_attr(if_node, "then_branch")->g;
    assert_string_equal(mb_output_names(els), "Y_else,GRU_0_Y_h_1_1");
    assert_string_equal(mb_inputs_str(mb_producer(els, "GRU_0_Y_h_1_1")), "h_rows_0_1");
    assert_string_equal(mb_shape_str(mb_find_output(els, "GRU_0_Y_h_1_1")), "1,1,4");
    assert_string_equal(mb_shape_str(mb_find_output(thn, "GRU_0_Y_h_1")), "1,1,4");
    assert_int_equal(run.report->n_pairs, 1);
    assert_pair(run.report, "h", "h_out", "2,1,4", false, true);
    mb_run_free(&run);
}

/* ---- hand-offs ----------------------------------------------------------------- */

static void test_encoder_handing_its_state_to_a_decoder_streams_neither(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "U", MB_FLOAT, "S,batch,3");
    layer(m, "LSTM", "encoder", 1, "X", "", NULL, "Y_enc,h_enc,c_enc");
    layer(m, "LSTM", "decoder", 1, "U", "h_enc", "c_enc", "Y");
    mb_output(m, "Y", MB_FLOAT, "S,1,batch,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "encoder", RNNSTATE_NODE_SKIPPED,
                  "hands its state to LSTM 'decoder' as its initial state: a hand-off");
    assert_status(run.report, "decoder", RNNSTATE_NODE_SKIPPED,
                  "initial_h is computed from the outputs of LSTM 'encoder': a hand-off");
    assert_int_equal(run.report->n_pairs, 0);
    assert_int_equal(run.report->n_notes, 1);
    assert_string_equal(run.report->notes[0],
                        "hand-off: LSTM 'encoder' hands its state to LSTM 'decoder' as its "
                        "initial state; the model cannot stream through them, so no state pair "
                        "was added for either");
    mb_assert_unchanged(&run);
    mb_run_free(&run);
}

static void test_hand_off_through_a_bridge_of_ops(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    layer(m, "GRU", "encoder", 1, "X", "", NULL, "Y_enc,h_enc");
    mb_node(m, "Tanh", "bridge", "h_enc", "h_dec");
    layer(m, "GRU", "decoder", 1, "X", "h_dec", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,1,4");
    mb_run run;
    mb_rewrite(m, NULL, &run);

    assert_status(run.report, "encoder", RNNSTATE_NODE_SKIPPED, "hands its state to GRU 'decoder'");
    assert_status(run.report, "decoder", RNNSTATE_NODE_SKIPPED, "outputs of GRU 'encoder'");
    assert_int_equal(run.report->n_pairs, 0);
    mb_assert_unchanged(&run);
    mb_run_free(&run);
}

/* ---- --to-layout0 and a constant initial state (issue 15) --------------------- */

static void test_layout0_handles_a_nonuniform_constant_initial_state(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "2,T,3");
    float h[2 * 2 * H]; /* [batch 2, directions 2, H]: row b*2+d holds 10*b+d */
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < H; k++)
            h[r * H + k] = (float)(10 * (r / 2) + r % 2);
    mb_constant(m, "h_const", "h_batch_first", mb_tensor_float("", MB_DIMS(2, 2, H), h));
    mb_attr_int(layer(m, "GRU", "gru", 2, "X", "h_batch_first", NULL, "Y"), "layout", 1);
    mb_output(m, "Y", MB_FLOAT, "2,T,2,4");
    rnnstate_options o;
    rnnstate_options_init(&o);
    o.to_layout0 = true;
    mb_run run;
    mb_rewrite(m, &o, &run);

    assert_status(run.report, "gru", RNNSTATE_NODE_UPDATED, NULL);
    assert_string_equal(mb_input_names(run.g), "X,GRU_0_initial_h");
    assert_pair(run.report, "GRU_0_initial_h", "GRU_0_Y_h", "2,2,4", true, true);
    size_t count;
    float *v = mb_tensor_floats(mb_find_initializer(run.g, "GRU_0_initial_h"), &count);
    assert_int_equal(count, 16);
    /* [directions, batch, H]: d0b0, d0b1, d1b0, d1b1 */
    const float want[4] = { 0, 10, 1, 11 };
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < H; k++)
            assert_true(v[r * H + k] == want[r]);
    free(v);
    assert_int_equal(mb_count_op(run.g, "Constant"), 0);
    mb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_rows_read_through_scatternd_of_other_rows),
        cmocka_unit_test(test_row_written_before_it_is_read_is_a_hand_off),
        cmocka_unit_test(test_zero_state_node_in_a_stateful_model_stays_reset),
        cmocka_unit_test(test_time_axis_leaves_out_nodes_reset_at_every_call),
        cmocka_unit_test(test_include_forces_a_node_reset_at_every_call),
        cmocka_unit_test(test_carried_pair_of_another_shape_makes_no_node_reset),
        cmocka_unit_test(test_zero_state_node_without_carried_state_is_exposed),
        cmocka_unit_test(test_flat_cache_sliced_with_bounds_from_shape),
        cmocka_unit_test(test_view_through_both_branches_of_an_if),
        cmocka_unit_test(test_final_state_through_if_branches_that_read_it),
        cmocka_unit_test(test_half_stateful_slices_with_attributes_give_one_output),
        cmocka_unit_test(test_half_stateful_bounds_from_shape_arithmetic),
        cmocka_unit_test(test_half_stateful_gathered_rows_and_an_unread_row),
        cmocka_unit_test(test_half_stateful_rows_are_not_filled_when_another_node_reads_the_input),
        cmocka_unit_test(test_half_stateful_slice_inside_an_if_passes_exactly_its_rows),
        cmocka_unit_test(test_encoder_handing_its_state_to_a_decoder_streams_neither),
        cmocka_unit_test(test_hand_off_through_a_bridge_of_ops),
        cmocka_unit_test(test_layout0_handles_a_nonuniform_constant_initial_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
