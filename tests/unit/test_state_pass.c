/* The state pass, case by case (issue 2, section 5): each test builds a small
 * model in memory, runs the whole public pipeline (load -> rewrite -> save)
 * and asserts the exact graph and report that come out.
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

#define H 4 /* hidden_size of every layer unless a test says otherwise */
#define I 3 /* input size of X */

static int gates_of(const char *op)
{
    return !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
}

/* A recurrent layer named `name` reading `x` (of `input_size` features),
 * with weights W_<name>/R_<name> of type `type`; `init_h`/`init_c` NULL leave
 * the slots out; `direction` NULL leaves the attribute out. */
static Onnx__NodeProto *add_layer_ex(Onnx__ModelProto *m, const char *op, const char *name,
                                     int32_t type, const char *direction, const char *x,
                                     int64_t input_size, const char *init_h, const char *init_c,
                                     const char *outputs)
{
    char w[64], r[64], inputs[512];
    int64_t dirs = direction && !strcmp(direction, "bidirectional") ? 2 : 1;
    snprintf(w, sizeof w, "W_%s", name);
    snprintf(r, sizeof r, "R_%s", name);
    mb_weights(m, type, w, r, dirs, gates_of(op), H, input_size, 0.1);
    if (init_c)
        snprintf(inputs, sizeof inputs, "%s,%s,%s,,,%s,%s", x, w, r, init_h ? init_h : "", init_c);
    else if (init_h)
        snprintf(inputs, sizeof inputs, "%s,%s,%s,,,%s", x, w, r, init_h);
    else
        snprintf(inputs, sizeof inputs, "%s,%s,%s", x, w, r);
    return mb_recurrent(m, op, name, H, direction, inputs, outputs);
}

static Onnx__NodeProto *add_layer(Onnx__ModelProto *m, const char *op, const char *name,
                                  const char *x, int64_t input_size, const char *init_h,
                                  const char *init_c, const char *outputs)
{
    return add_layer_ex(m, op, name, MB_FLOAT, NULL, x, input_size, init_h, init_c, outputs);
}

/* A model of IR `ir` importing opset `opset` whose first input is X (float,
 * `x_dims`): how almost every test starts. */
static Onnx__ModelProto *model_with_x(int64_t ir, int64_t opset, const char *x_dims)
{
    Onnx__ModelProto *m = mb_new(ir, opset);
    mb_input(m, "X", MB_FLOAT, x_dims);
    return m;
}

/* The simplest test model: X, one recurrent layer over it, its Y an output. */
typedef struct layer_spec {
    int64_t ir, opset;
    const char *x_dims, *op, *name;
    const char *init_h, *init_c; /* NULL: the slot is left out */
    const char *outputs;         /* the layer's outputs, as for mb_node */
    const char *y_dims;
} layer_spec;

static Onnx__ModelProto *layer_model(const layer_spec *l)
{
    Onnx__ModelProto *m = model_with_x(l->ir, l->opset, l->x_dims);
    add_layer(m, l->op, l->name, "X", I, l->init_h, l->init_c, l->outputs);
    mb_output(m, "Y", MB_FLOAT, l->y_dims);
    return m;
}

/* PyTorch's shape computation for a zero state: [first, batch-of-x, H] via
 * Shape -> Gather -> Unsqueeze -> Concat, nodes and initializers prefixed
 * with `p`. Returns the name of the shape value ("<p>_shape"). */
static const char *add_torch_state_shape(Onnx__ModelProto *m, const char *p, const char *x,
                                         int64_t first)
{
    static char out[64];
    char n[64], v[64], v2[64], idx[64], axes[64], c_first[64], c_hidden[64];
    snprintf(idx, sizeof idx, "%s_idx", p);
    snprintf(axes, sizeof axes, "%s_axes", p);
    snprintf(c_first, sizeof c_first, "%s_first", p);
    snprintf(c_hidden, sizeof c_hidden, "%s_hidden", p);
    mb_initializer_int64(m, idx, MB_SCALAR, (int64_t[]){ 1 });
    mb_initializer_int64(m, axes, MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, c_first, MB_DIMS(1), (int64_t[]){ first });
    mb_initializer_int64(m, c_hidden, MB_DIMS(1), (int64_t[]){ H });
    snprintf(n, sizeof n, "%s_shape_x", p);
    snprintf(v, sizeof v, "%s_xs", p);
    mb_node(m, "Shape", n, x, v);
    snprintf(n, sizeof n, "%s_gather", p);
    snprintf(v2, sizeof v2, "%s_b", p);
    char in[256];
    snprintf(in, sizeof in, "%s,%s", v, idx);
    mb_attr_int(mb_node(m, "Gather", n, in, v2), "axis", 0);
    snprintf(n, sizeof n, "%s_unsqueeze", p);
    snprintf(v, sizeof v, "%s_b1", p);
    snprintf(in, sizeof in, "%s,%s", v2, axes);
    mb_node(m, "Unsqueeze", n, in, v);
    snprintf(n, sizeof n, "%s_concat", p);
    snprintf(out, sizeof out, "%s_shape", p);
    snprintf(in, sizeof in, "%s,%s,%s", c_first, v, c_hidden);
    mb_attr_int(mb_node(m, "Concat", n, in, out), "axis", 0);
    return out;
}

/* ---- the fixture ------------------------------------------------------------ */

/* Each test rewrites its model through rewrite(), into a run the fixture
 * owns: the teardown frees it even when an assertion stops the test midway,
 * and a second rewrite() in one test frees the first. */
static int run_setup(void **state)
{
    *state = calloc(1, sizeof(mb_run));
    return *state ? 0 : -1;
}

static int run_teardown(void **state)
{
    mb_run_free(*state);
    free(*state);
    return 0;
}

static mb_run *rewrite(void **state, Onnx__ModelProto *m, const rnnstate_options *options)
{
    mb_run *run = *state;
    mb_run_free(run);
    mb_rewrite(m, options, run);
    return run;
}

#define REWRITE_TEST(f) cmocka_unit_test_setup_teardown(f, run_setup, run_teardown)

/* ---- asserts --------------------------------------------------------------- */

static void assert_vi(const Onnx__ValueInfoProto *vi, int32_t type, const char *shape)
{
    assert_non_null(vi);
    assert_int_equal(mb_elem_type(vi), type);
    assert_string_equal(mb_shape_str(vi), shape);
}

/* "<name>_fill", in a static buffer. */
static const char *fill_name(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s_fill", name);
    return buf;
}

/* A default initializer `name` of `type` and dims whose every byte is 0. */
static void assert_zero_default(const Onnx__GraphProto *g, const char *name, int32_t type,
                                const char *dims, size_t count)
{
    const Onnx__TensorProto *t = mb_find_initializer(g, name);
    assert_non_null(t);
    assert_int_equal(t->data_type, type);
    assert_string_equal(mb_dims_str(t), dims);
    assert_true(mb_tensor_all_zero(t, count));
}

static void assert_float_default(const Onnx__GraphProto *g, const char *name, const char *dims,
                                 const float *expected, size_t count)
{
    const Onnx__TensorProto *t = mb_find_initializer(g, name);
    assert_non_null(t);
    assert_string_equal(mb_dims_str(t), dims);
    size_t n;
    float *values = mb_tensor_floats(t, &n);
    assert_int_equal(n, count);
    for (size_t i = 0; i < n; i++)
        assert_true(values[i] == expected[i]); /* exact: a copied default */
    free(values);
}

static void assert_int64_initializer(const Onnx__GraphProto *g, const char *name, int64_t value)
{
    const Onnx__TensorProto *t = mb_find_initializer(g, name);
    assert_non_null(t);
    assert_string_equal(mb_dims_str(t), "1");
    size_t n;
    int64_t *v = mb_tensor_int64s(t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(v[0], value);
    free(v);
}

/* The producer of `value`, which must be an `op` node. */
static const Onnx__NodeProto *assert_made_by(const Onnx__GraphProto *g, const char *value,
                                             const char *op)
{
    const Onnx__NodeProto *p = mb_producer(g, value);
    assert_non_null(p);
    assert_string_equal(p->op_type, op);
    return p;
}

/* The node's slot reads the state input completed by its default
 * (state/defaults.h):
 *   Concat(input, Expand(input_fill, Concat(1, n, 1)), axis = batch_pos)
 *   n = Mul(Cast(Equal(Gather(Shape(input), [batch_pos]), [0])),
 *           Gather(Shape(x), [batch_pos]))
 * (n at `batch_pos`: 1 for [D, B, H], 0 for [B, D, H]); the input's default
 * is empty (batch 0); all of it before the node. Returns the Expand. `fill`
 * NULL means "<input>_fill". */
static const Onnx__NodeProto *assert_completed_default(const Onnx__GraphProto *g,
                                                       const Onnx__NodeProto *node, size_t slot,
                                                       const char *input, const char *x,
                                                       size_t batch_pos, const char *fill_value)
{
    assert_true(slot < node->n_input);
    const Onnx__NodeProto *outer = assert_made_by(g, node->input[slot], "Concat");
    assert_int_equal(outer->n_input, 2);
    assert_string_equal(outer->input[0], input);
    const Onnx__AttributeProto *axis = mb_find_attr(outer, "axis");
    assert_non_null(axis);
    assert_int_equal(axis->i, (int64_t)batch_pos);
    const Onnx__TensorProto *dflt = mb_find_initializer(g, input);
    assert_non_null(dflt);
    assert_int_equal(dflt->n_dims, 3);
    assert_int_equal(dflt->dims[batch_pos], 0);
    const Onnx__NodeProto *expand = assert_made_by(g, outer->input[1], "Expand");
    assert_int_equal(expand->n_input, 2);
    char fill[256];
    snprintf(fill, sizeof fill, "%s_fill", input);
    assert_string_equal(expand->input[0], fill_value ? fill_value : fill);
    const Onnx__NodeProto *concat = assert_made_by(g, expand->input[1], "Concat");
    axis = mb_find_attr(concat, "axis");
    assert_non_null(axis);
    assert_int_equal(axis->i, 0);
    assert_int_equal(concat->n_input, 3);
    const Onnx__NodeProto *mul = NULL;
    for (size_t k = 0; k < 3; k++) {
        if (k == batch_pos)
            mul = assert_made_by(g, concat->input[k], "Mul");
        else
            assert_int64_initializer(g, concat->input[k], 1);
    }
    const Onnx__NodeProto *cast = assert_made_by(g, mul->input[0], "Cast");
    const Onnx__NodeProto *equal = assert_made_by(g, cast->input[0], "Equal");
    assert_int64_initializer(g, equal->input[1], 0);
    const Onnx__NodeProto *sgather = assert_made_by(g, equal->input[0], "Gather");
    assert_int64_initializer(g, sgather->input[1], (int64_t)batch_pos);
    assert_string_equal(mb_inputs_str(assert_made_by(g, sgather->input[0], "Shape")), input);
    const Onnx__NodeProto *gather = assert_made_by(g, mul->input[1], "Gather");
    const Onnx__NodeProto *shape = assert_made_by(g, gather->input[0], "Shape");
    assert_string_equal(mb_inputs_str(shape), x);
    /* the batch axis of X equals the batch position in the state */
    assert_int64_initializer(g, gather->input[1], (int64_t)batch_pos);
    int at = mb_node_index(g, node);
    assert_true(mb_node_index(g, shape) < mb_node_index(g, gather));
    assert_true(mb_node_index(g, gather) < mb_node_index(g, mul));
    assert_true(mb_node_index(g, concat) < mb_node_index(g, expand));
    assert_true(mb_node_index(g, expand) < mb_node_index(g, outer));
    assert_true(mb_node_index(g, outer) < at);
    return expand;
}

static const Onnx__NodeProto *assert_batch_expand(const Onnx__GraphProto *g,
                                                  const Onnx__NodeProto *node, size_t slot,
                                                  const char *input, const char *x,
                                                  size_t batch_pos)
{
    return assert_completed_default(g, node, slot, input, x, batch_pos, NULL);
}

static void assert_pair(const rnnstate_report *r, const char *input, const char *output,
                        const char *shape, const char *dtype, bool optional, bool added)
{
    const rnnstate_state_pair *p = mb_report_pair(r, input);
    assert_non_null(p);
    assert_string_equal(p->output, output);
    assert_string_equal(mb_pair_shape_str(p), shape);
    assert_string_equal(p->dtype, dtype);
    assert_int_equal(p->optional, optional);
    assert_int_equal(p->added, added);
}

static const rnnstate_node_report *assert_node_report(const rnnstate_report *r, const char *name,
                                                      const char *op,
                                                      rnnstate_node_status status,
                                                      const char *inputs_added,
                                                      const char *outputs_added)
{
    const rnnstate_node_report *n = mb_report_node(r, name);
    assert_non_null(n);
    assert_string_equal(n->graph, "main");
    assert_string_equal(n->op, op);
    assert_int_equal(n->status, status);
    assert_string_equal(mb_join(n->n_inputs_added, n->inputs_added), inputs_added);
    assert_string_equal(mb_join(n->n_outputs_added, n->outputs_added), outputs_added);
    if (status != RNNSTATE_NODE_SKIPPED)
        assert_null(n->reason);
    return n;
}

static rnnstate_options required_options(void)
{
    rnnstate_options o;
    rnnstate_options_init(&o);
    o.state_inputs = RNNSTATE_STATE_INPUTS_REQUIRED;
    return o;
}

/* ---- models shared by several tests ----------------------------------------- */

/* Case a, dynamic batch: GRU without initial_h and with only Y. */
static Onnx__ModelProto *model_a_dynamic(void)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "T,batch,3", "GRU", "gru", NULL, NULL,
                                                     "Y", "T,1,batch,4" });
    return m;
}

/* Case c: LSTM whose h and c read one initializer, fixed batch 2. */
static const float hc_values[8] = { 0.5f, 1.5f, 2.5f, 3.5f, -1.0f, -2.0f, 0.25f, 8.0f };
static Onnx__ModelProto *model_c_shared(void)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    mb_initializer_float(m, "hc_init", MB_DIMS(1, 2, 4), hc_values);
    add_layer(m, "LSTM", "lstm", "X", I, "hc_init", "hc_init", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    return m;
}

/* Case d, the PyTorch pattern: Expand(Constant zeros [1,1,H], [1, batch, H]);
 * plus a dead node the exporter left behind. */
static Onnx__ModelProto *model_d_torch(void)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    const char *shape = add_torch_state_shape(m, "h", "X", 1);
    mb_constant(m, "const_h0", "h0_const", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1, 1, 4), 0));
    char in[128];
    snprintf(in, sizeof in, "h0_const,%s", shape);
    mb_node(m, "Expand", "expand_h0", in, "h0");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y,hn");
    mb_node(m, "Identity", "dead_identity", "X", "dead_out");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    return m;
}

/* Case e, the PyTorch multi-layer pattern: ConstantOfShape([2, batch, H])
 * sliced per layer, each slice read by both h and c of a 2-layer LSTM. */
static Onnx__ModelProto *model_e_torch(void)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    const char *shape = add_torch_state_shape(m, "z", "X", 2);
    Onnx__NodeProto *cos = mb_node(m, "ConstantOfShape", "zeros_of_shape", shape, "zeros");
    mb_attr_tensor(cos, "value", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1), 0));
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_initializer_int64(m, "s2", MB_DIMS(1), (int64_t[]){ 2 });
    mb_node(m, "Slice", "slice_l0", "zeros,s0,s1,s0", "h0_l0");
    mb_node(m, "Slice", "slice_l1", "zeros,s1,s2,s0", "h0_l1");
    add_layer(m, "LSTM", "lstm_l0", "X", I, "h0_l0", "h0_l0", "Y0,yh0,yc0");
    mb_initializer_int64(m, "sq_axes", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Squeeze", "squeeze_l0", "Y0,sq_axes", "X1");
    add_layer(m, "LSTM", "lstm_l1", "X1", H, "h0_l1", "h0_l1", "Y1,yh1,yc1");
    mb_node(m, "Identity", "dead_identity", "X", "dead_out");
    mb_initializer_filled(m, "unused_init", MB_FLOAT, MB_DIMS(2), 1.0);
    mb_value_info(m, "zeros", MB_FLOAT, "2,batch,4");
    mb_value_info(m, "h0_l0", MB_FLOAT, "1,batch,4");
    mb_value_info(m, "Y0", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "Y1", MB_FLOAT, "T,1,batch,4");
    return m;
}

/* Case f: a 2-layer GRU whose user passes h0 [2, batch, H] (sliced per layer)
 * and gets hn back through a Concat. */
static Onnx__ModelProto *model_f_stateful(void)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "2,batch,4");
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_initializer_int64(m, "s2", MB_DIMS(1), (int64_t[]){ 2 });
    mb_node(m, "Slice", "slice_l0", "h0,s0,s1,s0", "h0_l0");
    mb_node(m, "Slice", "slice_l1", "h0,s1,s2,s0", "h0_l1");
    add_layer(m, "GRU", "gru_l0", "X", I, "h0_l0", NULL, "Y0,hn0");
    mb_initializer_int64(m, "sq_axes", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Squeeze", "squeeze_l0", "Y0,sq_axes", "X1");
    add_layer(m, "GRU", "gru_l1", "X1", H, "h0_l1", NULL, "Y1,hn1");
    mb_attr_int(mb_node(m, "Concat", "concat_hn", "hn0,hn1", "hn"), "axis", 0);
    mb_output(m, "Y1", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "hn", MB_FLOAT, "2,batch,4");
    return m;
}

/* ---- case a: absent initial state ----------------------------------------------- */

static void test_a_absent_state_dynamic_batch_gets_input_with_expanded_zero_default(void **state)
{
    mb_run *run = rewrite(state, model_a_dynamic(), NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,?,4");
    assert_string_equal(mb_output_names(g), "Y,GRU_0_Y_h");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_FLOAT, "1,batch,4");
    /* dynamic batch: the default has batch 1 and an Expand to the batch of X */
    assert_zero_default(g, "GRU_0_initial_h_fill", MB_FLOAT, "1,1,4", 4);
    assert_string_equal(mb_node_ops(g), "Shape,Gather,Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,GRU");
    const Onnx__NodeProto *gru = mb_find_node(g, "gru");
    assert_non_null(gru);
    assert_int_equal(gru->n_input, 6);
    assert_string_equal(gru->input[3], "");
    assert_string_equal(gru->input[4], "");
    assert_batch_expand(g, gru, 5, "GRU_0_initial_h", "X", 1);
    /* Y_h was left out (outputs shorter than 2): now named */
    assert_string_equal(mb_outputs_str(gru), "Y,GRU_0_Y_h");
    /* W, R, the default, its fill, and the Gather index, [1] and [0] */
    assert_int_equal(g->n_initializer, 7);
    assert_int_equal(run->model->ir_version, 7);

    assert_true(run->report->changed);
    assert_int_equal(run->report->n_nodes, 1);
    const rnnstate_node_report *n = assert_node_report(
        run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h", "GRU_0_Y_h");
    assert_int_equal(n->n_warnings, 0);
    assert_int_equal(run->report->n_pairs, 1);
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float32", true, true);
    assert_int_equal(run->report->n_notes, 0);
    /* the pairs are recorded in the model's metadata (and the time axis,
     * test_time_axis.c) */
    assert_int_equal(run->model->n_metadata_props, 3);
    assert_string_equal(run->model->metadata_props[1]->key, RNNSTATE_TIME_METADATA_KEY);
    assert_string_equal(run->model->metadata_props[2]->key, RNNSTATE_STREAM_METADATA_KEY);
    assert_string_equal(run->model->metadata_props[0]->key, RNNSTATE_METADATA_KEY);
    assert_non_null(strstr(run->model->metadata_props[0]->value, "\"GRU_0_initial_h\""));
    assert_non_null(strstr(run->model->metadata_props[0]->value, "\"GRU_0_Y_h\""));
}

static void test_a_absent_state_fixed_batch_gets_full_shape_default_and_no_expand(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "T,2,3", "RNN", "rnn", NULL, NULL,
                                                     "Y", "T,1,2,4" });
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,RNN_0_initial_h");
    assert_vi(mb_find_input(g, "RNN_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_string_equal(mb_output_names(g), "Y,RNN_0_Y_h");
    assert_vi(mb_find_output(g, "RNN_0_Y_h"), MB_FLOAT, "1,2,4");
    assert_string_equal(mb_initializer_names(g), "W_rnn,R_rnn,RNN_0_initial_h");
    assert_zero_default(g, "RNN_0_initial_h", MB_FLOAT, "1,2,4", 8);
    assert_string_equal(mb_node_ops(g), "RNN");
    const Onnx__NodeProto *rnn = mb_find_node(g, "rnn");
    assert_string_equal(mb_inputs_str(rnn), "X,W_rnn,R_rnn,,,RNN_0_initial_h");
    assert_string_equal(mb_outputs_str(rnn), "Y,RNN_0_Y_h");

    assert_node_report(run->report, "rnn", "RNN", RNNSTATE_NODE_UPDATED, "RNN_0_initial_h",
                       "RNN_0_Y_h");
    assert_pair(run->report, "RNN_0_initial_h", "RNN_0_Y_h", "1,2,4", "float32", true, true);
    /* a fixed batch blocks any other: a note says so and how to re-export */
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes,
                                "the batch is fixed at 2 (RNN 'rnn' and its state)"));
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes, "dynamic batch axis"));
}

static void test_a_lstm_without_state_outputs_gets_Y_h_and_Y_c_padded_and_named(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "T,2,3", "LSTM", "lstm", NULL, NULL,
                                                     "Y", "T,1,2,4" });
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_vi(mb_find_input(g, "LSTM_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_vi(mb_find_input(g, "LSTM_0_initial_c"), MB_FLOAT, "1,2,4");
    assert_string_equal(mb_output_names(g), "Y,LSTM_0_Y_h,LSTM_0_Y_c");
    assert_vi(mb_find_output(g, "LSTM_0_Y_h"), MB_FLOAT, "1,2,4");
    assert_vi(mb_find_output(g, "LSTM_0_Y_c"), MB_FLOAT, "1,2,4");
    assert_zero_default(g, "LSTM_0_initial_h", MB_FLOAT, "1,2,4", 8);
    assert_zero_default(g, "LSTM_0_initial_c", MB_FLOAT, "1,2,4", 8);
    const Onnx__NodeProto *lstm = mb_find_node(g, "lstm");
    assert_string_equal(mb_inputs_str(lstm),
                        "X,W_lstm,R_lstm,,,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_string_equal(mb_outputs_str(lstm), "Y,LSTM_0_Y_h,LSTM_0_Y_c");

    assert_node_report(run->report, "lstm", "LSTM", RNNSTATE_NODE_UPDATED,
                       "LSTM_0_initial_h,LSTM_0_initial_c", "LSTM_0_Y_h,LSTM_0_Y_c");
    assert_int_equal(run->report->n_pairs, 2);
    assert_pair(run->report, "LSTM_0_initial_h", "LSTM_0_Y_h", "1,2,4", "float32", true, true);
    assert_pair(run->report, "LSTM_0_initial_c", "LSTM_0_Y_c", "1,2,4", "float32", true, true);
}

static void test_a_lstm_missing_Y_h_between_named_outputs_is_filled_in(void **state)
{
    /* outputs "Y,,yc": Y_h left out in the middle, Y_c a graph output */
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "T,2,3", "LSTM", "lstm", NULL, NULL,
                                                     "Y,,yc", "T,1,2,4" });
    mb_output(m, "yc", MB_FLOAT, "1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_outputs_str(mb_find_node(g, "lstm")), "Y,LSTM_0_Y_h,yc");
    assert_string_equal(mb_output_names(g), "Y,yc,LSTM_0_Y_h");
    assert_vi(mb_find_output(g, "LSTM_0_Y_h"), MB_FLOAT, "1,2,4");
    assert_node_report(run->report, "lstm", "LSTM", RNNSTATE_NODE_UPDATED,
                       "LSTM_0_initial_h,LSTM_0_initial_c", "LSTM_0_Y_h");
    assert_pair(run->report, "LSTM_0_initial_c", "yc", "1,2,4", "float32", true, true);
}

static void test_a_unread_named_Y_h_gets_the_generated_name(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "T,2,3", "GRU", "gru", NULL, NULL,
                                                     "Y,exporter_hn", "T,1,2,4" });
    mb_run *run = rewrite(state, m, NULL);

    assert_string_equal(mb_outputs_str(mb_find_node(run->g, "gru")), "Y,GRU_0_Y_h");
    assert_string_equal(mb_output_names(run->g), "Y,GRU_0_Y_h");
    assert_null(mb_producer(run->g, "exporter_hn"));
}

static void test_a_required_mode_adds_no_default_and_no_expand(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 3, 9, "T,batch,3", "GRU", "gru", NULL, NULL,
                                                     "Y", "T,1,batch,4" });
    rnnstate_options o = required_options();
    mb_run *run = rewrite(state, m, &o);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,batch,4");
    assert_string_equal(mb_output_names(g), "Y,GRU_0_Y_h");
    assert_string_equal(mb_initializer_names(g), "W_gru,R_gru");
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")), "X,W_gru,R_gru,,,GRU_0_initial_h");
    /* no default: nothing needs IR 4 */
    assert_int_equal(run->model->ir_version, 3);
    assert_int_equal(run->report->n_notes, 0);
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float32", false, true);
}

static void test_a_default_raises_ir_version_from_3_to_4(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 3, 9, "T,batch,3", "GRU", "gru", NULL, NULL,
                                                     "Y", "T,1,batch,4" });
    mb_run *run = rewrite(state, m, NULL);

    assert_int_equal(run->model->ir_version, 4);
    assert_int_equal(run->report->n_notes, 1);
    assert_non_null(strstr(run->report->notes[0], "ir_version raised from 3 to 4"));
    assert_zero_default(run->g, "GRU_0_initial_h_fill", MB_FLOAT, "1,1,4", 4);
}

static void test_a_dynamic_batch_below_opset_8_makes_the_input_required(void **state)
{
    /* no Expand before opset 8: a batch-1 default cannot be broadcast */
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 3, 7, "T,batch,3", "GRU", "gru", NULL, NULL,
                                                     "Y", "T,1,batch,4" });
    mb_run *run = rewrite(state, m, NULL);

    assert_string_equal(mb_input_names(run->g), "X,GRU_0_initial_h");
    assert_null(mb_find_initializer(run->g, "GRU_0_initial_h"));
    assert_string_equal(mb_node_ops(run->g), "GRU");
    assert_int_equal(run->model->ir_version, 3);
    const rnnstate_node_report *n = assert_node_report(
        run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h", "GRU_0_Y_h");
    assert_true(mb_any_contains(n->n_warnings, n->warnings, "opset"));
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float32", false, true);
}


static void test_a_lstm_slots_are_5_and_6_before_peepholes(void **state)
{
    /* LSTM inputs: X W R B sequence_lens initial_h initial_c P */
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 4, H, I, 0.1);
    mb_initializer_filled(m, "P", MB_FLOAT, MB_DIMS(1, 12), 0.0);
    mb_recurrent(m, "LSTM", "lstm", H, NULL, "X,W,R,,,,,P", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_string_equal(mb_inputs_str(mb_find_node(run->g, "lstm")),
                        "X,W,R,,,LSTM_0_initial_h,LSTM_0_initial_c,P");
    assert_string_equal(mb_input_names(run->g), "X,LSTM_0_initial_h,LSTM_0_initial_c");
}

static void test_a_and_b_mixed_in_one_lstm(void **state)
{
    /* initial_h absent (""), initial_c a graph input, Y_c a graph output */
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    mb_input(m, "c0", MB_FLOAT, "1,2,4");
    add_layer(m, "LSTM", "lstm", "X", I, "", "c0", "Y,,cn");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_output(m, "cn", MB_FLOAT, "1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,c0,LSTM_0_initial_h");
    assert_string_equal(mb_output_names(g), "Y,cn,LSTM_0_Y_h");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "lstm")),
                        "X,W_lstm,R_lstm,,,LSTM_0_initial_h,c0");
    assert_string_equal(mb_outputs_str(mb_find_node(g, "lstm")), "Y,LSTM_0_Y_h,cn");
    assert_node_report(run->report, "lstm", "LSTM", RNNSTATE_NODE_UPDATED, "LSTM_0_initial_h",
                       "LSTM_0_Y_h");
    assert_int_equal(run->report->n_pairs, 2);
    assert_pair(run->report, "LSTM_0_initial_h", "LSTM_0_Y_h", "1,2,4", "float32", true, true);
    assert_pair(run->report, "c0", "cn", "1,2,4", "float32", false, false);
}

/* ---- case b: already a graph input ---------------------------------------------- */

static void test_b_state_input_and_output_already_exposed_are_only_annotated(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "1,batch,4");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y,hn");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "hn", MB_FLOAT, "1,batch,4");
    mb_run *run = rewrite(state, m, NULL);

    mb_assert_annotated(run,
                        "[{\"input\": \"h0\", \"output\": \"hn\", \"shape\": [1, \"batch\", 4], "
                        "\"dtype\": \"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}]",
                        "[{\"input\": \"X\", \"axis\": 0}]");
    const rnnstate_node_report *n =
        assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_ALREADY_EXPOSED, "", "");
    assert_int_equal(n->n_warnings, 0);
    assert_int_equal(run->report->n_pairs, 1);
    assert_pair(run->report, "h0", "hn", "1,batch,4", "float32", false, false);
}

static void test_b_state_input_with_internal_Y_h_adds_only_the_output(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "1,batch,4");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,h0");
    assert_string_equal(mb_output_names(g), "Y,GRU_0_Y_h");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_FLOAT, "1,batch,4");
    assert_string_equal(mb_initializer_names(g), "W_gru,R_gru");
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")), "X,W_gru,R_gru,,,h0");
    assert_true(run->report->changed);
    assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "", "GRU_0_Y_h");
    assert_pair(run->report, "h0", "GRU_0_Y_h", "1,batch,4", "float32", false, true);
}

/* SPEC (Defaults): "Raise ir_version to at least 4 where needed (ORT ignores
 * overrides below 4)". An IR 3 model lists its initializers as graph inputs;
 * a state input with such a default can only be fed from IR 4 on
 * (onnxruntime Graph::CanOverrideInitializer is ir_version >= 4). */
static void test_b_ir3_state_input_with_initializer_raises_ir_version(void **state)
{
    Onnx__ModelProto *m = model_with_x(3, 9, "T,2,3");
    mb_input(m, "h_init", MB_FLOAT, "1,2,4");
    mb_initializer_filled(m, "h_init", MB_FLOAT, MB_DIMS(1, 2, 4), 0.0);
    add_layer(m, "GRU", "gru", "X", I, "h_init", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_string_equal(mb_input_names(run->g), "X,h_init");
    assert_string_equal(mb_output_names(run->g), "Y,GRU_0_Y_h");
    assert_pair(run->report, "h_init", "GRU_0_Y_h", "1,2,4", "float32", true, true);
    /* the pair says the input is optional, i.e. a caller may override it */
    assert_int_equal(run->model->ir_version, 4);
}

/* ---- case c: an initializer --------------------------------------------------- */

/* SPEC (names): every input the tool adds is named by the template, whatever
 * the exporter called the value it replaces (issue 25: an input called
 * 'Constant6'); the initializer's values become the default, and the
 * initializer goes with its last reader. */
static void test_c_initializer_read_only_by_the_slot_becomes_input_named_by_the_template(
    void **state)
{
    static const float h_values[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    Onnx__ModelProto *m = model_with_x(3, 9, "T,2,3");
    mb_initializer_float(m, "h_init", MB_DIMS(1, 2, 4), h_values);
    add_layer(m, "GRU", "gru", "X", I, "h_init", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_string_equal(mb_initializer_names(g), "W_gru,R_gru,GRU_0_initial_h");
    assert_float_default(g, "GRU_0_initial_h", "1,2,4", h_values, 8);
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")), "X,W_gru,R_gru,,,GRU_0_initial_h");
    assert_string_equal(mb_output_names(g), "Y,GRU_0_Y_h");
    assert_int_equal(run->model->ir_version, 4);

    assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h",
                       "GRU_0_Y_h");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,2,4", "float32", true, true);
}

static void test_c_initializer_shared_by_h_and_c_is_copied_per_slot(void **state)
{
    mb_run *run = rewrite(state, model_c_shared(), NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_vi(mb_find_input(g, "LSTM_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_vi(mb_find_input(g, "LSTM_0_initial_c"), MB_FLOAT, "1,2,4");
    assert_float_default(g, "LSTM_0_initial_h", "1,2,4", hc_values, 8);
    assert_float_default(g, "LSTM_0_initial_c", "1,2,4", hc_values, 8);
    /* the shared initializer has no reader left: the cleanup removed it */
    assert_string_equal(mb_initializer_names(g),
                        "W_lstm,R_lstm,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_string_equal(mb_node_ops(g), "LSTM");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "lstm")),
                        "X,W_lstm,R_lstm,,,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_string_equal(mb_output_names(g), "Y,LSTM_0_Y_h,LSTM_0_Y_c");

    assert_node_report(run->report, "lstm", "LSTM", RNNSTATE_NODE_UPDATED,
                       "LSTM_0_initial_h,LSTM_0_initial_c", "LSTM_0_Y_h,LSTM_0_Y_c");
    assert_pair(run->report, "LSTM_0_initial_h", "LSTM_0_Y_h", "1,2,4", "float32", true, true);
    assert_pair(run->report, "LSTM_0_initial_c", "LSTM_0_Y_c", "1,2,4", "float32", true, true);
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes,
                                "removed 0 nodes and 1 initializer"));
}

static void test_c_initializer_also_read_elsewhere_is_copied_and_kept(void **state)
{
    static const float h_values[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    mb_initializer_float(m, "h_init", MB_DIMS(1, 2, 4), h_values);
    add_layer(m, "GRU", "gru", "X", I, "h_init", NULL, "Y");
    mb_node(m, "Identity", "probe", "h_init", "h_probe");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_output(m, "h_probe", MB_FLOAT, "1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_float_default(g, "GRU_0_initial_h", "1,2,4", h_values, 8);
    assert_float_default(g, "h_init", "1,2,4", h_values, 8);
    assert_string_equal(mb_node_ops(g), "GRU,Identity");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")),
                        "X,W_gru,R_gru,,,GRU_0_initial_h");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "probe")), "h_init");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,2,4", "float32", true, true);
}

static void test_c_report_decisions_name_the_replaced_initializer(void **state)
{
    mb_run *run = rewrite(state, model_c_shared(), NULL);

    const rnnstate_node_report *n = mb_report_node(run->report, "lstm");
    assert_non_null(n);
    assert_int_equal(n->n_decisions, 4); /* initial_h, Y_h, initial_c, Y_c */
    size_t naming = 0;
    for (size_t i = 0; i < n->n_decisions; i++)
        naming += strstr(n->decisions[i], "'hc_init'") != NULL;
    assert_int_equal(naming, 2);
}

/* SPEC (Defaults): a resolved state input with a dynamic batch has an empty
 * default completed to the batch of X, so that it takes any batch; the
 * initializer, exactly [D,1,H], is the fill as it is (its data not copied),
 * and the input is named by the template (the initializer's name was the
 * exporter's, not the caller's). */
static void test_c_initializer_with_dynamic_batch_gets_an_expand(void **state)
{
    static const float h_values[4] = { 1, 2, 3, 4 };
    Onnx__ModelProto *m = model_with_x(7, 14, "T,batch,3");
    mb_initializer_float(m, "h_init", MB_DIMS(1, 1, 4), h_values);
    add_layer(m, "GRU", "gru", "X", I, "h_init", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,?,4");
    assert_float_default(g, "h_init", "1,1,4", h_values, 4);
    assert_null(mb_find_initializer(g, "GRU_0_initial_h_fill"));
    assert_completed_default(g, mb_find_node(g, "gru"), 5, "GRU_0_initial_h", "X", 1, "h_init");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float32", true, true);
}

/* SPEC: a Constant node is data-independent (case g is for "anything
 * data-dependent"); like an initializer (case c) its value is the default. */
static void test_c_nonuniform_constant_node_in_the_slot_becomes_the_default(void **state)
{
    static const float h_values[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_constant(m, "const_h0", "h0", mb_tensor_float("", MB_DIMS(1, 2, 4), h_values));
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    const rnnstate_node_report *n = mb_report_node(run->report, "gru");
    assert_non_null(n);
    if (n->status == RNNSTATE_NODE_SKIPPED)
        fail_msg("node skipped: %s", n->reason);
    assert_int_equal(n->status, RNNSTATE_NODE_UPDATED);
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_float_default(g, "GRU_0_initial_h", "1,2,4", h_values, 8);
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")),
                        "X,W_gru,R_gru,,,GRU_0_initial_h");
}

/* ---- case d: Expand of a constant -------------------------------------------- */

static void test_d_torch_expand_of_constant_zeros_becomes_input_with_expand(void **state)
{
    mb_run *run = rewrite(state, model_d_torch(), NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,?,4");
    assert_zero_default(g, "GRU_0_initial_h_fill", MB_FLOAT, "1,1,4", 4);
    /* the exporter's Shape/Gather/Unsqueeze/Concat/Constant/Expand chain is
     * gone, the pre-existing dead Identity is not */
    assert_string_equal(mb_node_ops(g), "Shape,Gather,Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,GRU,Identity");
    static const char *const removed[] = { "h_shape_x", "h_gather", "h_unsqueeze",
                                           "h_concat", "const_h0", "expand_h0" };
    for (size_t i = 0; i < sizeof removed / sizeof *removed; i++)
        assert_null(mb_find_node(g, removed[i]));
    assert_string_equal(mb_inputs_str(mb_find_node(g, "dead_identity")), "X");
    for (size_t i = 0; i < g->n_initializer; i++)
        assert_true(strncmp(g->initializer[i]->name, "h_", 2)); /* h_idx, h_axes, ... removed */
    assert_int_equal(g->n_initializer, 7);
    const Onnx__NodeProto *gru = mb_find_node(g, "gru");
    assert_batch_expand(g, gru, 5, "GRU_0_initial_h", "X", 1);
    assert_string_equal(mb_outputs_str(gru), "Y,GRU_0_Y_h");
    assert_string_equal(mb_output_names(g), "Y,GRU_0_Y_h");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_FLOAT, "1,batch,4");

    assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h",
                       "GRU_0_Y_h");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float32", true, true);
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes,
                                "removed 6 nodes and 4 initializers"));
}

static void test_d_expand_of_nonuniform_constant_fixed_batch_default_is_tiled(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_constant(m, "const_h0", "h0_const",
                mb_tensor_float("", MB_DIMS(1, 1, 4), (float[]){ 1, 2, 3, 4 }));
    mb_constant(m, "const_shape", "h0_shape",
                mb_tensor_int64("", MB_DIMS(3), (int64_t[]){ 1, 2, 4 }));
    mb_node(m, "Expand", "expand_h0", "h0_const,h0_shape", "h0");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_float_default(g, "GRU_0_initial_h", "1,2,4",
                         (float[]){ 1, 2, 3, 4, 1, 2, 3, 4 }, 8);
    assert_string_equal(mb_initializer_names(g), "W_gru,R_gru,GRU_0_initial_h");
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")),
                        "X,W_gru,R_gru,,,GRU_0_initial_h");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,2,4", "float32", true, true);
}

static void test_d_expand_of_shared_initializer_gives_each_slot_a_copy(void **state)
{
    /* the thread's case: Expand of an initializer, here read by h and c
     * through one Expand and also by another node */
    static const float pattern[4] = { 0.125f, -0.5f, 2.0f, 3.0f };
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    mb_initializer_float(m, "hc_init", MB_DIMS(1, 1, 4), pattern);
    const char *shape = add_torch_state_shape(m, "hc", "X", 1);
    char in[128];
    snprintf(in, sizeof in, "hc_init,%s", shape);
    mb_node(m, "Expand", "expand_hc", in, "hc0");
    add_layer(m, "LSTM", "lstm", "X", I, "hc0", "hc0", "Y");
    mb_node(m, "Identity", "probe", "hc_init", "hc_probe");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "hc_probe", MB_FLOAT, "1,1,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_vi(mb_find_input(g, "LSTM_0_initial_h"), MB_FLOAT, "1,?,4");
    assert_vi(mb_find_input(g, "LSTM_0_initial_c"), MB_FLOAT, "1,?,4");
    assert_float_default(g, "LSTM_0_initial_h_fill", "1,1,4", pattern, 4);
    assert_float_default(g, "LSTM_0_initial_c_fill", "1,1,4", pattern, 4);
    assert_float_default(g, "hc_init", "1,1,4", pattern, 4); /* still read by the probe */
    assert_null(mb_find_node(g, "expand_hc"));
    /* one batch of X per node, one completed default per slot */
    assert_string_equal(mb_node_ops(g), "Shape,Gather,Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,"
                                        "Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,LSTM,Identity");
    const Onnx__NodeProto *lstm = mb_find_node(g, "lstm");
    const Onnx__NodeProto *eh = assert_batch_expand(g, lstm, 5, "LSTM_0_initial_h", "X", 1);
    const Onnx__NodeProto *ec = assert_batch_expand(g, lstm, 6, "LSTM_0_initial_c", "X", 1);
    assert_ptr_not_equal(eh, ec);
    const Onnx__NodeProto *mh = mb_producer(g, mb_producer(g, eh->input[1])->input[1]);
    const Onnx__NodeProto *mc = mb_producer(g, mb_producer(g, ec->input[1])->input[1]);
    assert_string_equal(mh->input[1], mc->input[1]); /* the batch of X */
    assert_pair(run->report, "LSTM_0_initial_h", "LSTM_0_Y_h", "1,batch,4", "float32", true,
                true);
    assert_pair(run->report, "LSTM_0_initial_c", "LSTM_0_Y_c", "1,batch,4", "float32", true,
                true);
}

static void test_d_double_constant_keeps_its_values_and_type(void **state)
{
    static const double pattern[4] = { 0.1, 0.2, 0.3, 0.4 };
    Onnx__ModelProto *m = mb_new(7, 13);
    mb_input(m, "X", MB_DOUBLE, "T,batch,3");
    const char *shape = add_torch_state_shape(m, "h", "X", 1);
    mb_constant(m, "const_h0", "h0_const",
                mb_tensor("", MB_DOUBLE, MB_DIMS(1, 1, 4), pattern, sizeof pattern));
    char in[128];
    snprintf(in, sizeof in, "h0_const,%s", shape);
    mb_node(m, "Expand", "expand_h0", in, "h0");
    add_layer_ex(m, "GRU", "gru", MB_DOUBLE, NULL, "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_DOUBLE, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_DOUBLE, "1,?,4");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_DOUBLE, "1,batch,4");
    const Onnx__TensorProto *t = mb_find_initializer(g, "GRU_0_initial_h");
    assert_non_null(t);
    assert_int_equal(t->data_type, MB_DOUBLE);
    assert_string_equal(mb_dims_str(t), "1,0,4");
    t = mb_find_initializer(g, "GRU_0_initial_h_fill");
    assert_non_null(t);
    assert_string_equal(mb_dims_str(t), "1,1,4");
    size_t n, width;
    unsigned char *bytes = mb_tensor_bytes(t, &n, &width);
    assert_non_null(bytes);
    assert_int_equal(n, 4);
    assert_memory_equal(bytes, pattern, sizeof pattern);
    free(bytes);
    assert_batch_expand(g, mb_find_node(g, "gru"), 5, "GRU_0_initial_h", "X", 1);
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float64", true, true);
}

/* SPEC: case d covers an Expand of any initializer or Constant. An exporter
 * that broadcasts a learned [H] state (h0.expand(1, B, H)) writes Expand of a
 * rank-1 initializer; its value must become the new input's default. */
static void test_d_expand_of_rank_1_nonuniform_initializer_becomes_the_default(void **state)
{
    static const float pattern[4] = { 1, 2, 3, 4 };
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    mb_initializer_float(m, "h_param", MB_DIMS(4), pattern);
    const char *shape = add_torch_state_shape(m, "h", "X", 1);
    char in[128];
    snprintf(in, sizeof in, "h_param,%s", shape);
    mb_node(m, "Expand", "expand_h0", in, "h0");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    const rnnstate_node_report *n = mb_report_node(run->report, "gru");
    assert_non_null(n);
    if (n->status == RNNSTATE_NODE_SKIPPED)
        fail_msg("node skipped: %s", n->reason);
    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,?,4");
    assert_float_default(g, "GRU_0_initial_h_fill", "1,1,4", pattern, 4);
    assert_batch_expand(g, mb_find_node(g, "gru"), 5, "GRU_0_initial_h", "X", 1);
    assert_null(mb_find_initializer(g, "h_param"));
}

/* ---- case e: a chain computing a zero state ---------------------------------- */

static void test_e_torch_zero_state_shared_by_layers_and_h_c_gives_each_slot_an_input(void **state)
{
    mb_run *run = rewrite(state, model_e_torch(), NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,LSTM_0_initial_h,LSTM_0_initial_c,"
                                           "LSTM_1_initial_h,LSTM_1_initial_c");
    assert_string_equal(mb_output_names(g),
                        "Y1,LSTM_0_Y_h,LSTM_0_Y_c,LSTM_1_Y_h,LSTM_1_Y_c");
    static const char *const slots[4][2] = { { "LSTM_0_initial_h", "LSTM_0_Y_h" },
                                             { "LSTM_0_initial_c", "LSTM_0_Y_c" },
                                             { "LSTM_1_initial_h", "LSTM_1_Y_h" },
                                             { "LSTM_1_initial_c", "LSTM_1_Y_c" } };
    for (size_t i = 0; i < 4; i++) {
        assert_vi(mb_find_input(g, slots[i][0]), MB_FLOAT, "1,?,4");
        assert_vi(mb_find_output(g, slots[i][1]), MB_FLOAT, "1,batch,4");
        assert_zero_default(g, fill_name(slots[i][0]), MB_FLOAT, "1,1,4", 4);
        assert_pair(run->report, slots[i][0], slots[i][1], "1,batch,4", "float32", true, true);
    }
    assert_string_equal(mb_node_ops(g), "Shape,Gather,Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,"
                                        "Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,LSTM,Squeeze,"
                                        "Shape,Gather,Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,"
                                        "Shape,Gather,Equal,Cast,Mul,Concat,Expand,Concat,LSTM,Identity");
    const Onnx__NodeProto *l0 = mb_find_node(g, "lstm_l0"), *l1 = mb_find_node(g, "lstm_l1");
    assert_batch_expand(g, l0, 5, "LSTM_0_initial_h", "X", 1);
    assert_batch_expand(g, l0, 6, "LSTM_0_initial_c", "X", 1);
    /* layer 2's batch comes from its own X, the Squeeze of layer 1's Y */
    assert_batch_expand(g, l1, 5, "LSTM_1_initial_h", "X1", 1);
    assert_batch_expand(g, l1, 6, "LSTM_1_initial_c", "X1", 1);
    assert_string_equal(mb_outputs_str(l0), "Y0,LSTM_0_Y_h,LSTM_0_Y_c");
    assert_string_equal(mb_outputs_str(l1), "Y1,LSTM_1_Y_h,LSTM_1_Y_c");
    /* the zero-state chain is gone; the dead Identity and the Squeeze stay */
    static const char *const removed[] = { "z_shape_x", "z_gather", "z_unsqueeze", "z_concat",
                                           "zeros_of_shape", "slice_l0", "slice_l1" };
    for (size_t i = 0; i < sizeof removed / sizeof *removed; i++)
        assert_null(mb_find_node(g, removed[i]));
    assert_non_null(mb_find_node(g, "dead_identity"));
    assert_non_null(mb_find_node(g, "squeeze_l0"));
    static const char *const removed_inits[] = { "z_idx", "z_axes", "z_first", "z_hidden",
                                                 "s0", "s1", "s2" };
    for (size_t i = 0; i < sizeof removed_inits / sizeof *removed_inits; i++)
        assert_null(mb_find_initializer(g, removed_inits[i]));
    assert_non_null(mb_find_initializer(g, "sq_axes"));
    assert_non_null(mb_find_initializer(g, "unused_init")); /* dead before: kept */
    /* 4 weights, 4 defaults and their 4 fills, sq_axes, unused_init, and per
     * node the batch axis, [1] and [0] */
    assert_int_equal(g->n_initializer, 20);
    /* value_info of removed values is dropped, the rest kept */
    assert_int_equal(g->n_value_info, 1);
    assert_vi(mb_find_value_info(g, "Y0"), MB_FLOAT, "T,1,batch,4");

    assert_int_equal(run->report->n_nodes, 2);
    assert_node_report(run->report, "lstm_l0", "LSTM", RNNSTATE_NODE_UPDATED,
                       "LSTM_0_initial_h,LSTM_0_initial_c", "LSTM_0_Y_h,LSTM_0_Y_c");
    assert_node_report(run->report, "lstm_l1", "LSTM", RNNSTATE_NODE_UPDATED,
                       "LSTM_1_initial_h,LSTM_1_initial_c", "LSTM_1_Y_h,LSTM_1_Y_c");
    assert_int_equal(run->report->n_pairs, 4);
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes,
                                "removed 7 nodes and 7 initializers"));
}

static void test_e_zero_constant_fixed_batch_becomes_input_with_full_zero_default(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_constant(m, "const_zero", "h0", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1, 2, 4), 0));
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "1,2,4");
    assert_zero_default(g, "GRU_0_initial_h", MB_FLOAT, "1,2,4", 8);
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")),
                        "X,W_gru,R_gru,,,GRU_0_initial_h");
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes,
                                "removed 1 node and 0 initializers"));
}

static void test_e_chain_through_cast_and_unsqueeze_of_int_zeros(void **state)
{
    /* ConstantOfShape(int64 0) -> Cast(float) -> Unsqueeze: still zeros */
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_initializer_int64(m, "zshape", MB_DIMS(2), (int64_t[]){ 2, 4 });
    mb_initializer_int64(m, "uaxes", MB_DIMS(1), (int64_t[]){ 0 });
    Onnx__NodeProto *cos = mb_node(m, "ConstantOfShape", "cos", "zshape", "zi");
    mb_attr_tensor(cos, "value", mb_tensor_filled("", MB_INT64, MB_DIMS(1), 0));
    mb_attr_int(mb_node(m, "Cast", "cast", "zi", "zf"), "to", MB_FLOAT);
    mb_node(m, "Unsqueeze", "unsq", "zf,uaxes", "h0");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_zero_default(g, "GRU_0_initial_h", MB_FLOAT, "1,2,4", 8);
    assert_string_equal(mb_node_ops(g), "GRU");
    assert_string_equal(mb_initializer_names(g), "W_gru,R_gru,GRU_0_initial_h");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,2,4", "float32", true, true);
}

/* The chain the report shows is the path the value takes (through a
 * Concat's first input), not every node the analysis looked at. */
static void test_e_chain_shown_is_the_path_through_the_first_concat_input(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_constant(m, "const_a", "ca", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1, 1, 4), 0));
    mb_constant(m, "const_b", "cb", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1, 1, 4), 0));
    mb_node(m, "Identity", "id_a", "ca", "za");
    mb_node(m, "Identity", "id_b", "cb", "zb");
    mb_attr_int(mb_node(m, "Concat", "cat", "za,zb", "h0"), "axis", 1);
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    const rnnstate_node_report *n = mb_report_node(run->report, "gru");
    assert_non_null(n);
    assert_true(n->n_decisions >= 1);
    assert_non_null(strstr(n->decisions[0], "initial_h: was a constant (zeros)"));
    assert_non_null(strstr(n->decisions[0],
                           "by Constant 'const_a' -> Identity 'id_a' -> Concat 'cat'"));
    assert_null(strstr(n->decisions[0], "id_b"));
    assert_zero_default(run->g, "GRU_0_initial_h", MB_FLOAT, "1,2,4", 8);
}

static void test_e_uniform_nonzero_constant_of_shape_is_the_default(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_initializer_int64(m, "zshape", MB_DIMS(3), (int64_t[]){ 1, 2, 4 });
    Onnx__NodeProto *cos = mb_node(m, "ConstantOfShape", "cos", "zshape", "h0");
    mb_attr_tensor(cos, "value", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1), 0.75));
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    float expected[8];
    for (int i = 0; i < 8; i++)
        expected[i] = 0.75f;
    assert_float_default(run->g, "GRU_0_initial_h", "1,2,4", expected, 8);
    assert_string_equal(mb_node_ops(run->g), "GRU");
}

static void test_e_required_mode_replaces_the_chain_without_defaults(void **state)
{
    rnnstate_options o = required_options();
    mb_run *run = rewrite(state, model_e_torch(), &o);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,LSTM_0_initial_h,LSTM_0_initial_c,"
                                           "LSTM_1_initial_h,LSTM_1_initial_c");
    assert_string_equal(mb_initializer_names(g),
                        "W_lstm_l0,R_lstm_l0,sq_axes,W_lstm_l1,R_lstm_l1,unused_init");
    assert_string_equal(mb_node_ops(g), "LSTM,Squeeze,LSTM,Identity");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "lstm_l0")),
                        "X,W_lstm_l0,R_lstm_l0,,,LSTM_0_initial_h,LSTM_0_initial_c");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "lstm_l1")),
                        "X1,W_lstm_l1,R_lstm_l1,,,LSTM_1_initial_h,LSTM_1_initial_c");
    assert_vi(mb_find_input(g, "LSTM_1_initial_c"), MB_FLOAT, "1,batch,4");
    assert_pair(run->report, "LSTM_1_initial_c", "LSTM_1_Y_c", "1,batch,4", "float32", false,
                true);
}

/* ---- case f: the model is already stateful ------------------------------------ */

static void test_f_slices_of_input_h0_and_concat_to_output_hn_add_nothing(void **state)
{
    mb_run *run = rewrite(state, model_f_stateful(), NULL);

    mb_assert_annotated(run,
                        "[{\"input\": \"h0\", \"output\": \"hn\", \"shape\": [2, \"batch\", 4], "
                        "\"dtype\": \"float32\", \"batch_axis\": 1, \"optional\": false, \"kind\": \"recurrent\"}]",
                        "[{\"input\": \"X\", \"axis\": 0}]");
    assert_int_equal(run->report->n_nodes, 2);
    const rnnstate_node_report *n0 = assert_node_report(
        run->report, "gru_l0", "GRU", RNNSTATE_NODE_ALREADY_EXPOSED, "", "");
    const rnnstate_node_report *n1 = assert_node_report(
        run->report, "gru_l1", "GRU", RNNSTATE_NODE_ALREADY_EXPOSED, "", "");
    assert_int_equal(n0->n_warnings, 0);
    assert_int_equal(n1->n_warnings, 0);
    /* both layers carry their state through the pair h0 -> hn */
    assert_int_equal(run->report->n_pairs, 1);
    assert_pair(run->report, "h0", "hn", "2,batch,4", "float32", false, false);
}

/* SPEC (names): a final state the model reads under the exporter's name
 * keeps that name inside; the graph output is an Identity of it named by the
 * template. */
static void test_f_final_state_feeding_gemm_is_exposed_under_the_template_name(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    add_layer(m, "GRU", "gru", "X", I, NULL, NULL, "Y,h_last");
    mb_initializer_int64(m, "sq0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_node(m, "Squeeze", "squeeze_h", "h_last,sq0", "h2d");
    mb_initializer_filled(m, "Wc", MB_FLOAT, MB_DIMS(4, 2), 0.5);
    mb_node(m, "Gemm", "classifier", "h2d,Wc", "logits");
    mb_output(m, "logits", MB_FLOAT, "batch,2");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_output_names(g), "logits,GRU_0_Y_h");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_FLOAT, "1,batch,4");
    const Onnx__NodeProto *gru = mb_find_node(g, "gru");
    assert_string_equal(mb_outputs_str(gru), "Y,h_last");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "squeeze_h")), "h_last,sq0");
    const Onnx__NodeProto *copy = assert_made_by(g, "GRU_0_Y_h", "Identity");
    assert_string_equal(mb_inputs_str(copy), "h_last");
    /* the input side is new */
    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_batch_expand(g, gru, 5, "GRU_0_initial_h", "X", 1);
    assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h",
                       "GRU_0_Y_h");
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,4", "float32", true, true);
}

static void test_f_Y_h_already_a_graph_output_keeps_its_name(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "T,2,3", "GRU", "gru", NULL, NULL,
                                                     "Y,hn", "T,1,2,4" });
    mb_output(m, "hn", MB_FLOAT, "1,2,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_output_names(g), "Y,hn");
    assert_string_equal(mb_outputs_str(mb_find_node(g, "gru")), "Y,hn");
    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h");
    assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h", "");
    assert_pair(run->report, "GRU_0_initial_h", "hn", "1,2,4", "float32", true, true);
}

static void test_f_slice_of_input_whose_Y_h_reaches_no_output_gets_an_output_like_the_input(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "2,batch,4");
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Slice", "slice_l0", "h0,s0,s1,s0", "h0_l0");
    add_layer(m, "GRU", "gru", "X", I, "h0_l0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    /* row 1, which no node reads, passes through: h0_out has h0's shape */
    assert_string_equal(mb_input_names(g), "X,h0");
    assert_string_equal(mb_output_names(g), "Y,h0_out");
    assert_string_equal(mb_node_ops(g), "Constant,Gather,Slice,GRU,Concat");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "gru")), "X,W_gru,R_gru,,,h0_l0");
    assert_string_equal(mb_inputs_str(mb_find_node(g, "h0_out_1")), "GRU_0_Y_h,h0_rows_1_2");
    assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "", "h0_out");
    assert_pair(run->report, "h0", "h0_out", "2,batch,4", "float32", false, true);
}

/* ---- case g: data-dependent initial state ------------------------------------- */

static void test_g_state_computed_from_data_skips_the_node_and_names_the_blocker(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    Onnx__NodeProto *mean = mb_node(m, "ReduceMean", "mean_x", "X", "xm");
    mb_attr_ints(mean, "axes", 1, (int64_t[]){ 0 });
    mb_initializer_filled(m, "Wp", MB_FLOAT, MB_DIMS(3, 4), 0.5);
    mb_node(m, "MatMul", "proj", "xm,Wp", "xp");
    mb_initializer_filled(m, "bias", MB_FLOAT, MB_DIMS(4), 0.5);
    mb_node(m, "Add", "add_h", "xp,bias", "h0");
    add_layer(m, "GRU", "gru", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);

    mb_assert_unchanged(run);
    const rnnstate_node_report *n =
        assert_node_report(run->report, "gru", "GRU", RNNSTATE_NODE_SKIPPED, "", "");
    assert_non_null(n->reason);
    assert_non_null(strstr(n->reason, "'add_h'"));
    assert_non_null(strstr(n->reason, "Add"));
    assert_non_null(strstr(n->reason, "initial_h"));
    assert_int_equal(run->report->n_pairs, 0);
}

static void test_g_lstm_with_only_c_data_dependent_is_skipped_whole(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,2,3");
    mb_constant(m, "const_zero", "h0", mb_tensor_filled("", MB_FLOAT, MB_DIMS(1, 2, 4), 0));
    mb_initializer_int64(m, "s0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_initializer_int64(m, "s1", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Slice", "first_step", "X,s0,s1,s0", "x0");
    mb_initializer_filled(m, "Wp", MB_FLOAT, MB_DIMS(3, 4), 0.5);
    mb_node(m, "MatMul", "c_from_x", "x0,Wp", "c0");
    add_layer(m, "LSTM", "lstm", "X", I, "h0", "c0", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    mb_assert_unchanged(run);
    const rnnstate_node_report *n =
        assert_node_report(run->report, "lstm", "LSTM", RNNSTATE_NODE_SKIPPED, "", "");
    assert_non_null(n->reason);
    assert_non_null(strstr(n->reason, "initial_c"));
    assert_non_null(strstr(n->reason, "'c_from_x'"));
}

/* ---- direction, layout, hidden size, element types ----------------------------- */

static void test_bidirectional_state_has_two_directions_and_a_warning(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,batch,3");
    add_layer_ex(m, "GRU", "gru", MB_FLOAT, "bidirectional", "X", I, NULL, NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,2,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "2,?,4");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_FLOAT, "2,batch,4");
    assert_zero_default(g, "GRU_0_initial_h_fill", MB_FLOAT, "2,1,4", 8);
    assert_batch_expand(g, mb_find_node(g, "gru"), 5, "GRU_0_initial_h", "X", 1);
    const rnnstate_node_report *n = assert_node_report(
        run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h", "GRU_0_Y_h");
    assert_int_equal(n->n_warnings, 1);
    assert_non_null(strstr(n->warnings[0], "bidirectional"));
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "2,batch,4", "float32", true, true);
}

static void test_bidirectional_nonuniform_constant_is_tiled_per_direction(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,3,3");
    mb_constant(m, "const_h0", "h0_const",
                mb_tensor_float("", MB_DIMS(2, 1, 4), (float[]){ 1, 2, 3, 4, 5, 6, 7, 8 }));
    mb_constant(m, "const_shape", "h0_shape",
                mb_tensor_int64("", MB_DIMS(3), (int64_t[]){ 2, 3, 4 }));
    mb_node(m, "Expand", "expand_h0", "h0_const,h0_shape", "h0");
    add_layer_ex(m, "RNN", "rnn", MB_FLOAT, "bidirectional", "X", I, "h0", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,2,3,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_vi(mb_find_input(run->g, "RNN_0_initial_h"), MB_FLOAT, "2,3,4");
    assert_float_default(run->g, "RNN_0_initial_h", "2,3,4",
                         (float[]){ 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4,
                                    5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8 },
                         24);
    assert_string_equal(mb_node_ops(run->g), "RNN");
}

static void test_reverse_direction_warns(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    add_layer_ex(m, "RNN", "rnn", MB_FLOAT, "reverse", "X", I, NULL, NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_vi(mb_find_input(run->g, "RNN_0_initial_h"), MB_FLOAT, "1,2,4");
    const rnnstate_node_report *n = assert_node_report(
        run->report, "rnn", "RNN", RNNSTATE_NODE_UPDATED, "RNN_0_initial_h", "RNN_0_Y_h");
    assert_int_equal(n->n_warnings, 1);
    assert_non_null(strstr(n->warnings[0], "reverse"));
}

static void test_layout_1_state_is_batch_first(void **state)
{
    Onnx__ModelProto *m = model_with_x(8, 14, "batch,T,3");
    Onnx__NodeProto *gru = add_layer(m, "GRU", "gru", "X", I, NULL, NULL, "Y");
    mb_attr_int(gru, "layout", 1);
    mb_output(m, "Y", MB_FLOAT, "batch,T,1,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_vi(mb_find_input(g, "GRU_0_initial_h"), MB_FLOAT, "?,1,4");
    assert_vi(mb_find_output(g, "GRU_0_Y_h"), MB_FLOAT, "batch,1,4");
    assert_zero_default(g, "GRU_0_initial_h_fill", MB_FLOAT, "1,1,4", 4);
    assert_batch_expand(g, mb_find_node(g, "gru"), 5, "GRU_0_initial_h", "X", 0);
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "batch,1,4", "float32", true, true);
    /* ONNX Runtime refuses layout 1: a note says so and names the fix */
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes,
                                "1 recurrent node is batch-first (layout=1), GRU 'gru'"));
    assert_true(mb_any_contains(run->report->n_notes, run->report->notes, "--to-layout0"));
}

static void test_layout_1_bidirectional_nonuniform_constant_is_tiled_per_batch(void **state)
{
    Onnx__ModelProto *m = model_with_x(8, 14, "3,T,3");
    mb_constant(m, "const_h0", "h0_const",
                mb_tensor_float("", MB_DIMS(1, 2, 4), (float[]){ 1, 2, 3, 4, 5, 6, 7, 8 }));
    mb_constant(m, "const_shape", "h0_shape",
                mb_tensor_int64("", MB_DIMS(3), (int64_t[]){ 3, 2, 4 }));
    mb_node(m, "Expand", "expand_h0", "h0_const,h0_shape", "h0");
    Onnx__NodeProto *gru =
        add_layer_ex(m, "GRU", "gru", MB_FLOAT, "bidirectional", "X", I, "h0", NULL, "Y");
    mb_attr_int(gru, "layout", 1);
    mb_output(m, "Y", MB_FLOAT, "3,T,2,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_vi(mb_find_input(run->g, "GRU_0_initial_h"), MB_FLOAT, "3,2,4");
    assert_float_default(run->g, "GRU_0_initial_h", "3,2,4",
                         (float[]){ 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4,
                                    5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8 },
                         24);
}

static void test_missing_hidden_size_comes_from_R(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,batch,3");
    mb_initializer_filled(m, "W", MB_FLOAT, MB_DIMS(1, 15, 3), 0.1);
    mb_initializer_filled(m, "R", MB_FLOAT, MB_DIMS(1, 15, 5), 0.1);
    mb_recurrent(m, "GRU", "gru", 0, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,5");
    mb_run *run = rewrite(state, m, NULL);

    assert_vi(mb_find_input(run->g, "GRU_0_initial_h"), MB_FLOAT, "1,?,5");
    assert_vi(mb_find_output(run->g, "GRU_0_Y_h"), MB_FLOAT, "1,batch,5");
    assert_zero_default(run->g, "GRU_0_initial_h_fill", MB_FLOAT, "1,1,5", 5);
    assert_pair(run->report, "GRU_0_initial_h", "GRU_0_Y_h", "1,batch,5", "float32", true, true);
}

static void test_float16_model_keeps_float16_inputs_outputs_and_defaults(void **state)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT16, "T,batch,3");
    add_layer_ex(m, "LSTM", "lstm", MB_FLOAT16, NULL, "X", I, NULL, NULL, "Y");
    mb_output(m, "Y", MB_FLOAT16, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_vi(mb_find_input(g, "LSTM_0_initial_h"), MB_FLOAT16, "1,?,4");
    assert_vi(mb_find_input(g, "LSTM_0_initial_c"), MB_FLOAT16, "1,?,4");
    assert_vi(mb_find_output(g, "LSTM_0_Y_h"), MB_FLOAT16, "1,batch,4");
    assert_vi(mb_find_output(g, "LSTM_0_Y_c"), MB_FLOAT16, "1,batch,4");
    assert_zero_default(g, "LSTM_0_initial_h_fill", MB_FLOAT16, "1,1,4", 4);
    assert_zero_default(g, "LSTM_0_initial_c_fill", MB_FLOAT16, "1,1,4", 4);
    assert_pair(run->report, "LSTM_0_initial_h", "LSTM_0_Y_h", "1,batch,4", "float16", true,
                true);
}

static void test_double_model_keeps_double_inputs_outputs_and_defaults(void **state)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_DOUBLE, "T,2,3");
    add_layer_ex(m, "RNN", "rnn", MB_DOUBLE, NULL, "X", I, NULL, NULL, "Y");
    mb_output(m, "Y", MB_DOUBLE, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_vi(mb_find_input(run->g, "RNN_0_initial_h"), MB_DOUBLE, "1,2,4");
    assert_vi(mb_find_output(run->g, "RNN_0_Y_h"), MB_DOUBLE, "1,2,4");
    assert_zero_default(run->g, "RNN_0_initial_h", MB_DOUBLE, "1,2,4", 8);
    assert_pair(run->report, "RNN_0_initial_h", "RNN_0_Y_h", "1,2,4", "float64", true, true);
}

/* ---- batch inference ------------------------------------------------------------ */

static void test_batch_of_a_stacked_layer_is_inferred_from_the_previous_layer(void **state)
{
    /* layer 2's X is an intermediate Squeeze of layer 1's Y, with no value_info */
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    add_layer(m, "GRU", "gru_l0", "X", I, NULL, NULL, "Y0");
    mb_initializer_int64(m, "sq_axes", MB_DIMS(1), (int64_t[]){ 1 });
    mb_node(m, "Squeeze", "squeeze_l0", "Y0,sq_axes", "X1");
    add_layer(m, "GRU", "gru_l1", "X1", H, NULL, NULL, "Y1");
    mb_output(m, "Y1", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,GRU_0_initial_h,GRU_1_initial_h");
    assert_string_equal(mb_output_names(g), "Y1,GRU_0_Y_h,GRU_1_Y_h");
    assert_vi(mb_find_input(g, "GRU_1_initial_h"), MB_FLOAT, "1,?,4");
    assert_vi(mb_find_output(g, "GRU_1_Y_h"), MB_FLOAT, "1,batch,4");
    assert_batch_expand(g, mb_find_node(g, "gru_l1"), 5, "GRU_1_initial_h", "X1", 1);
    assert_pair(run->report, "GRU_1_initial_h", "GRU_1_Y_h", "1,batch,4", "float32", true, true);
}

static void test_batch_that_cannot_be_known_gets_a_fresh_symbolic_name(void **state)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, NULL); /* no shape at all */
    add_layer(m, "GRU", "gru", "X", I, NULL, NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, NULL);
    mb_run *run = rewrite(state, m, NULL);

    assert_vi(mb_find_input(run->g, "GRU_0_initial_h"), MB_FLOAT, "1,?,4");
    assert_vi(mb_find_output(run->g, "GRU_0_Y_h"), MB_FLOAT, "1,GRU_0_batch,4");
    assert_zero_default(run->g, "GRU_0_initial_h_fill", MB_FLOAT, "1,1,4", 4);
    assert_batch_expand(run->g, mb_find_node(run->g, "gru"), 5, "GRU_0_initial_h", "X", 1);
}

/* ---- names ---------------------------------------------------------------------- */

static void test_k_counts_each_op_type_in_graph_order(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    add_layer(m, "GRU", "g_first", "X", I, NULL, NULL, "Ya");
    add_layer(m, "LSTM", "l_first", "X", I, NULL, NULL, "Yb");
    add_layer(m, "GRU", "g_second", "X", I, NULL, NULL, "Yc");
    add_layer(m, "RNN", "r_first", "X", I, NULL, NULL, "Yd");
    mb_output(m, "Ya", MB_FLOAT, "T,1,2,4");
    mb_output(m, "Yb", MB_FLOAT, "T,1,2,4");
    mb_output(m, "Yc", MB_FLOAT, "T,1,2,4");
    mb_output(m, "Yd", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    assert_string_equal(mb_input_names(run->g),
                        "X,GRU_0_initial_h,LSTM_0_initial_h,LSTM_0_initial_c,GRU_1_initial_h,"
                        "RNN_0_initial_h");
    assert_string_equal(mb_output_names(run->g),
                        "Ya,Yb,Yc,Yd,GRU_0_Y_h,LSTM_0_Y_h,LSTM_0_Y_c,GRU_1_Y_h,RNN_0_Y_h");
    assert_int_equal(run->report->n_nodes, 4);
    assert_string_equal(run->report->nodes[0].name, "g_first");
    assert_string_equal(run->report->nodes[1].name, "l_first");
    assert_string_equal(run->report->nodes[2].name, "g_second");
    assert_string_equal(run->report->nodes[3].name, "r_first");
}

static void test_generated_names_avoid_names_already_in_the_model(void **state)
{
    /* "GRU_0_initial_h" is taken by a value of the main graph, "GRU_0_Y_h"
     * by a value inside an If branch */
    Onnx__ModelProto *m = model_with_x(7, 14, "T,batch,3");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_node(m, "Identity", "taken", "X", "GRU_0_initial_h");
    add_layer(m, "GRU", "gru", "X", I, NULL, NULL, "Y");
    Onnx__NodeProto *branch = mb_node(m, "If", "branch", "cond", "if_out");
    mb_identity_branch(branch, "then_branch", "then", "then_id", "X", "GRU_0_Y_h");
    mb_identity_branch(branch, "else_branch", "else", "else_id", "X", "else_out");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "if_out", MB_FLOAT, NULL);
    mb_run *run = rewrite(state, m, NULL);
    const Onnx__GraphProto *g = run->g;

    assert_string_equal(mb_input_names(g), "X,cond,GRU_0_initial_h_1");
    assert_vi(mb_find_input(g, "GRU_0_initial_h_1"), MB_FLOAT, "1,?,4");
    assert_zero_default(g, "GRU_0_initial_h_1_fill", MB_FLOAT, "1,1,4", 4);
    assert_string_equal(mb_output_names(g), "Y,if_out,GRU_0_Y_h_1");
    const Onnx__NodeProto *gru = mb_find_node(g, "gru");
    assert_string_equal(mb_outputs_str(gru), "Y,GRU_0_Y_h_1");
    assert_batch_expand(g, gru, 5, "GRU_0_initial_h_1", "X", 1);
    /* the taken names still mean what they meant */
    assert_string_equal(mb_inputs_str(mb_find_node(g, "taken")), "X");
    assert_string_equal(mb_outputs_str(mb_find_node(g, "taken")), "GRU_0_initial_h");
    assert_pair(run->report, "GRU_0_initial_h_1", "GRU_0_Y_h_1", "1,batch,4", "float32", true,
                true);
}

/* ---- options and report --------------------------------------------------------- */

static void test_fixed_sequence_length_is_reported_with_a_warning(void **state)
{
    Onnx__ModelProto *m = layer_model(&(layer_spec){ 7, 14, "5,batch,3", "GRU", "gru", NULL, NULL,
                                                     "Y", "5,1,batch,4" });
    mb_run *run = rewrite(state, m, NULL);

    const rnnstate_node_report *n = assert_node_report(
        run->report, "gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_0_initial_h", "GRU_0_Y_h");
    assert_int_equal(n->fixed_sequence_length, 5);
    assert_true(mb_any_contains(n->n_warnings, n->warnings, "5"));

    run = rewrite(state, model_a_dynamic(), NULL);
    assert_int_equal(run->report->nodes[0].fixed_sequence_length, -1);
}

static void test_name_template_with_node_name(void **state)
{
    rnnstate_options o;
    rnnstate_options_init(&o);
    o.name_template = "state.{name}.{slot}";
    mb_run *run = rewrite(state, model_a_dynamic(), &o);

    assert_string_equal(mb_input_names(run->g), "X,state.gru.initial_h");
    assert_string_equal(mb_output_names(run->g), "Y,state.gru.Y_h");
    assert_zero_default(run->g, "state.gru.initial_h_fill", MB_FLOAT, "1,1,4", 4);
    assert_pair(run->report, "state.gru.initial_h", "state.gru.Y_h", "1,batch,4", "float32", true,
                true);
}

static void test_name_template_without_slot_is_refused(void **state)
{
    (void)state;
    size_t size;
    Onnx__ModelProto *m = model_a_dynamic();
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    rnnstate_error err;
    rnnstate_model *model = NULL;
    assert_int_equal(rnnstate_model_load_memory(bytes, size, "t.onnx", NULL, &model, &err),
                     RNNSTATE_OK);
    rnnstate_options o;
    rnnstate_options_init(&o);
    o.name_template = "{op}_{k}";
    rnnstate_report *report = (rnnstate_report *)&err;
    assert_int_equal(rnnstate_rewrite(model, &o, &report, &err), RNNSTATE_ERR_ARGUMENT);
    assert_null(report);
    assert_non_null(strstr(err.message, "{slot}"));
    rnnstate_model_free(model);
    free(bytes);
}

static void test_excluded_node_is_skipped_and_unchanged(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    add_layer(m, "GRU", "freq_gru", "X", I, NULL, NULL, "Ya");
    add_layer(m, "GRU", "time_gru", "X", I, NULL, NULL, "Yb");
    mb_output(m, "Ya", MB_FLOAT, "T,1,2,4");
    mb_output(m, "Yb", MB_FLOAT, "T,1,2,4");
    static const char *const exclude[] = { "freq_*" };
    rnnstate_options o;
    rnnstate_options_init(&o);
    o.n_exclude = 1;
    o.exclude = exclude;
    mb_run *run = rewrite(state, m, &o);

    assert_string_equal(mb_inputs_str(mb_find_node(run->g, "freq_gru")), "X,W_freq_gru,R_freq_gru");
    assert_string_equal(mb_outputs_str(mb_find_node(run->g, "freq_gru")), "Ya");
    /* k still counts the excluded node */
    assert_string_equal(mb_input_names(run->g), "X,GRU_1_initial_h");
    const rnnstate_node_report *n =
        assert_node_report(run->report, "freq_gru", "GRU", RNNSTATE_NODE_SKIPPED, "", "");
    assert_non_null(strstr(n->reason, "freq_*"));
    assert_node_report(run->report, "time_gru", "GRU", RNNSTATE_NODE_UPDATED, "GRU_1_initial_h",
                       "GRU_1_Y_h");
}

static void test_report_text_has_one_line_per_node_with_the_label(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    add_layer(m, "GRU", "gru_ok", "X", I, NULL, NULL, "Y");
    mb_node(m, "Relu", "relu_h", "X", "xr");
    add_layer(m, "GRU", "gru_skipped", "X", I, "xr", NULL, "Y2");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "Y2", MB_FLOAT, "T,1,batch,4");
    mb_run *run = rewrite(state, m, NULL);

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    rnnstate_report_write_text(run->report, "model.onnx", false, out);
    fclose(out);
    assert_non_null(strstr(text, "gru_ok"));
    assert_non_null(strstr(text, "GRU_0_initial_h"));
    assert_non_null(strstr(text, "GRU_0_Y_h"));
    assert_non_null(strstr(text, "gru_skipped"));
    assert_non_null(strstr(text, "'relu_h'"));
    for (char *line = text; *line;) {
        assert_int_equal(strncmp(line, "model.onnx", 10), 0);
        char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    free(text);
}

/* ---- idempotence and models without recurrent nodes --------------------------- */

typedef Onnx__ModelProto *(*model_factory)(void);

static void assert_second_run_changes_nothing(model_factory make, const rnnstate_options *o)
{
    mb_run first, second;
    mb_rewrite(make(), o, &first);
    assert_true(first.report->changed);
    mb_rewrite_bytes(first.out, first.out_size, o, &second);
    mb_assert_unchanged(&second);
    assert_int_equal(second.report->n_nodes, first.report->n_nodes);
    for (size_t i = 0; i < second.report->n_nodes; i++) {
        assert_int_equal(second.report->nodes[i].status, RNNSTATE_NODE_ALREADY_EXPOSED);
        assert_int_equal(second.report->nodes[i].n_inputs_added, 0);
        assert_int_equal(second.report->nodes[i].n_outputs_added, 0);
    }
    /* the same pairs, now reported as the model's own */
    assert_int_equal(second.report->n_pairs, first.report->n_pairs);
    for (size_t i = 0; i < first.report->n_pairs; i++) {
        const rnnstate_state_pair *a = &first.report->pairs[i];
        const rnnstate_state_pair *b = mb_report_pair(second.report, a->input);
        assert_non_null(b);
        assert_string_equal(b->output, a->output);
        assert_string_equal(mb_pair_shape_str(b), mb_pair_shape_str(a));
        assert_string_equal(b->dtype, a->dtype);
        assert_int_equal(b->optional, a->optional);
        assert_false(b->added);
    }
    mb_run_free(&first);
    mb_run_free(&second);
}

/* Case c, an initializer read only by the slot; case f, a final state
 * feeding a Gemm; layout 1, bidirectional, dynamic batch. */
static Onnx__ModelProto *model_c_own(void)
{
    Onnx__ModelProto *m = model_with_x(3, 9, "T,2,3");
    mb_initializer_filled(m, "h_init", MB_FLOAT, MB_DIMS(1, 2, 4), 0.5);
    add_layer(m, "GRU", "gru", "X", I, "h_init", NULL, "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    return m;
}

static Onnx__ModelProto *model_f_gemm(void)
{
    Onnx__ModelProto *m = model_with_x(7, 13, "T,batch,3");
    add_layer(m, "GRU", "gru", "X", I, NULL, NULL, "Y,h_last");
    mb_initializer_int64(m, "sq0", MB_DIMS(1), (int64_t[]){ 0 });
    mb_node(m, "Squeeze", "squeeze_h", "h_last,sq0", "h2d");
    mb_initializer_filled(m, "Wc", MB_FLOAT, MB_DIMS(4, 2), 0.5);
    mb_node(m, "Gemm", "classifier", "h2d,Wc", "logits");
    mb_output(m, "logits", MB_FLOAT, "batch,2");
    return m;
}

static Onnx__ModelProto *model_layout1_bidirectional(void)
{
    Onnx__ModelProto *m = model_with_x(8, 14, "batch,T,3");
    Onnx__NodeProto *n =
        add_layer_ex(m, "LSTM", "lstm", MB_FLOAT, "bidirectional", "X", I, NULL, NULL, "Y");
    mb_attr_int(n, "layout", 1);
    mb_output(m, "Y", MB_FLOAT, "batch,T,2,4");
    return m;
}

static void test_idempotent_on_every_rewritten_case(void **state)
{
    (void)state;
    static const model_factory factories[] = { model_a_dynamic, model_c_shared, model_c_own,
                                               model_d_torch,   model_e_torch,  model_f_gemm,
                                               model_layout1_bidirectional };
    for (size_t i = 0; i < sizeof factories / sizeof *factories; i++)
        assert_second_run_changes_nothing(factories[i], NULL);
}

static void test_idempotent_in_required_mode(void **state)
{
    (void)state;
    rnnstate_options o = required_options();
    assert_second_run_changes_nothing(model_a_dynamic, &o);
    assert_second_run_changes_nothing(model_e_torch, &o);
}

static void test_model_without_recurrent_nodes_is_unchanged(void **state)
{
    Onnx__ModelProto *m = model_with_x(3, 9, "N,3");
    mb_node(m, "Relu", "relu", "X", "Y");
    mb_output(m, "Y", MB_FLOAT, "N,3");
    mb_run *run = rewrite(state, m, NULL);

    mb_assert_unchanged(run);
    assert_int_equal(run->report->n_nodes, 0);
    assert_int_equal(run->report->n_pairs, 0);
    assert_int_equal(run->report->n_notes, 0);
    assert_int_equal(run->model->ir_version, 3);
}

static void test_recurrent_op_of_another_domain_is_ignored(void **state)
{
    Onnx__ModelProto *m = model_with_x(7, 14, "T,2,3");
    Onnx__NodeProto *gru = add_layer(m, "GRU", "custom_gru", "X", I, NULL, NULL, "Y");
    gru->domain = strdup("com.example");
    mb_output(m, "Y", MB_FLOAT, "T,1,2,4");
    mb_run *run = rewrite(state, m, NULL);

    mb_assert_unchanged(run);
    assert_int_equal(run->report->n_nodes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        REWRITE_TEST(test_a_absent_state_dynamic_batch_gets_input_with_expanded_zero_default),
        REWRITE_TEST(test_a_absent_state_fixed_batch_gets_full_shape_default_and_no_expand),
        REWRITE_TEST(test_a_lstm_without_state_outputs_gets_Y_h_and_Y_c_padded_and_named),
        REWRITE_TEST(test_a_lstm_missing_Y_h_between_named_outputs_is_filled_in),
        REWRITE_TEST(test_a_unread_named_Y_h_gets_the_generated_name),
        REWRITE_TEST(test_a_required_mode_adds_no_default_and_no_expand),
        REWRITE_TEST(test_a_default_raises_ir_version_from_3_to_4),
        REWRITE_TEST(test_a_dynamic_batch_below_opset_8_makes_the_input_required),
        REWRITE_TEST(test_a_lstm_slots_are_5_and_6_before_peepholes),
        REWRITE_TEST(test_a_and_b_mixed_in_one_lstm),
        REWRITE_TEST(test_b_state_input_and_output_already_exposed_are_only_annotated),
        REWRITE_TEST(test_b_state_input_with_internal_Y_h_adds_only_the_output),
        REWRITE_TEST(test_b_ir3_state_input_with_initializer_raises_ir_version),
        REWRITE_TEST(test_c_initializer_read_only_by_the_slot_becomes_input_named_by_the_template),
        REWRITE_TEST(test_c_initializer_shared_by_h_and_c_is_copied_per_slot),
        REWRITE_TEST(test_c_initializer_also_read_elsewhere_is_copied_and_kept),
        REWRITE_TEST(test_c_report_decisions_name_the_replaced_initializer),
        REWRITE_TEST(test_c_initializer_with_dynamic_batch_gets_an_expand),
        REWRITE_TEST(test_c_nonuniform_constant_node_in_the_slot_becomes_the_default),
        REWRITE_TEST(test_d_torch_expand_of_constant_zeros_becomes_input_with_expand),
        REWRITE_TEST(test_d_expand_of_nonuniform_constant_fixed_batch_default_is_tiled),
        REWRITE_TEST(test_d_expand_of_shared_initializer_gives_each_slot_a_copy),
        REWRITE_TEST(test_d_double_constant_keeps_its_values_and_type),
        REWRITE_TEST(test_d_expand_of_rank_1_nonuniform_initializer_becomes_the_default),
        REWRITE_TEST(test_e_torch_zero_state_shared_by_layers_and_h_c_gives_each_slot_an_input),
        REWRITE_TEST(test_e_zero_constant_fixed_batch_becomes_input_with_full_zero_default),
        REWRITE_TEST(test_e_chain_through_cast_and_unsqueeze_of_int_zeros),
        REWRITE_TEST(test_e_chain_shown_is_the_path_through_the_first_concat_input),
        REWRITE_TEST(test_e_uniform_nonzero_constant_of_shape_is_the_default),
        REWRITE_TEST(test_e_required_mode_replaces_the_chain_without_defaults),
        REWRITE_TEST(test_f_slices_of_input_h0_and_concat_to_output_hn_add_nothing),
        REWRITE_TEST(test_f_final_state_feeding_gemm_is_exposed_under_the_template_name),
        REWRITE_TEST(test_f_Y_h_already_a_graph_output_keeps_its_name),
        REWRITE_TEST(test_f_slice_of_input_whose_Y_h_reaches_no_output_gets_an_output_like_the_input),
        REWRITE_TEST(test_g_state_computed_from_data_skips_the_node_and_names_the_blocker),
        REWRITE_TEST(test_g_lstm_with_only_c_data_dependent_is_skipped_whole),
        REWRITE_TEST(test_bidirectional_state_has_two_directions_and_a_warning),
        REWRITE_TEST(test_bidirectional_nonuniform_constant_is_tiled_per_direction),
        REWRITE_TEST(test_reverse_direction_warns),
        REWRITE_TEST(test_layout_1_state_is_batch_first),
        REWRITE_TEST(test_layout_1_bidirectional_nonuniform_constant_is_tiled_per_batch),
        REWRITE_TEST(test_missing_hidden_size_comes_from_R),
        REWRITE_TEST(test_float16_model_keeps_float16_inputs_outputs_and_defaults),
        REWRITE_TEST(test_double_model_keeps_double_inputs_outputs_and_defaults),
        REWRITE_TEST(test_batch_of_a_stacked_layer_is_inferred_from_the_previous_layer),
        REWRITE_TEST(test_batch_that_cannot_be_known_gets_a_fresh_symbolic_name),
        REWRITE_TEST(test_k_counts_each_op_type_in_graph_order),
        REWRITE_TEST(test_generated_names_avoid_names_already_in_the_model),
        REWRITE_TEST(test_fixed_sequence_length_is_reported_with_a_warning),
        REWRITE_TEST(test_name_template_with_node_name),
        REWRITE_TEST(test_name_template_without_slot_is_refused),
        REWRITE_TEST(test_excluded_node_is_skipped_and_unchanged),
        REWRITE_TEST(test_report_text_has_one_line_per_node_with_the_label),
        REWRITE_TEST(test_idempotent_on_every_rewritten_case),
        REWRITE_TEST(test_idempotent_in_required_mode),
        REWRITE_TEST(test_model_without_recurrent_nodes_is_unchanged),
        REWRITE_TEST(test_recurrent_op_of_another_domain_is_ignored),
    };
    return cmocka_run_group_tests_name("state_pass", tests, NULL, NULL);
}
