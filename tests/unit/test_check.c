/* check.c (rnnstate_model_check, the command line's --check): each check it
 * claims, caught on a model broken in exactly that way, and passed by the
 * same model intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_builder.h"

/* The model every case starts from: GRU 'gru' reading X and state input h0
 * [1,batch,4], writing Y and state output Yh, and the report pair between
 * them. A case breaks the model or the pair, then names what must be said. */
static Onnx__ModelProto *base_model(void)
{
    Onnx__ModelProto *m = mb_new(8, 17);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_input(m, "h0", MB_FLOAT, "1,batch,4");
    mb_input(m, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, 4, 3, 0.1);
    mb_node(m, "Relu", "relu", "X", "a");
    mb_recurrent(m, "GRU", "gru", 4, NULL, "a,W,R,,,h0", "Y,Yh");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    mb_output(m, "Yh", MB_FLOAT, "1,batch,4");
    return m;
}

/* How a case changes the report's pair (zero fields: as base_model has it). */
typedef struct pair_change {
    const char *input, *output, *dtype;
    size_t rank;
    const char *batch; /* dimension 1's symbolic name */
    int64_t hidden;    /* dimension 2 */
} pair_change;

typedef struct check_case {
    const char *why;
    void (*break_model)(Onnx__ModelProto *m);
    pair_change pair;
    const char *message; /* NULL: the check passes */
} check_case;

static void move_node(Onnx__GraphProto *g, size_t from, size_t to)
{
    Onnx__NodeProto *n = g->node[from];
    if (from < to)
        memmove(&g->node[from], &g->node[from + 1], (to - from) * sizeof *g->node);
    else
        memmove(&g->node[to + 1], &g->node[to], (from - to) * sizeof *g->node);
    g->node[to] = n;
}

/* An If after the GRU whose then-branch holds node 'inner' reading `value`. */
static Onnx__GraphProto *if_reading(Onnx__ModelProto *m, const char *value)
{
    Onnx__NodeProto *branch = mb_node(m, "If", "if", "cond", "if_out");
    Onnx__GraphProto *then =
        mb_identity_branch(branch, "then_branch", "then", "inner", value, "then_out");
    mb_identity_branch(branch, "else_branch", "else", "other", "X", "else_out");
    return then;
}

/* ---- values read before they are defined ---------------------------------- */

static void reads_undefined(Onnx__ModelProto *m) { mb_node(m, "Relu", "reader", "ghost", "z"); }
static void out_of_order(Onnx__ModelProto *m) { move_node(m->graph, 1, 0); }
static void no_optional_inputs(Onnx__ModelProto *m)
{
    mb_node(m, "Clip", "clip", "X,,", "clipped"); /* min and max absent */
}
static void if_reads_earlier_value(Onnx__ModelProto *m) { if_reading(m, "Yh"); }
static void if_reads_later_value(Onnx__ModelProto *m)
{
    if_reading(m, "late");
    mb_node(m, "Relu", "late_relu", "X", "late");
}
static void if_reads_own_output(Onnx__ModelProto *m) { if_reading(m, "if_out"); }
static void if_reads_undefined(Onnx__ModelProto *m) { if_reading(m, "ghost"); }
static void branch_out_of_order(Onnx__ModelProto *m)
{
    Onnx__GraphProto *then = if_reading(m, "b1"); /* inner reads b1, then ... */
    mb_graph_node(then, "Relu", "inner_producer", "X", "b1");
}
static void branch_output_undefined(Onnx__ModelProto *m)
{
    Onnx__GraphProto *then = if_reading(m, "X");
    mb_graph_output(then, "nowhere", MB_FLOAT, NULL);
}
static void loop_body_reads_its_inputs(Onnx__ModelProto *m)
{
    mb_initializer_int64(m, "trip", MB_SCALAR, (int64_t[]){ 2 });
    Onnx__NodeProto *loop = mb_node(m, "Loop", "loop", "trip,cond,Yh", "h_final");
    Onnx__GraphProto *body = mb_attr_graph(loop, "body", "body");
    Onnx__ValueInfoProto *in[3] = { mb_value_info_new("i", MB_INT64, ""),
                                    mb_value_info_new("c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, ""),
                                    mb_value_info_new("h", MB_FLOAT, NULL) };
    body->input = malloc(sizeof in);
    assert_non_null(body->input);
    memcpy(body->input, in, sizeof in);
    body->n_input = 3;
    mb_graph_node(body, "Identity", "keep_going", "c", "c_out");
    mb_graph_node(body, "Add", "step", "h,Yh", "h_out"); /* Yh: outer scope */
    mb_graph_output(body, "c_out", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    mb_graph_output(body, "h_out", MB_FLOAT, NULL);
}
static void output_undefined(Onnx__ModelProto *m) { mb_output(m, "nowhere", MB_FLOAT, NULL); }

/* ---- state pairs ------------------------------------------------------------ */

static void input_unread(Onnx__ModelProto *m) { mb_input(m, "h_unread", MB_FLOAT, "1,batch,4"); }
static void initializer_as_output(Onnx__ModelProto *m) { mb_output(m, "W", MB_FLOAT, NULL); }
static void output_fixed_size_differs(Onnx__ModelProto *m)
{
    Onnx__ValueInfoProto *yh = mb_find_output(m->graph, "Yh");
    yh->type->tensor_type->shape->dim[0]->dim_value = 2;
}
static void output_other_symbol(Onnx__ModelProto *m)
{
    Onnx__TensorShapeProto__Dimension *d = mb_find_output(m->graph, "Yh")->type->tensor_type->shape->dim[1];
    free(d->dim_param);
    d->dim_param = strdup("gru_batch");
}
static void output_dtype_differs(Onnx__ModelProto *m)
{
    mb_find_output(m->graph, "Yh")->type->tensor_type->elem_type = MB_DOUBLE;
}
static void output_without_shape(Onnx__ModelProto *m)
{
    Onnx__TypeProto__Tensor *t = mb_find_output(m->graph, "Yh")->type->tensor_type;
    protobuf_c_message_free_unpacked(&t->shape->base, NULL);
    t->shape = NULL;
}

#define FAILED "<memory>: check failed: "
static const check_case cases[] = {
    { "intact", NULL, { 0 }, NULL },
    { "absent optional inputs ('')", no_optional_inputs, { 0 }, NULL },
    { "a read of a value nothing defines", reads_undefined, { 0 },
      FAILED "node 'reader' (Relu) of graph 'g' reads 'ghost', which no graph input, initializer "
             "or node defines" },
    { "a node before the node it reads", out_of_order, { 0 },
      FAILED "nodes are not in topological order: node 'gru' of graph 'g' reads 'a' before node "
             "'relu' produces it" },
    { "a branch reads an outer value defined before the If", if_reads_earlier_value, { 0 }, NULL },
    { "a branch reads an outer value produced after the If", if_reads_later_value, { 0 },
      FAILED "nodes are not in topological order: node 'inner' of graph 'then' reads 'late' "
             "before node 'late_relu' produces it" },
    { "a branch reads its own If's output", if_reads_own_output, { 0 },
      FAILED "nodes are not in topological order: node 'inner' of graph 'then' reads 'if_out' "
             "before node 'if' produces it" },
    { "a branch reads a value defined nowhere", if_reads_undefined, { 0 },
      FAILED "node 'inner' (Identity) of graph 'then' reads 'ghost', which no graph input, "
             "initializer or node defines" },
    { "nodes of a branch out of order", branch_out_of_order, { 0 },
      FAILED "nodes are not in topological order: node 'inner' of graph 'then' reads 'b1' "
             "before node 'inner_producer' produces it" },
    { "a branch output defined nowhere", branch_output_undefined, { 0 },
      FAILED "graph output 'nowhere' of graph 'then' is not defined" },
    { "a Loop body reads its inputs and an outer value", loop_body_reads_its_inputs, { 0 }, NULL },
    { "a graph output defined nowhere", output_undefined, { 0 },
      FAILED "graph output 'nowhere' of graph 'g' is not defined" },
    { "pair input is not a graph input", NULL, { .input = "a" },
      FAILED "state input 'a' is not a graph input" },
    { "pair input read by nothing", input_unread, { .input = "h_unread" },
      FAILED "nothing reads state input 'h_unread'" },
    { "pair output is not a graph output", NULL, { .output = "a" },
      FAILED "state output 'a' is not a graph output" },
    { "pair output produced by no node", initializer_as_output, { .output = "W" },
      FAILED "no node produces state output 'W'" },
    { "report dtype differs from the input", NULL, { .dtype = "float16" },
      FAILED "state input 'h0' does not have the element type the report gives" },
    { "report rank differs", NULL, { .rank = 2 },
      FAILED "state input 'h0' does not have the rank the report gives" },
    { "report symbolic dim differs", NULL, { .batch = "B" },
      FAILED "state input 'h0' does not have the shape the report gives" },
    { "report fixed dim differs", NULL, { .hidden = 8 },
      FAILED "state input 'h0' does not have the shape the report gives" },
    { "output of another fixed size", output_fixed_size_differs, { 0 },
      FAILED "state output 'Yh' does not have the shape the report gives" },
    { "output of another element type", output_dtype_differs, { 0 },
      FAILED "state output 'Yh' does not have the element type the report gives" },
    { "output with another symbolic batch", output_other_symbol, { 0 }, NULL },
    { "output without a declared shape", output_without_shape, { 0 }, NULL },
};

static void run_case(const check_case *c)
{
    Onnx__ModelProto *proto = base_model();
    if (c->break_model)
        c->break_model(proto);
    rnnstate_error err = { 0 };
    rnnstate_model *model = mb_load(proto, &err);
    if (!model)
        fail_msg("%s: load: %s", c->why, err.message);

    const pair_change *p = &c->pair;
    rnnstate_dim shape[3] = { { 1, NULL },
                              { -1, p->batch ? p->batch : "batch" },
                              { p->hidden ? p->hidden : 4, NULL } };
    rnnstate_state_pair pair = { .input = p->input ? p->input : "h0",
                                 .output = p->output ? p->output : "Yh",
                                 .rank = p->rank ? p->rank : 3,
                                 .shape = shape,
                                 .dtype = p->dtype ? p->dtype : "float32",
                                 .optional = false,
                                 .added = true };
    rnnstate_report report = { .pairs = &pair, .n_pairs = 1 };
    rnnstate_status st = rnnstate_model_check(model, &report, &err);
    rnnstate_model_free(model);
    if (!c->message && st != RNNSTATE_OK)
        fail_msg("%s: expected to pass, got: %s", c->why, err.message);
    if (c->message && (st != RNNSTATE_ERR_INVALID || strcmp(err.message, c->message) != 0))
        fail_msg("%s: expected '%s', got status %d: '%s'", c->why, c->message, (int)st,
                 st == RNNSTATE_OK ? "" : err.message);
}

/* One cmocka test per case (its `why` names it), so each failure is listed. */
static void test_check_case(void **state)
{
    run_case(*state);
}

/* A model the rewrite produced passes with the report the rewrite gave. */
static void test_rewritten_model_passes(void **state)
{
    (void)state;
    mb_run run;
    mb_rewrite(mb_small_model("LSTM", "lstm"), NULL, &run);
    rnnstate_error err = { 0 };
    rnnstate_model *model = NULL;
    assert_int_equal(rnnstate_model_load_memory(run.out, run.out_size, NULL, NULL, &model, &err),
                     RNNSTATE_OK);
    assert_int_equal(run.report->n_pairs, 2);
    assert_int_equal(rnnstate_model_check(model, run.report, &err), RNNSTATE_OK);
    rnnstate_model_free(model);
    mb_run_free(&run);
}

#define N_CASES (sizeof cases / sizeof cases[0])

int main(void)
{
    struct CMUnitTest tests[N_CASES + 1];
    for (size_t i = 0; i < N_CASES; i++)
        tests[i] = (struct CMUnitTest){ .name = cases[i].why, .test_func = test_check_case,
                                        .initial_state = (void *)&cases[i] };
    tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test(test_rewritten_model_passes);
    return _cmocka_run_group_tests("check", tests, N_CASES + 1, NULL, NULL);
}
