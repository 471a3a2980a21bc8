/* state/types: element types inferred through the graph (see types.h). */
#include "state/types.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx_build.h"
#include "recurrent_ops.h"

enum {
    T_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
    T_INT64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
    T_BOOL = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
    T_STRING = ONNX__TENSOR_PROTO__DATA_TYPE__STRING,
};

/* How an op's outputs get their element type. */
typedef enum type_rule {
    RULE_UNKNOWN,
    RULE_INPUT0,      /* output 0 has input 0's type (the others: see extra_output_type) */
    RULE_ALL_INPUT0,  /* every output has input 0's type (Split) */
    RULE_ANY_INPUT,   /* every input and output share one type (Concat, Add, ...) */
    RULE_INT64,
    RULE_BOOL,
} type_rule;

typedef struct op_rule {
    const char *op;
    type_rule rule;
} op_rule;

/* Ops of the default domain whose output type follows from their inputs
 * alone. Ops that set it from an attribute (Cast, Constant, ...) and control
 * flow are handled in output_type(). */
static const op_rule op_rules[] = {
    /* rearranging data */
    { "Identity", RULE_INPUT0 }, { "Reshape", RULE_INPUT0 }, { "Transpose", RULE_INPUT0 },
    { "Squeeze", RULE_INPUT0 }, { "Unsqueeze", RULE_INPUT0 }, { "Flatten", RULE_INPUT0 },
    { "Slice", RULE_INPUT0 }, { "Gather", RULE_INPUT0 }, { "GatherElements", RULE_INPUT0 },
    { "GatherND", RULE_INPUT0 }, { "Tile", RULE_INPUT0 }, { "Expand", RULE_INPUT0 },
    { "Pad", RULE_INPUT0 }, { "ScatterND", RULE_INPUT0 }, { "ScatterElements", RULE_INPUT0 },
    { "Scatter", RULE_INPUT0 }, { "DepthToSpace", RULE_INPUT0 }, { "SpaceToDepth", RULE_INPUT0 },
    { "ReverseSequence", RULE_INPUT0 }, { "Compress", RULE_INPUT0 }, { "Trilu", RULE_INPUT0 },
    { "Resize", RULE_INPUT0 }, { "Upsample", RULE_INPUT0 }, { "Split", RULE_ALL_INPUT0 },
    /* computing on data of one type */
    { "Neg", RULE_INPUT0 }, { "Abs", RULE_INPUT0 }, { "Relu", RULE_INPUT0 },
    { "Sigmoid", RULE_INPUT0 }, { "Tanh", RULE_INPUT0 }, { "Softmax", RULE_INPUT0 },
    { "LogSoftmax", RULE_INPUT0 }, { "HardSigmoid", RULE_INPUT0 }, { "Clip", RULE_INPUT0 },
    { "Sqrt", RULE_INPUT0 }, { "Exp", RULE_INPUT0 }, { "Log", RULE_INPUT0 },
    { "Erf", RULE_INPUT0 }, { "LeakyRelu", RULE_INPUT0 }, { "Elu", RULE_INPUT0 },
    { "Selu", RULE_INPUT0 }, { "PRelu", RULE_INPUT0 }, { "Softplus", RULE_INPUT0 },
    { "Softsign", RULE_INPUT0 }, { "HardSwish", RULE_INPUT0 }, { "Gelu", RULE_INPUT0 },
    { "Floor", RULE_INPUT0 }, { "Ceil", RULE_INPUT0 }, { "Round", RULE_INPUT0 },
    { "Reciprocal", RULE_INPUT0 }, { "Sin", RULE_INPUT0 }, { "Cos", RULE_INPUT0 },
    { "Pow", RULE_INPUT0 }, { "Sign", RULE_INPUT0 }, { "CumSum", RULE_INPUT0 },
    { "MatMul", RULE_INPUT0 }, { "Gemm", RULE_INPUT0 }, { "Conv", RULE_INPUT0 },
    { "ConvTranspose", RULE_INPUT0 }, { "ReduceMean", RULE_INPUT0 }, { "ReduceSum", RULE_INPUT0 },
    { "ReduceMax", RULE_INPUT0 }, { "ReduceMin", RULE_INPUT0 }, { "ReduceProd", RULE_INPUT0 },
    { "ReduceL1", RULE_INPUT0 }, { "ReduceL2", RULE_INPUT0 }, { "ReduceSumSquare", RULE_INPUT0 },
    { "ReduceLogSumExp", RULE_INPUT0 }, { "BatchNormalization", RULE_INPUT0 },
    { "LayerNormalization", RULE_INPUT0 }, { "InstanceNormalization", RULE_INPUT0 },
    { "LpNormalization", RULE_INPUT0 }, { "Dropout", RULE_INPUT0 }, { "MaxPool", RULE_INPUT0 },
    { "AveragePool", RULE_INPUT0 }, { "GlobalAveragePool", RULE_INPUT0 },
    { "GlobalMaxPool", RULE_INPUT0 }, { "TopK", RULE_INPUT0 }, { "Hardmax", RULE_INPUT0 },
    { "Celu", RULE_INPUT0 }, { "Mish", RULE_INPUT0 }, { "Shrink", RULE_INPUT0 },
    { "ThresholdedRelu", RULE_INPUT0 }, { "Mod", RULE_INPUT0 },
    /* several inputs of one type */
    { "Concat", RULE_ANY_INPUT }, { "Add", RULE_ANY_INPUT }, { "Sub", RULE_ANY_INPUT },
    { "Mul", RULE_ANY_INPUT }, { "Div", RULE_ANY_INPUT }, { "Max", RULE_ANY_INPUT },
    { "Min", RULE_ANY_INPUT }, { "Sum", RULE_ANY_INPUT }, { "Mean", RULE_ANY_INPUT },
    { "Range", RULE_ANY_INPUT },
    /* fixed output types */
    { "Shape", RULE_INT64 }, { "Size", RULE_INT64 }, { "NonZero", RULE_INT64 },
    { "ArgMax", RULE_INT64 }, { "ArgMin", RULE_INT64 }, { "NonMaxSuppression", RULE_INT64 },
    { "Equal", RULE_BOOL }, { "Less", RULE_BOOL }, { "LessOrEqual", RULE_BOOL },
    { "Greater", RULE_BOOL }, { "GreaterOrEqual", RULE_BOOL }, { "Not", RULE_BOOL },
    { "And", RULE_BOOL }, { "Or", RULE_BOOL }, { "Xor", RULE_BOOL }, { "IsNaN", RULE_BOOL },
    { "IsInf", RULE_BOOL },
};

static bool in_default_domain(const Onnx__NodeProto *node)
{
    const char *d = str_or_empty(node->domain);
    return !*d || !strcmp(d, "ai.onnx");
}

#define N_OP_RULES (sizeof op_rules / sizeof op_rules[0])

/* op_rules sorted by name, once per process, for a binary search per node
 * (the table stays grouped by kind for its readers). */
static op_rule sorted_rules[N_OP_RULES];
static pthread_once_t sorted_rules_once = PTHREAD_ONCE_INIT;

static int compare_rules(const void *a, const void *b)
{
    return strcmp(((const op_rule *)a)->op, ((const op_rule *)b)->op);
}

static void sort_rules(void)
{
    memcpy(sorted_rules, op_rules, sizeof op_rules);
    qsort(sorted_rules, N_OP_RULES, sizeof *sorted_rules, compare_rules);
}

static type_rule rule_of(const Onnx__NodeProto *node)
{
    if (!in_default_domain(node))
        return RULE_UNKNOWN;
    pthread_once(&sorted_rules_once, sort_rules);
    op_rule key = { str_or_empty(node->op_type), RULE_UNKNOWN };
    const op_rule *hit = bsearch(&key, sorted_rules, N_OP_RULES, sizeof key, compare_rules);
    return hit ? hit->rule : RULE_UNKNOWN;
}

/* The position of the scope holding `graph` in the tree, or SIZE_MAX: the
 * tree's own map (a sorted copy of it cost a sort per pass, and a binary
 * search per lookup, with thousands of If branches). */
static size_t scope_index(const elem_types *et, const Onnx__GraphProto *graph)
{
    size_t at;
    return ptrmap_get(&et->tree->by_graph, graph, &at) && at < et->n ? at : SIZE_MAX;
}

/* The type recorded for `value` in the scope at position i, or 0. */
static int32_t type_in_scope(const elem_types *et, size_t i, const char *value)
{
    if (!et->types[i]) /* not typed yet */
        return 0;
    int v = graph_index_at(&et->tree->scopes[i]->index, value);
    return v >= 0 ? et->types[i][v] : 0;
}

int32_t elem_type_of(const elem_types *et, const scope *s, const char *value)
{
    if (!value || !*value)
        return 0;
    for (; s; s = s->parent) {
        size_t i = scope_index(et, s->graph);
        int32_t t = i == SIZE_MAX ? 0 : type_in_scope(et, i, value);
        if (t > 0)
            return t;
    }
    return 0;
}

static int32_t input_type(const elem_types *et, const scope *s, const Onnx__NodeProto *node,
                          size_t slot)
{
    if (slot >= node->n_input)
        return 0;
    if (node == et->current && et->current_reads[slot] >= 0) {
        /* the node being typed: its own scope by position, then outwards */
        int32_t t = et->types[et->current_scope][et->current_reads[slot]];
        return t > 0 ? t : elem_type_of(et, s->parent, node->input[slot]);
    }
    return elem_type_of(et, s, node->input[slot]);
}

/* The first known type among inputs [from, to) of the node. */
static int32_t first_input_type(const elem_types *et, const scope *s,
                                const Onnx__NodeProto *node, size_t from, size_t to)
{
    for (size_t i = from; i < to && i < node->n_input; i++) {
        int32_t t = input_type(et, s, node, i);
        if (t)
            return t;
    }
    return 0;
}

/* X, W, R and the states share one type; an op with quantized weights has
 * int8 W and R, so only X and the states count there. */
static int32_t recurrent_type(const elem_types *et, const scope *s, const Onnx__NodeProto *node,
                              const recurrent_op *op)
{
    int32_t t = input_type(et, s, node, RECURRENT_INPUT_X);
    for (int slot = 0; !t && slot < op->n_slots; slot++)
        t = input_type(et, s, node, (size_t)op->initial_state_input[slot]);
    if (!t && !op->quantized_weights)
        t = first_input_type(et, s, node, RECURRENT_INPUT_W, RECURRENT_REQUIRED_INPUTS);
    return t;
}

/* A Constant's type: its tensor's, or the kind of its value_* attribute. */
static int32_t constant_type(const Onnx__NodeProto *node)
{
    for (size_t i = 0; i < node->n_attribute; i++) {
        const Onnx__AttributeProto *a = node->attribute[i];
        const char *name = str_or_empty(a->name);
        if (!strcmp(name, "value"))
            return a->t ? a->t->data_type : 0;
        if (!strcmp(name, "sparse_value"))
            return a->sparse_tensor && a->sparse_tensor->values
                       ? a->sparse_tensor->values->data_type
                       : 0;
        if (!strcmp(name, "value_float") || !strcmp(name, "value_floats"))
            return T_FLOAT;
        if (!strcmp(name, "value_int") || !strcmp(name, "value_ints"))
            return T_INT64;
        if (!strcmp(name, "value_string") || !strcmp(name, "value_strings"))
            return T_STRING;
    }
    return 0;
}

/* Output `slot` of a subgraph-holding node: the type of the matching output
 * of subgraph `g`. */
static int32_t graph_output_type(const elem_types *et, const Onnx__GraphProto *g, size_t slot)
{
    if (!g || slot >= g->n_output)
        return 0;
    size_t i = scope_index(et, g);
    if (i == SIZE_MAX)
        return 0;
    return elem_type_of(et, et->tree->scopes[i], g->output[slot]->name);
}

static int32_t body_output_type(const elem_types *et, const Onnx__NodeProto *node,
                                const char *attr, size_t slot)
{
    const Onnx__AttributeProto *a = node_attr(node, attr);
    return graph_output_type(et, a ? a->g : NULL, slot);
}

/* Outputs of If, Loop and Scan. A Loop's body outputs are the condition,
 * then its carried values and scan outputs in the Loop's output order; a
 * carried value also has its initial value's type (Loop input slot + 2). */
static int32_t control_flow_type(const elem_types *et, const scope *s,
                                 const Onnx__NodeProto *node, size_t slot)
{
    const char *op = str_or_empty(node->op_type);
    if (node_is_if(node)) {
        int32_t t = graph_output_type(et, if_branch(node, 0), slot);
        return t ? t : graph_output_type(et, if_branch(node, 1), slot);
    }
    if (!strcmp(op, "Loop")) {
        int32_t t = body_output_type(et, node, "body", slot + 1);
        return t ? t : input_type(et, s, node, slot + 2);
    }
    if (!strcmp(op, "Scan"))
        return body_output_type(et, node, "body", slot);
    return 0;
}

/* The second and later outputs of RULE_INPUT0 ops that are not of input
 * 0's type. */
static int32_t extra_output_type(const Onnx__NodeProto *node, size_t slot)
{
    const char *op = str_or_empty(node->op_type);
    if (slot == 1 && (!strcmp(op, "TopK") || !strcmp(op, "MaxPool")))
        return T_INT64;
    if (slot == 1 && !strcmp(op, "Dropout"))
        return T_BOOL;
    return 0;
}

static int32_t output_type(const elem_types *et, const scope *s, const Onnx__NodeProto *node,
                           size_t slot)
{
    const recurrent_op *rop = recurrent_op_of(node);
    if (rop)
        return recurrent_type(et, s, node, rop);
    if (!in_default_domain(node))
        return 0;
    const char *op = str_or_empty(node->op_type);
    if (!strcmp(op, "Constant"))
        return constant_type(node);
    if (!strcmp(op, "ConstantOfShape")) {
        const Onnx__AttributeProto *v = node_attr(node, "value");
        return v && v->t ? v->t->data_type : T_FLOAT;
    }
    if (!strcmp(op, "Cast"))
        return (int32_t)node_attr_int(node, "to", 0);
    if (!strcmp(op, "CastLike"))
        return input_type(et, s, node, 1);
    if (!strcmp(op, "Where"))
        return first_input_type(et, s, node, 1, 3);
    int32_t t = control_flow_type(et, s, node, slot);
    if (t)
        return t;
    switch (rule_of(node)) {
    case RULE_INPUT0: return slot == 0 ? input_type(et, s, node, 0) : extra_output_type(node, slot);
    case RULE_ALL_INPUT0: return input_type(et, s, node, 0);
    case RULE_ANY_INPUT: return first_input_type(et, s, node, 0, node->n_input);
    case RULE_INT64: return slot == 0 ? T_INT64 : 0;
    case RULE_BOOL: return slot == 0 ? T_BOOL : 0;
    default: return 0;
    }
}

/* Declared types, first declaration first: inputs, initializers,
 * value_info, outputs. */
static void put_declared(int32_t *types, const graph_index *gi, const char *name, int32_t t)
{
    int v = name && *name && t > 0 ? graph_index_at(gi, name) : -1;
    if (v >= 0 && types[v] <= 0)
        types[v] = t;
}

static void seed_declared(int32_t *types, const graph_index *gi)
{
    const Onnx__GraphProto *g = gi->graph;
    for (size_t i = 0; i < g->n_input; i++)
        put_declared(types, gi, g->input[i]->name, value_info_elem_type(g->input[i]));
    for (size_t i = 0; i < g->n_initializer; i++)
        put_declared(types, gi, g->initializer[i]->name, g->initializer[i]->data_type);
    for (size_t i = 0; i < g->n_value_info; i++)
        put_declared(types, gi, g->value_info[i]->name, value_info_elem_type(g->value_info[i]));
    for (size_t i = 0; i < g->n_output; i++)
        put_declared(types, gi, g->output[i]->name, value_info_elem_type(g->output[i]));
}

typedef struct visit_ctx {
    elem_types *et;
    bool *done;
} visit_ctx;

static bool type_scope(elem_types *et, size_t index, bool *done);

static bool type_subgraph(const Onnx__GraphProto *graph, void *arg)
{
    visit_ctx *v = arg;
    size_t i = scope_index(v->et, graph);
    return i == SIZE_MAX || v->done[i] || type_scope(v->et, i, v->done);
}

/* Types the scope's values in node order; a subgraph is typed when the node
 * holding it comes up, when every outer value it may read is typed. The
 * recursion is as deep as the subgraph nesting, which loading bounds. */
static bool type_scope(elem_types *et, size_t index, bool *done)
{
    const scope *s = et->tree->scopes[index];
    const graph_index *gi = &s->index;
    int32_t *types = calloc(gi->n_values ? gi->n_values : 1, sizeof *types);
    visit_ctx v = { et, done };
    done[index] = true;
    if (!types)
        return false;
    et->types[index] = types;
    seed_declared(types, gi);
    for (size_t n = 0; n < s->graph->n_node; n++) {
        const Onnx__NodeProto *node = s->graph->node[n];
        if (!for_each_subgraph(node, type_subgraph, &v))
            return false;
        const int *outputs = graph_index_node_outputs(gi, n);
        for (size_t o = 0; o < node->n_output; o++) {
            if (outputs[o] < 0 || types[outputs[o]] > 0)
                continue;
            et->current = node;
            et->current_reads = graph_index_node_inputs(gi, n);
            et->current_scope = index;
            int32_t t = output_type(et, s, node, o);
            et->current = NULL;
            if (t > 0)
                types[outputs[o]] = t;
        }
    }
    return true;
}

bool elem_types_build(elem_types *et, const scope_tree *tree)
{
    memset(et, 0, sizeof *et);
    et->tree = tree;
    et->n = tree->n;
    et->types = calloc(tree->n ? tree->n : 1, sizeof *et->types);
    bool *done = calloc(tree->n ? tree->n : 1, sizeof *done);
    bool ok = et->types && done;
    /* the main graph reaches every subgraph; the loop only guards against a
     * scope no node holds */
    for (size_t i = 0; ok && i < tree->n; i++)
        if (!done[i])
            ok = type_scope(et, i, done);
    free(done);
    if (!ok)
        elem_types_free(et);
    return ok;
}

void elem_types_free(elem_types *et)
{
    for (size_t i = 0; et->types && i < et->n; i++)
        free(et->types[i]);
    free(et->types);
    memset(et, 0, sizeof *et);
}

/* The producer of `value` seen from `s`, or NULL (graph input, initializer,
 * or nothing); *owner gets the scope defining it. */
static const Onnx__NodeProto *producer_of(const scope *s, const char *value, const scope **owner,
                                          const value_entry **entry)
{
    *entry = scope_lookup(s, value, owner);
    if (!*entry || (*entry)->producer < 0)
        return NULL;
    return (*owner)->graph->node[(*entry)->producer];
}

/* The input of `node` whose unknown type keeps its output's type unknown,
 * or NULL when the op itself does not say (a custom op, an unknown op). */
static const char *untyped_input(const elem_types *et, const scope *s,
                                 const Onnx__NodeProto *node)
{
    bool carries = recurrent_op_of(node) || rule_of(node) == RULE_INPUT0 ||
                   rule_of(node) == RULE_ALL_INPUT0 || rule_of(node) == RULE_ANY_INPUT;
    if (!carries || !node->n_input)
        return NULL;
    for (size_t i = 0; i < node->n_input; i++)
        if (*str_or_empty(node->input[i]) && !input_type(et, s, node, i))
            return node->input[i];
    return NULL;
}

void elem_type_blocker(const elem_types *et, const scope *s, const char *value, char *buf,
                       size_t size)
{
    /* walk back along untyped inputs; a malformed graph with a cycle is cut
     * off after as many steps as it has nodes */
    size_t budget = s->graph->n_node + 1;
    for (;;) {
        const scope *owner = NULL;
        const value_entry *e = NULL;
        const Onnx__NodeProto *p = producer_of(s, value, &owner, &e);
        if (!e) {
            snprintf(buf, size, "'%s' is not defined in the graph", value);
            return;
        }
        if (!p) {
            snprintf(buf, size, "'%s' is a graph input declared without an element type", value);
            return;
        }
        const char *next = untyped_input(et, owner, p);
        if (!next || !budget--) {
            snprintf(buf, size, "'%s' comes from %s node '%s', whose output type is not known",
                     value, str_or_empty(p->op_type), str_or_empty(p->name));
            return;
        }
        value = next;
        s = owner;
    }
}
