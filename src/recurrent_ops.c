/* The recurrent ops: ONNX RNN, GRU and LSTM (opsets 1-22), and ONNX
 * Runtime's com.microsoft DynamicQuantizeLSTM. In all of them initial_h is
 * input 5 and initial_c input 6, Y_h output 1 and Y_c output 2; absent
 * optional inputs and outputs are "" or missing at the end. */
#include "recurrent_ops.h"

#include <string.h>

#include "model/onnx_build.h"

const recurrent_op recurrent_ops[] = {
    { .name = "RNN", .domain = "", .n_slots = 1, .gates = 1, .hidden_input = 2,
      .hidden_axis = 2, .has_layout = true, .quantized_weights = false,
      .initial_state_input = { 5 }, .final_state_output = { 1 } },
    { .name = "GRU", .domain = "", .n_slots = 1, .gates = 3, .hidden_input = 2,
      .hidden_axis = 2, .has_layout = true, .quantized_weights = false,
      .initial_state_input = { 5 }, .final_state_output = { 1 } },
    { .name = "LSTM", .domain = "", .n_slots = 2, .gates = 4, .hidden_input = 2,
      .hidden_axis = 2, .has_layout = true, .quantized_weights = false,
      .initial_state_input = { 5, 6 }, .final_state_output = { 1, 2 } },
    /* R is stored transposed, [D, H, 4H]; no layout attribute; int8 W and R */
    { .name = "DynamicQuantizeLSTM", .domain = "com.microsoft", .n_slots = 2, .gates = 4,
      .hidden_input = 2, .hidden_axis = 1, .has_layout = false, .quantized_weights = true,
      .initial_state_input = { 5, 6 }, .final_state_output = { 1, 2 } },
};

#define N_OPS (sizeof recurrent_ops / sizeof recurrent_ops[0])
_Static_assert(N_OPS >= 1 && N_OPS <= RECURRENT_OPS_MAX,
               "recurrent_ops[] must fit the per-op counters: raise RECURRENT_OPS_MAX");
const size_t recurrent_op_count = N_OPS;

const char *const slot_letter[] = { "h", "c" };
_Static_assert(sizeof slot_letter / sizeof slot_letter[0] == RECURRENT_MAX_SLOTS,
               "one letter per state slot");

static bool in_domain(const recurrent_op *op, const char *domain)
{
    if (!*op->domain)
        return !*domain || !strcmp(domain, "ai.onnx");
    return !strcmp(domain, op->domain);
}

const recurrent_op *recurrent_op_of(const Onnx__NodeProto *node)
{
    const char *domain = str_or_empty(node->domain), *type = str_or_empty(node->op_type);
    /* asked of every node, by several passes: the first letter rules out
     * nearly every op without a call */
    for (size_t i = 0; i < N_OPS; i++)
        if (type[0] == recurrent_ops[i].name[0] && !strcmp(type, recurrent_ops[i].name) &&
            in_domain(&recurrent_ops[i], domain))
            return &recurrent_ops[i];
    return NULL;
}

size_t recurrent_op_index(const recurrent_op *op)
{
    return (size_t)(op - recurrent_ops);
}

bool recurrent_batch_first(const recurrent_op *op, const Onnx__NodeProto *node)
{
    return op->has_layout && node_attr_int(node, "layout", 0) == 1;
}
