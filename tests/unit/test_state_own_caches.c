/* state/own_caches.c: the context caches a model already carries (GTCRN,
 * DPCRN) are reported as pairs of kind context, added false, the graph
 * untouched; inputs that only look like one are not. Each model has an
 * already-stateful GRU (h -> h_out), so that it is analysed, and a cache
 * [1, 2, 2] concatenated along axis 2 in front of X [1, 2, T].
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

typedef struct variant {
    const char *cache_out_dims; /* declared shape of cache_out */
    int64_t tail_start;         /* the Slice's start along the sliced axis */
    int64_t tail_axis;          /* the Slice's axis */
    int64_t concat_axis;
    bool front_is_x;            /* X first, the cache after it */
    bool both_from_cache;       /* Concat(cache, cache): no frames of this call */
    bool with_default;          /* the cache input has a zero initializer */
} variant;

static const variant plain = { "1,2,2", -2, 2, 2, false, false, false };

/* The GRU: X2 [T, 1, 3], h [1, 1, 4] -> Y2, h_out. */
static void stateful_gru(Onnx__ModelProto *m)
{
    mb_input(m, "X2", MB_FLOAT, "T,1,3");
    mb_input(m, "h", MB_FLOAT, "1,1,4");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, 4, 3, 0.1);
    mb_recurrent(m, "GRU", "gru", 4, NULL, "X2,W,R,,,h", "Y2,h_out");
    mb_output(m, "Y2", MB_FLOAT, "T,1,1,4");
    mb_output(m, "h_out", MB_FLOAT, "1,1,4");
}

static Onnx__ModelProto *cache_model(const variant *v)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "1,2,T");
    mb_input(m, "cache", MB_FLOAT, "1,2,2");
    if (v->with_default)
        mb_initializer_filled(m, "cache", MB_FLOAT, MB_DIMS(1, 2, 2), 0.0);
    stateful_gru(m);
    const char *cat_in = v->both_from_cache ? "cache,cache" : v->front_is_x ? "X,cache" : "cache,X";
    mb_attr_int(mb_node(m, "Concat", "cat", cat_in, "cat"), "axis", v->concat_axis);
    mb_initializer_int64(m, "start", MB_DIMS(1), (int64_t[]){ v->tail_start });
    mb_initializer_int64(m, "end", MB_DIMS(1), (int64_t[]){ INT64_MAX });
    mb_initializer_int64(m, "axes", MB_DIMS(1), (int64_t[]){ v->tail_axis });
    mb_node(m, "Slice", "tail", "cat,start,end,axes", "cache_out");
    mb_node(m, "Relu", "conv_stand_in", "cat", "Y");
    mb_output(m, "Y", MB_FLOAT, "1,2,?");
    mb_output(m, "cache_out", MB_FLOAT, v->cache_out_dims);
    return m;
}

/* The report's pairs as "input->output:kind" joined by spaces. */
static const char *pairs_with_kinds(const rnnstate_report *r)
{
    static char buf[512];
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_pairs && used < sizeof buf; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s->%s:%s", i ? " " : "",
                                 r->pairs[i].input, r->pairs[i].output,
                                 r->pairs[i].kind == RNNSTATE_PAIR_CONTEXT ? "context"
                                                                           : "recurrent");
    return buf;
}

static void assert_pairs(const variant *v, const rnnstate_options *o, const char *want)
{
    mb_run run;
    mb_rewrite(cache_model(v), o, &run);
    assert_string_equal(pairs_with_kinds(run.report), want);
    mb_run_free(&run);
}

static void test_cache_concatenated_in_front_is_a_context_pair(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(cache_model(&plain), NULL, &run);
    assert_string_equal(pairs_with_kinds(run.report), "h->h_out:recurrent cache->cache_out:context");
    const rnnstate_state_pair *p = mb_report_pair(run.report, "cache");
    assert_string_equal(mb_pair_shape_str(p), "1,2,2");
    assert_string_equal(p->dtype, "float32");
    assert_false(p->optional);
    assert_false(p->added);
    assert_int_equal(p->batch_axis, -1);
    /* nothing added: annotated, the pair in the metadata with its kind */
    assert_string_equal(mb_input_names(run.g), "X,cache,X2,h");
    assert_string_equal(mb_output_names(run.g), "Y2,h_out,Y,cache_out");
    mb_assert_annotated(
        &run,
        "[{\"input\": \"h\", \"output\": \"h_out\", \"shape\": [1, 1, 4], \"dtype\": "
        "\"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}, "
        "{\"input\": \"cache\", \"output\": \"cache_out\", \"shape\": [1, 2, 2], \"dtype\": "
        "\"float32\", \"batch_axis\": null, \"optional\": false, \"kind\": \"context\"}]",
        "[{\"input\": \"X2\", \"axis\": 0}]");
    mb_run_free(&run);
}

/* GTCRN: this call's frame count is the start (Slice 1:), written into the
 * cache with ScatterND; a default makes the input optional. */
static void test_cache_written_back_through_scatternd_with_a_default(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "1,2,1");
    mb_input(m, "cache", MB_FLOAT, "1,2,2");
    mb_initializer_filled(m, "cache", MB_FLOAT, MB_DIMS(1, 2, 2), 0.0);
    stateful_gru(m);
    mb_attr_int(mb_node(m, "Concat", "cat", "cache,X", "cat"), "axis", -1);
    mb_initializer_int64(m, "one", MB_DIMS(1), (int64_t[]){ 1 });
    mb_initializer_int64(m, "end", MB_DIMS(1), (int64_t[]){ INT64_MAX });
    mb_initializer_int64(m, "axes", MB_DIMS(1), (int64_t[]){ 2 });
    mb_node(m, "Slice", "tail", "cat,one,end,axes", "tail");
    mb_initializer_int64(m, "at0", MB_DIMS(1, 1), (int64_t[]){ 0 });
    mb_node(m, "ScatterND", "write", "cache,at0,tail", "cache_out");
    mb_node(m, "Relu", "conv_stand_in", "cat", "Y");
    mb_output(m, "Y", MB_FLOAT, "1,2,3");
    mb_output(m, "cache_out", MB_FLOAT, "1,2,2");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_string_equal(pairs_with_kinds(run.report), "h->h_out:recurrent cache->cache_out:context");
    assert_true(mb_report_pair(run.report, "cache")->optional);
    mb_run_free(&run);
}

static void test_inputs_that_are_no_cache_get_no_pair(void **state)
{
    (void)state;
    const char *none = "h->h_out:recurrent";
    variant v = plain;
    v.cache_out_dims = "1,2,3"; /* an output of another shape */
    assert_pairs(&v, NULL, none);
    v = plain;
    v.tail_axis = 1; /* the tail taken along another axis */
    assert_pairs(&v, NULL, none);
    v = plain;
    v.concat_axis = 1; /* concatenated along another axis than the tail */
    assert_pairs(&v, NULL, none);
    v = plain;
    v.tail_start = -1; /* keeps fewer frames than the cache holds (declared alike) */
    assert_pairs(&v, NULL, none);
    v = plain;
    v.front_is_x = true; /* the input after this call's frames */
    assert_pairs(&v, NULL, none);
    v = plain;
    v.both_from_cache = true; /* no frames of this call */
    assert_pairs(&v, NULL, none);
}

/* A Concat of an input that is not a cache: a speaker embedding joined to
 * the features, the whole result an output. */
static void test_concatenated_input_without_a_tail_gets_no_pair(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "1,2,T");
    mb_input(m, "emb", MB_FLOAT, "1,2,T");
    stateful_gru(m);
    mb_attr_int(mb_node(m, "Concat", "cat", "emb,X", "cat"), "axis", 1);
    mb_node(m, "Identity", "pass", "cat", "Y");
    mb_output(m, "Y", MB_FLOAT, "1,4,T");
    mb_run run;
    mb_rewrite(m, NULL, &run);
    assert_string_equal(pairs_with_kinds(run.report), "h->h_out:recurrent");
    mb_run_free(&run);
}

/* Required state inputs: the cache's default goes, as a recurrent state
 * input's would. */
static void test_required_state_inputs_drop_the_cache_default(void **state)
{
    (void)state;
    rnnstate_options o;
    rnnstate_options_init(&o);
    o.state_inputs = RNNSTATE_STATE_INPUTS_REQUIRED;
    variant v = plain;
    v.with_default = true;
    mb_run run;
    mb_rewrite(cache_model(&v), &o, &run);
    assert_string_equal(pairs_with_kinds(run.report), "h->h_out:recurrent cache->cache_out:context");
    assert_false(mb_report_pair(run.report, "cache")->optional);
    assert_string_equal(mb_initializer_names(run.g), "W,R,start,end,axes");
    mb_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_concatenated_in_front_is_a_context_pair),
        cmocka_unit_test(test_cache_written_back_through_scatternd_with_a_default),
        cmocka_unit_test(test_inputs_that_are_no_cache_get_no_pair),
        cmocka_unit_test(test_concatenated_input_without_a_tail_gets_no_pair),
        cmocka_unit_test(test_required_state_inputs_drop_the_cache_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
