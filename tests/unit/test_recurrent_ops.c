/* The table of recurrent ops (src/recurrent_ops.c): which nodes it
 * recognises, and the facts the passes read from each entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/onnx_build.h"
#include "recurrent_ops.h"

/* A node of `op_type` in `domain` (NULL: the field is absent). */
static Onnx__NodeProto *node_of(const char *op_type, const char *domain)
{
    Onnx__NodeProto *node = node_new(op_type, "n");
    assert_non_null(node);
    if (domain)
        assert_true(set_string(&node->domain, domain));
    return node;
}

static const recurrent_op *op_of(const char *op_type, const char *domain)
{
    Onnx__NodeProto *node = node_of(op_type, domain);
    const recurrent_op *op = recurrent_op_of(node);
    protobuf_c_message_free_unpacked(&node->base, NULL);
    return op;
}

static void recognises_each_op_in_its_domain(void **state)
{
    (void)state;
    static const struct {
        const char *op_type, *domain, *expected; /* expected NULL: not recurrent */
    } cases[] = {
        { "RNN", NULL, "RNN" },
        { "GRU", "", "GRU" },
        { "LSTM", "ai.onnx", "LSTM" },
        { "DynamicQuantizeLSTM", "com.microsoft", "DynamicQuantizeLSTM" },
        { "DynamicQuantizeLSTM", NULL, NULL },  /* a contrib op outside its domain */
        { "LSTM", "com.microsoft", NULL },      /* a default op in another domain */
        { "GRU", "ai.onnx.ml", NULL },
        { "lstm", NULL, NULL },                 /* op types are case-sensitive */
        { "MatMul", NULL, NULL },
        { "", NULL, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const recurrent_op *op = op_of(cases[i].op_type, cases[i].domain);
        if (!cases[i].expected)
            assert_null(op);
        else
            assert_string_equal(op->name, cases[i].expected);
    }
}

static void node_without_op_type_is_not_recurrent(void **state)
{
    (void)state;
    Onnx__NodeProto node;
    onnx__node_proto__init(&node); /* op_type and domain NULL */
    assert_null(recurrent_op_of(&node));
}

/* Every fact of every entry, as the ONNX and ONNX Runtime specs give them. */
static void entries_hold_the_spec_facts(void **state)
{
    (void)state;
    static const recurrent_op expected[] = {
        { "RNN", "", 1, 1, 2, 2, true, false, { 5 }, { 1 } },
        { "GRU", "", 1, 3, 2, 2, true, false, { 5 }, { 1 } },
        { "LSTM", "", 2, 4, 2, 2, true, false, { 5, 6 }, { 1, 2 } },
        { "DynamicQuantizeLSTM", "com.microsoft", 2, 4, 2, 1, false, true, { 5, 6 }, { 1, 2 } },
    };
    assert_int_equal(sizeof expected / sizeof expected[0], recurrent_op_count);
    for (size_t i = 0; i < recurrent_op_count; i++) {
        const recurrent_op *op = &recurrent_ops[i], *want = &expected[i];
        assert_string_equal(op->name, want->name);
        assert_string_equal(op->domain, want->domain);
        assert_int_equal(op->n_slots, want->n_slots);
        assert_int_equal(op->gates, want->gates);
        assert_int_equal(op->hidden_input, want->hidden_input);
        assert_int_equal(op->hidden_axis, want->hidden_axis);
        assert_int_equal(op->has_layout, want->has_layout);
        assert_int_equal(op->quantized_weights, want->quantized_weights);
        for (int s = 0; s < RECURRENT_MAX_SLOTS; s++) {
            assert_int_equal(op->initial_state_input[s], want->initial_state_input[s]);
            assert_int_equal(op->final_state_output[s], want->final_state_output[s]);
        }
        assert_int_equal(recurrent_op_index(op), i);
    }
    assert_string_equal(slot_letter[0], "h");
    assert_string_equal(slot_letter[1], "c");
}

static bool batch_first(const char *op_type, const char *domain, int64_t layout)
{
    Onnx__NodeProto *node = node_of(op_type, domain);
    if (layout >= 0)
        assert_true(node_add_int_attr(node, "layout", layout));
    const recurrent_op *op = recurrent_op_of(node);
    assert_non_null(op);
    bool result = recurrent_batch_first(op, node);
    protobuf_c_message_free_unpacked(&node->base, NULL);
    return result;
}

static void layout_one_is_batch_first_for_ops_with_a_layout(void **state)
{
    (void)state;
    assert_true(batch_first("LSTM", NULL, 1));
    assert_true(batch_first("GRU", NULL, 1));
    assert_false(batch_first("RNN", NULL, 0));
    assert_false(batch_first("GRU", NULL, -1)); /* no attribute: layout 0 */
    /* the quantized op has no layout attribute: one is ignored */
    assert_false(batch_first("DynamicQuantizeLSTM", "com.microsoft", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recognises_each_op_in_its_domain),
        cmocka_unit_test(node_without_op_type_is_not_recurrent),
        cmocka_unit_test(entries_hold_the_spec_facts),
        cmocka_unit_test(layout_one_is_batch_first_for_ops_with_a_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
