/* The stream analysis (src/analysis/stream*.c), one case per op class: each
 * model is X [batch, 4, T] (time axis 2, declared as --time X:2 does) ->
 * the op under test -> Y, run through the whole public pipeline. Each case
 * states the verdict, the chunk multiple, how many context caches the
 * rewrite adds (and how many frames the first one carries), and the blocker's
 * op and the words of its reason. ONNX Runtime proves the exact ones stream
 * (tests/e2e/stream_models.js); this pins what the analysis decides.
 *
 * Set MB_PRINT=1 in the environment to print every rewritten graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"

#define C 4 /* channels */

typedef struct stream_case {
    const char *name;
    void (*build)(Onnx__ModelProto *m); /* X [batch, C, T] -> ... -> Y */
    bool no_context_caches;
    rnnstate_stream_verdict verdict;
    size_t chunk_multiple;
    size_t context_pairs;
    int64_t frames;        /* time dim of the first context pair (0: none) */
    const char *blocker_op; /* NULL: no blocker */
    const char *reason;    /* words the blocker's reason contains */
} stream_case;

/* ---- builders ------------------------------------------------------------------ */

static void ints(Onnx__NodeProto *n, const char *attr, size_t count, const int64_t *v)
{
    mb_attr_ints(n, attr, count, v);
}

/* Conv1d over X: kernel k, dilation d, stride s, pads (begin, end), into `out`. */
static Onnx__NodeProto *conv1d(Onnx__ModelProto *m, const char *x, const char *out, int64_t k,
                               int64_t d, int64_t s, int64_t begin, int64_t end)
{
    char w[64];
    snprintf(w, sizeof w, "W_%s", out);
    mb_initializer_filled(m, w, MB_FLOAT, MB_DIMS(C, C, k), 0.1);
    char inputs[160];
    snprintf(inputs, sizeof inputs, "%s,%s", x, w);
    Onnx__NodeProto *n = mb_node(m, "Conv", out, inputs, out);
    ints(n, "kernel_shape", 1, (int64_t[]){ k });
    ints(n, "dilations", 1, (int64_t[]){ d });
    ints(n, "strides", 1, (int64_t[]){ s });
    ints(n, "pads", 2, (int64_t[]){ begin, end });
    return n;
}

static void frame_wise(Onnx__ModelProto *m)
{
    mb_node(m, "Relu", "relu", "X", "r");
    mb_initializer_filled(m, "two", MB_FLOAT, MB_SCALAR, 2.0);
    mb_node(m, "Mul", "scale", "r,two", "Y");
}

/* A second input without a time axis (a speaker embedding) added to every frame. */
static void embedding_added(Onnx__ModelProto *m)
{
    mb_input(m, "E", MB_FLOAT, "batch,4,1");
    mb_node(m, "Add", "add", "X,E", "Y");
}

/* Transpose to [batch, T, C], MatMul over features, LayerNorm over them. */
static void matmul_layernorm_features(Onnx__ModelProto *m)
{
    ints(mb_node(m, "Transpose", "tr", "X", "xt"), "perm", 3, (int64_t[]){ 0, 2, 1 });
    mb_initializer_filled(m, "Wm", MB_FLOAT, MB_DIMS(C, C), 0.1);
    mb_node(m, "MatMul", "mm", "xt,Wm", "h");
    mb_initializer_filled(m, "g", MB_FLOAT, MB_DIMS(C), 1.0);
    mb_attr_int(mb_node(m, "LayerNormalization", "ln", "h,g", "n"), "axis", -1);
    ints(mb_node(m, "Transpose", "back", "n", "Y"), "perm", 3, (int64_t[]){ 0, 2, 1 });
}

static void layernorm_over_time(Onnx__ModelProto *m)
{
    mb_initializer_filled(m, "g", MB_FLOAT, MB_DIMS(1), 1.0);
    mb_attr_int(mb_node(m, "LayerNormalization", "ln", "X,g", "Y"), "axis", -1);
}

static void causal_conv(Onnx__ModelProto *m) { conv1d(m, "X", "Y", 3, 1, 1, 2, 0); }
static void dilated_conv(Onnx__ModelProto *m) { conv1d(m, "X", "Y", 3, 2, 1, 4, 0); }
static void lookahead_conv(Onnx__ModelProto *m) { conv1d(m, "X", "Y", 3, 1, 1, 1, 1); }
static void delaying_conv(Onnx__ModelProto *m) { conv1d(m, "X", "Y", 2, 1, 1, 3, 0); }
static void strided_conv(Onnx__ModelProto *m) { conv1d(m, "X", "Y", 2, 1, 2, 1, 0); }

/* A zero Pad of 2 frames before an unpadded Conv (F.pad(x, (2, 0))). */
static void pad_then_conv(Onnx__ModelProto *m)
{
    mb_initializer_int64(m, "pads", MB_DIMS(6), (int64_t[]){ 0, 0, 2, 0, 0, 0 });
    mb_node(m, "Pad", "pad", "X,pads", "p");
    conv1d(m, "p", "Y", 3, 1, 1, 0, 0);
}

/* pads 2,2 and a Slice that drops the 2 frames right padding added (TCN chomp). */
static void chomp_conv(Onnx__ModelProto *m)
{
    conv1d(m, "X", "c", 3, 1, 1, 2, 2);
    mb_initializer_int64(m, "st", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "en", MB_DIMS(1), (int64_t[]){ -2 });
    mb_initializer_int64(m, "ax", MB_DIMS(1), (int64_t[]){ 2 });
    mb_node(m, "Slice", "chomp", "c,st,en,ax", "Y");
}

static void causal_avgpool(Onnx__ModelProto *m)
{
    Onnx__NodeProto *n = mb_node(m, "AveragePool", "pool", "X", "Y");
    ints(n, "kernel_shape", 1, (int64_t[]){ 2 });
    ints(n, "pads", 2, (int64_t[]){ 1, 0 });
    mb_attr_int(n, "count_include_pad", 1);
}

static void padded_maxpool(Onnx__ModelProto *m)
{
    Onnx__NodeProto *n = mb_node(m, "MaxPool", "pool", "X", "Y");
    ints(n, "kernel_shape", 1, (int64_t[]){ 2 });
    ints(n, "pads", 2, (int64_t[]){ 1, 0 });
}

static void global_pool(Onnx__ModelProto *m)
{
    mb_node(m, "GlobalAveragePool", "gap", "X", "g");
    mb_node(m, "Add", "add", "X,g", "Y");
}

static void mean_over_time(Onnx__ModelProto *m)
{
    Onnx__NodeProto *n = mb_node(m, "ReduceMean", "mean", "X", "mu");
    ints(n, "axes", 1, (int64_t[]){ 2 });
    mb_node(m, "Sub", "centre", "X,mu", "Y");
}

static void softmax_over_time(Onnx__ModelProto *m)
{
    mb_attr_int(mb_node(m, "Softmax", "sm", "X", "Y"), "axis", 2);
}

static void cumsum_over_time(Onnx__ModelProto *m)
{
    mb_initializer_int64(m, "axis", MB_SCALAR, (int64_t[]){ 2 });
    mb_node(m, "CumSum", "cs", "X,axis", "Y");
}

static void instance_norm(Onnx__ModelProto *m)
{
    mb_initializer_filled(m, "sc", MB_FLOAT, MB_DIMS(C), 1.0);
    mb_initializer_filled(m, "bi", MB_FLOAT, MB_DIMS(C), 0.0);
    mb_node(m, "InstanceNormalization", "in", "X,sc,bi", "Y");
}

/* Self-attention scores: X^T X mixes every frame with every other. */
static void attention_scores(Onnx__ModelProto *m)
{
    ints(mb_node(m, "Transpose", "tr", "X", "xt"), "perm", 3, (int64_t[]){ 0, 2, 1 });
    mb_node(m, "MatMul", "scores", "xt,X", "Y");
}

/* A GRU along time: [T, batch, C] from X. */
static void gru_along_time(Onnx__ModelProto *m, const char *direction)
{
    ints(mb_node(m, "Transpose", "tr", "X", "xs"), "perm", 3, (int64_t[]){ 2, 0, 1 });
    int64_t dirs = direction ? 2 : 1;
    mb_weights(m, MB_FLOAT, "W", "R", dirs, 3, 4, C, 0.1);
    mb_recurrent(m, "GRU", "gru", 4, direction, "xs,W,R", "Y");
}
static void forward_gru(Onnx__ModelProto *m) { gru_along_time(m, NULL); }
static void bidirectional_gru(Onnx__ModelProto *m) { gru_along_time(m, "bidirectional"); }

/* A GRU with time in its batch: it runs along the channels of each frame. */
static void per_frame_gru(Onnx__ModelProto *m)
{
    ints(mb_node(m, "Transpose", "tr", "X", "xc"), "perm", 3, (int64_t[]){ 1, 2, 0 });
    mb_initializer_int64(m, "axes", MB_DIMS(1), (int64_t[]){ 3 });
    mb_node(m, "Unsqueeze", "unsq", "xc,axes", "xs"); /* [C, T, batch, 1] */
    mb_initializer_int64(m, "fold", MB_DIMS(3), (int64_t[]){ C, -1, 1 });
    mb_node(m, "Reshape", "fold", "xs,fold", "xf"); /* [C, T * batch, 1] */
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, 4, 1, 0.1);
    mb_recurrent(m, "GRU", "intra", 4, NULL, "xf,W,R", "y,h"); /* h [1, T * batch, 4] */
    /* unfolded to [T, batch, 4] with sizes taken from X, as exporters do */
    mb_node(m, "Shape", "shape", "X", "sx");
    mb_initializer_int64(m, "at_t", MB_DIMS(1), (int64_t[]){ 2 });
    mb_initializer_int64(m, "at_b", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "hidden", MB_DIMS(1), (int64_t[]){ 4 });
    mb_node(m, "Gather", "t", "sx,at_t", "t");
    mb_node(m, "Gather", "b", "sx,at_b", "b");
    mb_attr_int(mb_node(m, "Concat", "tb", "t,b,hidden", "tb"), "axis", 0);
    mb_node(m, "Reshape", "unfold", "h,tb", "Y");
}

/* Time flattened into the features for good. */
static void flattened(Onnx__ModelProto *m)
{
    mb_attr_int(mb_node(m, "Flatten", "flat", "X", "Y"), "axis", 1);
}

/* An op of a custom domain. */
static void custom_op(Onnx__ModelProto *m)
{
    Onnx__NodeProto *n = mb_node(m, "MyFilter", "mine", "X", "Y");
    n->domain = mb_must(strdup("com.example"));
}

/* ---- the cases ----------------------------------------------------------------- */

static const stream_case cases[] = {
    { "frame-wise ops", frame_wise, false, RNNSTATE_STREAM_EXACT, 1, 0, 0, NULL, NULL },
    { "an input without time broadcast", embedding_added, false, RNNSTATE_STREAM_EXACT, 1, 0, 0,
      NULL, NULL },
    { "MatMul and LayerNorm over features", matmul_layernorm_features, false,
      RNNSTATE_STREAM_EXACT, 1, 0, 0, NULL, NULL },
    { "causal Conv (pads)", causal_conv, false, RNNSTATE_STREAM_EXACT, 1, 1, 2, NULL, NULL },
    { "dilated causal Conv", dilated_conv, false, RNNSTATE_STREAM_EXACT, 1, 1, 4, NULL, NULL },
    { "zero Pad before a Conv", pad_then_conv, false, RNNSTATE_STREAM_EXACT, 1, 1, 2, NULL, NULL },
    { "Conv and a chomp Slice", chomp_conv, false, RNNSTATE_STREAM_EXACT, 1, 1, 2, NULL, NULL },
    { "strided Conv", strided_conv, false, RNNSTATE_STREAM_EXACT, 2, 1, 1, NULL, NULL },
    { "causal AveragePool", causal_avgpool, false, RNNSTATE_STREAM_EXACT, 1, 1, 1, NULL, NULL },
    { "GRU along time", forward_gru, false, RNNSTATE_STREAM_EXACT, 1, 0, 0, NULL, NULL },
    { "per-frame GRU", per_frame_gru, false, RNNSTATE_STREAM_EXACT, 1, 0, 0, NULL, NULL },
    { "causal Conv, caches off", causal_conv, true, RNNSTATE_STREAM_NONE, 1, 0, 0, "Conv",
      "needs 2 frame" },
    { "look-ahead Conv", lookahead_conv, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "Conv",
      "looks 1 frame ahead: pads 1,1 along time" },
    { "delaying Conv", delaying_conv, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "Conv",
      "delays the sequence" },
    { "padded MaxPool", padded_maxpool, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "MaxPool",
      "-infinity" },
    { "global pool", global_pool, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "GlobalAveragePool",
      "pools over the whole time axis" },
    { "mean over time", mean_over_time, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "ReduceMean",
      "time axis" },
    { "Softmax over time", softmax_over_time, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "Softmax",
      "time" },
    { "CumSum over time", cumsum_over_time, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "CumSum",
      "time" },
    { "LayerNorm over time", layernorm_over_time, false, RNNSTATE_STREAM_NONE, 1, 0, 0,
      "LayerNormalization", "time" },
    { "InstanceNorm", instance_norm, false, RNNSTATE_STREAM_NONE, 1, 0, 0,
      "InstanceNormalization", "time" },
    { "attention scores", attention_scores, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "MatMul",
      "time" },
    { "bidirectional GRU", bidirectional_gru, false, RNNSTATE_STREAM_NONE, 1, 0, 0, "GRU",
      "backward" },
    { "Flatten merging time", flattened, false, RNNSTATE_STREAM_NONE, 1, 0, 0, NULL,
      "time" },
    { "an op the analysis does not know", custom_op, false, RNNSTATE_STREAM_UNKNOWN, 1, 0, 0,
      "MyFilter", "MyFilter" },
};

/* ---- running ------------------------------------------------------------------- */

static size_t context_pairs(const rnnstate_report *r, int64_t *first_frames)
{
    size_t n = 0;
    *first_frames = 0;
    for (size_t i = 0; i < r->n_pairs; i++) {
        const rnnstate_state_pair *p = &r->pairs[i];
        if (p->kind != RNNSTATE_PAIR_CONTEXT)
            continue;
        if (!n++ && p->rank == 3 && !p->shape[2].param)
            *first_frames = p->shape[2].value;
    }
    return n;
}

/* X [batch, C, T] -> build -> Y, rewritten with --time X:2. */
static void rewrite_model(void (*build)(Onnx__ModelProto *m), bool context_caches, mb_run *run)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "batch,4,T");
    build(m);
    mb_output(m, "Y", MB_FLOAT, NULL);
    rnnstate_options o;
    rnnstate_options_init(&o);
    rnnstate_time_axis x_time = { "X", 2 };
    o.n_time_axes = 1;
    o.time_axes = &x_time;
    o.context_caches = context_caches;
    mb_rewrite(m, &o, run);
}

static void run_case(const stream_case *c)
{
    mb_run run;
    rewrite_model(c->build, !c->no_context_caches, &run);
    const rnnstate_report *r = run.report;
    if (r->stream_verdict != c->verdict) {
        for (size_t i = 0; i < r->n_blockers; i++)
            print_message("%s: blocked by %s '%s': %s\n", c->name, r->blockers[i].op,
                          r->blockers[i].name, r->blockers[i].reason);
        fail_msg("%s: verdict %d, expected %d", c->name, (int)r->stream_verdict, (int)c->verdict);
    }
    assert_int_equal(r->chunk_multiple, c->chunk_multiple);
    int64_t frames;
    assert_int_equal(context_pairs(r, &frames), c->context_pairs);
    assert_int_equal(frames, c->frames);
    if (!c->reason) {
        assert_int_equal(r->n_blockers, 0);
    } else {
        assert_int_equal(r->n_blockers, 1);
        if (c->blocker_op)
            assert_string_equal(r->blockers[0].op, c->blocker_op);
        if (!strstr(r->blockers[0].reason, c->reason))
            fail_msg("%s: reason \"%s\" lacks \"%s\"", c->name, r->blockers[0].reason, c->reason);
    }
    mb_run_free(&run);
}

static void test_each_op_class(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
}

/* A context cache's pair: same shape in and out, the frames it carries along
 * time, the batch named after the input's, optional with a zero default. */
static void test_context_pair_is_feedable(void **state)
{
    (void)state;
    mb_run run;
    rewrite_model(dilated_conv, true, &run);
    assert_int_equal(run.report->n_pairs, 1);
    const rnnstate_state_pair *p = &run.report->pairs[0];
    assert_int_equal(p->kind, RNNSTATE_PAIR_CONTEXT);
    assert_true(p->added);
    assert_true(p->optional);
    assert_string_equal(p->dtype, "float32");
    assert_int_equal(p->rank, 3);
    assert_string_equal(p->shape[0].param, "batch");
    assert_int_equal(p->shape[1].value, C);
    assert_int_equal(p->shape[2].value, 4); /* (kernel - 1) * dilation */
    assert_int_equal(p->batch_axis, 0);
    mb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_op_class),
        cmocka_unit_test(test_context_pair_is_feedable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
