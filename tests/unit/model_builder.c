/* model_builder's building half: models for the unit tests and for the
 * bad-model generator (tests/tools/make_bad_models.c), built through the
 * library's own onnx_build.c, so that there is one way to build a model
 * piece. Tests have no use for an out-of-memory path: a failed allocation
 * aborts. No cmocka here (the generator links this file alone). */
#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx_build.h"

/* ---- failing loudly ------------------------------------------------------ */

static void out_of_memory(void)
{
    fprintf(stderr, "model_builder: out of memory\n");
    abort();
}

void *mb_must(void *p)
{
    if (!p)
        out_of_memory();
    return p;
}

static void must_ok(bool ok)
{
    if (!ok)
        out_of_memory();
}

void *mb_must_malloc(size_t n)
{
    return mb_must(malloc(n ? n : 1));
}

/* ---- models and graphs ----------------------------------------------------- */

Onnx__ModelProto *mb_new(int64_t ir_version, int64_t opset)
{
    return mb_must(model_new(ir_version, opset, "model_builder", "g"));
}

void mb_free(Onnx__ModelProto *m)
{
    if (m)
        protobuf_c_message_free_unpacked(&m->base, NULL);
}

Onnx__GraphProto *mb_graph_new(const char *name)
{
    return mb_must(graph_new(name));
}

/* ---- value infos ------------------------------------------------------------- */

Onnx__ValueInfoProto *mb_value_info_new(const char *name, int32_t elem_type, const char *dims)
{
    return mb_must(value_info_from_text(name, elem_type, dims));
}

static Onnx__ValueInfoProto *append_value_info(Onnx__ValueInfoProto ***array, size_t *count,
                                               const char *name, int32_t elem_type,
                                               const char *dims)
{
    Onnx__ValueInfoProto *vi = mb_value_info_new(name, elem_type, dims);
    must_ok(APPEND_PTR(array, count, vi));
    return vi;
}

Onnx__ValueInfoProto *mb_graph_input(Onnx__GraphProto *g, const char *name, int32_t elem_type,
                                     const char *dims)
{
    return append_value_info(&g->input, &g->n_input, name, elem_type, dims);
}

Onnx__ValueInfoProto *mb_graph_output(Onnx__GraphProto *g, const char *name, int32_t elem_type,
                                      const char *dims)
{
    return append_value_info(&g->output, &g->n_output, name, elem_type, dims);
}

Onnx__ValueInfoProto *mb_input(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                               const char *dims)
{
    return mb_graph_input(m->graph, name, elem_type, dims);
}

Onnx__ValueInfoProto *mb_output(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                                const char *dims)
{
    return mb_graph_output(m->graph, name, elem_type, dims);
}

Onnx__ValueInfoProto *mb_value_info(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                                    const char *dims)
{
    Onnx__GraphProto *g = m->graph;
    return append_value_info(&g->value_info, &g->n_value_info, name, elem_type, dims);
}

/* ---- tensors ------------------------------------------------------------------- */

static size_t dims_count(mb_dims dims)
{
    size_t n = 1;
    for (size_t i = 0; i < dims.n; i++)
        n *= (size_t)dims.d[i];
    return n;
}

Onnx__TensorProto *mb_tensor_shell(const char *name, int32_t elem_type, mb_dims dims)
{
    return mb_must(tensor_shell_new(name, elem_type, dims.d, dims.n));
}

Onnx__TensorProto *mb_tensor(const char *name, int32_t elem_type, mb_dims dims,
                             const void *data, size_t size)
{
    Onnx__TensorProto *t = mb_tensor_shell(name, elem_type, dims);
    t->has_raw_data = 1;
    t->raw_data.len = size;
    t->raw_data.data = mb_must_malloc(size);
    if (size)
        memcpy(t->raw_data.data, data, size);
    return t;
}

Onnx__TensorProto *mb_tensor_float(const char *name, mb_dims dims, const float *values)
{
    return mb_tensor(name, MB_FLOAT, dims, values, dims_count(dims) * sizeof(float));
}

Onnx__TensorProto *mb_tensor_float_typed(const char *name, mb_dims dims, const float *values)
{
    Onnx__TensorProto *t = mb_tensor_shell(name, MB_FLOAT, dims);
    size_t n = dims_count(dims);
    t->n_float_data = n;
    t->float_data = mb_must_malloc(n * sizeof(float));
    memcpy(t->float_data, values, n * sizeof(float));
    return t;
}

Onnx__TensorProto *mb_tensor_int64(const char *name, mb_dims dims, const int64_t *values)
{
    return mb_tensor(name, MB_INT64, dims, values, dims_count(dims) * sizeof(int64_t));
}

/* IEEE half from float, for the simple values tests use (normals, zero). */
static uint16_t to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if ((x & 0x7fffffff) == 0)
        return sign;
    if (exp <= 0 || exp >= 31)
        abort(); /* not needed by the tests */
    return (uint16_t)(sign | (exp << 10) | (mant >> 13));
}

/* One element of `elem_type` holding `value`, in *width bytes. */
static void element_of(int32_t elem_type, double value, unsigned char *out, size_t *width)
{
    float f = (float)value;
    uint16_t h;
    int64_t i = (int64_t)value;
    switch (elem_type) {
    case MB_FLOAT: memcpy(out, &f, *width = sizeof f); break;
    case MB_DOUBLE: memcpy(out, &value, *width = sizeof value); break;
    case MB_FLOAT16: h = to_half(f), memcpy(out, &h, *width = sizeof h); break;
    case MB_INT64: memcpy(out, &i, *width = sizeof i); break;
    default: abort(); /* not needed by the tests */
    }
}

Onnx__TensorProto *mb_tensor_filled(const char *name, int32_t elem_type, mb_dims dims,
                                    double value)
{
    unsigned char elem[8];
    size_t width, n = dims_count(dims);
    element_of(elem_type, value, elem, &width);
    unsigned char *data = mb_must_malloc(n * width);
    for (size_t i = 0; i < n; i++)
        memcpy(data + i * width, elem, width);
    Onnx__TensorProto *t = mb_tensor(name, elem_type, dims, data, n * width);
    free(data);
    return t;
}

Onnx__TensorProto *mb_graph_initializer(Onnx__GraphProto *g, Onnx__TensorProto *t)
{
    must_ok(APPEND_PTR(&g->initializer, &g->n_initializer, t));
    return t;
}

Onnx__TensorProto *mb_initializer(Onnx__ModelProto *m, Onnx__TensorProto *t)
{
    return mb_graph_initializer(m->graph, t);
}

Onnx__TensorProto *mb_initializer_float(Onnx__ModelProto *m, const char *name, mb_dims dims,
                                        const float *values)
{
    return mb_initializer(m, mb_tensor_float(name, dims, values));
}

Onnx__TensorProto *mb_initializer_filled(Onnx__ModelProto *m, const char *name,
                                         int32_t elem_type, mb_dims dims, double value)
{
    return mb_initializer(m, mb_tensor_filled(name, elem_type, dims, value));
}

Onnx__TensorProto *mb_initializer_int64(Onnx__ModelProto *m, const char *name, mb_dims dims,
                                        const int64_t *values)
{
    return mb_initializer(m, mb_tensor_int64(name, dims, values));
}

/* ---- nodes and attributes -------------------------------------------------------- */

Onnx__NodeProto *mb_graph_node(Onnx__GraphProto *g, const char *op, const char *name,
                               const char *inputs, const char *outputs)
{
    Onnx__NodeProto *n = mb_must(node_new(op, name));
    must_ok(append_list(&n->input, &n->n_input, inputs) &&
            append_list(&n->output, &n->n_output, outputs) &&
            APPEND_PTR(&g->node, &g->n_node, n));
    return n;
}

Onnx__NodeProto *mb_node(Onnx__ModelProto *m, const char *op, const char *name,
                         const char *inputs, const char *outputs)
{
    return mb_graph_node(m->graph, op, name, inputs, outputs);
}

/* The attribute just appended to n. */
static Onnx__AttributeProto *last_attr(const Onnx__NodeProto *n, bool added)
{
    must_ok(added);
    return n->attribute[n->n_attribute - 1];
}

Onnx__AttributeProto *mb_attr(Onnx__NodeProto *n, const char *name,
                              Onnx__AttributeProto__AttributeType type)
{
    return mb_must(node_add_attr(n, name, type));
}

Onnx__AttributeProto *mb_attr_int(Onnx__NodeProto *n, const char *name, int64_t value)
{
    return last_attr(n, node_add_int_attr(n, name, value));
}

Onnx__AttributeProto *mb_attr_float(Onnx__NodeProto *n, const char *name, float value)
{
    return last_attr(n, node_add_float_attr(n, name, value));
}

Onnx__AttributeProto *mb_attr_ints(Onnx__NodeProto *n, const char *name, size_t count,
                                   const int64_t *values)
{
    return last_attr(n, node_add_ints_attr(n, name, values, count));
}

Onnx__AttributeProto *mb_attr_string(Onnx__NodeProto *n, const char *name, const char *value)
{
    return last_attr(n, node_add_string_attr(n, name, value));
}

Onnx__AttributeProto *mb_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
    return last_attr(n, node_add_tensor_attr(n, name, t));
}

Onnx__GraphProto *mb_attr_graph_take(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    must_ok(node_add_graph_attr(n, name, g));
    return g;
}

Onnx__GraphProto *mb_attr_graph(Onnx__NodeProto *n, const char *name, const char *graph_name)
{
    return mb_attr_graph_take(n, name, mb_graph_new(graph_name));
}

Onnx__NodeProto *mb_constant(Onnx__ModelProto *m, const char *name, const char *output,
                             Onnx__TensorProto *t)
{
    Onnx__NodeProto *n = mb_node(m, "Constant", name, "", output);
    must_ok(set_string(&t->name, ""));
    mb_attr_tensor(n, "value", t);
    return n;
}

Onnx__NodeProto *mb_recurrent(Onnx__ModelProto *m, const char *op, const char *name,
                              int64_t hidden_size, const char *direction, const char *inputs,
                              const char *outputs)
{
    Onnx__NodeProto *n = mb_node(m, op, name, inputs, outputs);
    if (hidden_size > 0)
        mb_attr_int(n, "hidden_size", hidden_size);
    if (direction)
        mb_attr_string(n, "direction", direction);
    return n;
}

void mb_weights(Onnx__ModelProto *m, int32_t elem_type, const char *w, const char *r,
                int64_t directions, int64_t gates, int64_t hidden, int64_t input_size,
                double fill)
{
    mb_initializer_filled(m, w, elem_type, MB_DIMS(directions, gates * hidden, input_size), fill);
    mb_initializer_filled(m, r, elem_type, MB_DIMS(directions, gates * hidden, hidden), fill);
}

Onnx__GraphProto *mb_identity_branch(Onnx__NodeProto *if_node, const char *attr,
                                     const char *graph_name, const char *node_name,
                                     const char *input, const char *output)
{
    Onnx__GraphProto *g = mb_attr_graph(if_node, attr, graph_name);
    mb_graph_node(g, "Identity", node_name, input, output);
    mb_graph_output(g, output, MB_FLOAT, NULL);
    return g;
}

Onnx__ModelProto *mb_small_model(const char *op, const char *name)
{
    int64_t gates = !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,batch,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, gates, 4, 3, 0.1);
    mb_recurrent(m, op, name, 4, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,batch,4");
    return m;
}

/* ---- unknown fields and bytes ------------------------------------------------------ */

void mb_add_unknown_varint(ProtobufCMessage *msg, uint32_t field, uint64_t value)
{
    ProtobufCMessageUnknownField *grown =
        realloc(msg->unknown_fields, (msg->n_unknown_fields + 1) * sizeof *grown);
    mb_must(grown);
    msg->unknown_fields = grown;
    ProtobufCMessageUnknownField *u = &grown[msg->n_unknown_fields++];
    u->tag = field;
    u->wire_type = PROTOBUF_C_WIRE_TYPE_VARINT;
    u->data = mb_must_malloc(10);
    u->len = 0;
    do {
        uint8_t b = value & 0x7f;
        value >>= 7;
        u->data[u->len++] = (uint8_t)(b | (value ? 0x80 : 0));
    } while (value);
}

const ProtobufCMessageUnknownField *mb_find_unknown(const ProtobufCMessage *msg, uint32_t field)
{
    for (size_t i = 0; i < msg->n_unknown_fields; i++)
        if (msg->unknown_fields[i].tag == field)
            return &msg->unknown_fields[i];
    return NULL;
}

unsigned char *mb_pack(const Onnx__ModelProto *m, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(m);
    unsigned char *buf = mb_must_malloc(*size);
    if (onnx__model_proto__pack(m, buf) != *size)
        abort(); /* protobuf-c disagrees with itself */
    return buf;
}

rnnstate_model *mb_load(Onnx__ModelProto *m, rnnstate_error *err)
{
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    rnnstate_model *model = NULL;
    if (rnnstate_model_load_memory(bytes, size, NULL, NULL, &model, err) != RNNSTATE_OK)
        model = NULL;
    free(bytes);
    return model;
}

Onnx__TensorProto *mb_external_tensor(const char *name, const char *location)
{
    const float values[2] = { 1, 2 };
    Onnx__TensorProto *t = mb_tensor_float(name, MB_DIMS(2), values);
    free(t->raw_data.data);
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    t->has_raw_data = 0;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto *e = mb_must_malloc(sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = mb_must(strdup("location"));
    e->value = mb_must(strdup(location));
    t->external_data = mb_must_malloc(sizeof *t->external_data);
    t->external_data[0] = e;
    t->n_external_data = 1;
    return t;
}
