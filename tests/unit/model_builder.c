#include "model_builder.h"

#include <stdarg.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- small utilities ----------------------------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "model_builder: out of memory\n");
        abort();
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = xmalloc(n);
    memcpy(c, s, n);
    return c;
}

static void append(void ***array, size_t *count, void *item)
{
    void **grown = realloc(*array, (*count + 1) * sizeof *grown);
    if (!grown)
        abort();
    grown[(*count)++] = item;
    *array = grown;
}
#define APPEND(arr, cnt, item) append((void ***)(arr), (cnt), (item))

/* Splits "a,,b" into malloc'd strings appended to a repeated string field;
 * "" appends nothing. */
static void append_list(char ***array, size_t *count, const char *list)
{
    if (!list || !*list)
        return;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item = xmalloc(len + 1);
        memcpy(item, p, len);
        item[len] = '\0';
        APPEND(array, count, item);
        if (!comma)
            break;
        p = comma + 1;
    }
}

#define RING 16
#define RING_SIZE 4096
static char ring[RING][RING_SIZE];
static int ring_at;

static char *ring_next(void)
{
    char *b = ring[ring_at];
    ring_at = (ring_at + 1) % RING;
    b[0] = '\0';
    return b;
}

static void ring_add(char *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ring_add(char *b, const char *fmt, ...)
{
    size_t used = strlen(b);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + used, RING_SIZE - used, fmt, ap);
    va_end(ap);
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

/* ---- building ------------------------------------------------------------ */

Onnx__ModelProto *mb_new(int64_t ir_version, int64_t opset)
{
    Onnx__ModelProto *m = xmalloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = ir_version;
    m->producer_name = xstrdup("model_builder");
    Onnx__OperatorSetIdProto *op = xmalloc(sizeof *op);
    onnx__operator_set_id_proto__init(op);
    op->domain = xstrdup("");
    op->has_version = 1;
    op->version = opset;
    APPEND(&m->opset_import, &m->n_opset_import, op);
    m->graph = xmalloc(sizeof *m->graph);
    onnx__graph_proto__init(m->graph);
    m->graph->name = xstrdup("g");
    return m;
}

void mb_free(Onnx__ModelProto *m)
{
    if (m)
        protobuf_c_message_free_unpacked(&m->base, NULL);
}

Onnx__ValueInfoProto *mb_value_info_new(const char *name, int32_t elem_type, const char *dims)
{
    Onnx__ValueInfoProto *vi = xmalloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = xstrdup(name);
    Onnx__TypeProto *type = xmalloc(sizeof *type);
    onnx__type_proto__init(type);
    Onnx__TypeProto__Tensor *tt = xmalloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    vi->type = type;
    if (!dims)
        return vi;
    Onnx__TensorShapeProto *shape = xmalloc(sizeof *shape);
    onnx__tensor_shape_proto__init(shape);
    tt->shape = shape;
    char **parts = NULL;
    size_t n = 0;
    append_list(&parts, &n, dims);
    for (size_t i = 0; i < n; i++) {
        Onnx__TensorShapeProto__Dimension *d = xmalloc(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        char *end;
        long long v = strtoll(parts[i], &end, 10);
        if (!strcmp(parts[i], "?")) {
            /* neither value nor param */
        } else if (*parts[i] && !*end) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = v;
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = xstrdup(parts[i]);
        }
        APPEND(&shape->dim, &shape->n_dim, d);
        free(parts[i]);
    }
    free(parts);
    return vi;
}

Onnx__ValueInfoProto *mb_input(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                               const char *dims)
{
    Onnx__ValueInfoProto *vi = mb_value_info_new(name, elem_type, dims);
    APPEND(&m->graph->input, &m->graph->n_input, vi);
    return vi;
}

Onnx__ValueInfoProto *mb_output(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                                const char *dims)
{
    Onnx__ValueInfoProto *vi = mb_value_info_new(name, elem_type, dims);
    APPEND(&m->graph->output, &m->graph->n_output, vi);
    return vi;
}

Onnx__ValueInfoProto *mb_graph_output(Onnx__GraphProto *g, const char *name, int32_t elem_type,
                                      const char *dims)
{
    Onnx__ValueInfoProto *vi = mb_value_info_new(name, elem_type, dims);
    APPEND(&g->output, &g->n_output, vi);
    return vi;
}

Onnx__ValueInfoProto *mb_value_info(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                                    const char *dims)
{
    Onnx__ValueInfoProto *vi = mb_value_info_new(name, elem_type, dims);
    APPEND(&m->graph->value_info, &m->graph->n_value_info, vi);
    return vi;
}

static size_t dims_count(mb_dims dims)
{
    size_t n = 1;
    for (size_t i = 0; i < dims.n; i++)
        n *= (size_t)dims.d[i];
    return n;
}

static Onnx__TensorProto *tensor_shell(const char *name, int32_t elem_type, mb_dims dims)
{
    Onnx__TensorProto *t = xmalloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = xstrdup(name);
    t->has_data_type = 1;
    t->data_type = elem_type;
    t->n_dims = dims.n;
    t->dims = xmalloc(dims.n * sizeof *t->dims);
    memcpy(t->dims, dims.d, dims.n * sizeof *t->dims);
    return t;
}

Onnx__TensorProto *mb_tensor(const char *name, int32_t elem_type, mb_dims dims,
                             const void *data, size_t size)
{
    Onnx__TensorProto *t = tensor_shell(name, elem_type, dims);
    t->has_raw_data = 1;
    t->raw_data.len = size;
    t->raw_data.data = xmalloc(size);
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
    Onnx__TensorProto *t = tensor_shell(name, MB_FLOAT, dims);
    size_t n = dims_count(dims);
    t->n_float_data = n;
    t->float_data = xmalloc(n * sizeof(float));
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

Onnx__TensorProto *mb_tensor_filled(const char *name, int32_t elem_type, mb_dims dims,
                                    double value)
{
    size_t n = dims_count(dims);
    if (elem_type == MB_FLOAT) {
        float *v = xmalloc(n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = (float)value;
        Onnx__TensorProto *t = mb_tensor(name, elem_type, dims, v, n * sizeof *v);
        free(v);
        return t;
    }
    if (elem_type == MB_DOUBLE) {
        double *v = xmalloc(n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = value;
        Onnx__TensorProto *t = mb_tensor(name, elem_type, dims, v, n * sizeof *v);
        free(v);
        return t;
    }
    if (elem_type == MB_FLOAT16) {
        uint16_t *v = xmalloc(n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = to_half((float)value);
        Onnx__TensorProto *t = mb_tensor(name, elem_type, dims, v, n * sizeof *v);
        free(v);
        return t;
    }
    if (elem_type == MB_INT64) {
        int64_t *v = xmalloc(n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = (int64_t)value;
        Onnx__TensorProto *t = mb_tensor(name, elem_type, dims, v, n * sizeof *v);
        free(v);
        return t;
    }
    abort();
}

Onnx__TensorProto *mb_initializer(Onnx__ModelProto *m, Onnx__TensorProto *t)
{
    APPEND(&m->graph->initializer, &m->graph->n_initializer, t);
    return t;
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

Onnx__NodeProto *mb_graph_node(Onnx__GraphProto *g, const char *op, const char *name,
                               const char *inputs, const char *outputs)
{
    Onnx__NodeProto *n = xmalloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = xstrdup(op);
    if (name)
        n->name = xstrdup(name);
    append_list(&n->input, &n->n_input, inputs);
    append_list(&n->output, &n->n_output, outputs);
    APPEND(&g->node, &g->n_node, n);
    return n;
}

Onnx__NodeProto *mb_node(Onnx__ModelProto *m, const char *op, const char *name,
                         const char *inputs, const char *outputs)
{
    return mb_graph_node(m->graph, op, name, inputs, outputs);
}

static Onnx__AttributeProto *attr_new(Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = xmalloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xstrdup(name);
    a->has_type = 1;
    a->type = type;
    APPEND(&n->attribute, &n->n_attribute, a);
    return a;
}

Onnx__AttributeProto *mb_attr_int(Onnx__NodeProto *n, const char *name, int64_t value)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = value;
    return a;
}

Onnx__AttributeProto *mb_attr_float(Onnx__NodeProto *n, const char *name, float value)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = value;
    return a;
}

Onnx__AttributeProto *mb_attr_ints(Onnx__NodeProto *n, const char *name, size_t count,
                                   const int64_t *values)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = count;
    a->ints = xmalloc(count * sizeof *a->ints);
    memcpy(a->ints, values, count * sizeof *a->ints);
    return a;
}

Onnx__AttributeProto *mb_attr_string(Onnx__NodeProto *n, const char *name, const char *value)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(value);
    a->s.data = xmalloc(a->s.len);
    memcpy(a->s.data, value, a->s.len);
    return a;
}

Onnx__AttributeProto *mb_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
    return a;
}

Onnx__GraphProto *mb_attr_graph(Onnx__NodeProto *n, const char *name, const char *graph_name)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = xmalloc(sizeof *a->g);
    onnx__graph_proto__init(a->g);
    a->g->name = xstrdup(graph_name);
    return a->g;
}

Onnx__NodeProto *mb_constant(Onnx__ModelProto *m, const char *name, const char *output,
                             Onnx__TensorProto *t)
{
    Onnx__NodeProto *n = mb_node(m, "Constant", name, "", output);
    free(t->name);
    t->name = xstrdup("");
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

void mb_add_unknown_varint(ProtobufCMessage *msg, uint32_t field, uint64_t value)
{
    ProtobufCMessageUnknownField *grown =
        realloc(msg->unknown_fields, (msg->n_unknown_fields + 1) * sizeof *grown);
    if (!grown)
        abort();
    msg->unknown_fields = grown;
    ProtobufCMessageUnknownField *u = &grown[msg->n_unknown_fields++];
    u->tag = field;
    u->wire_type = PROTOBUF_C_WIRE_TYPE_VARINT;
    u->data = xmalloc(10);
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
    unsigned char *buf = xmalloc(*size);
    size_t put = onnx__model_proto__pack(m, buf);
    assert_int_equal(put, *size);
    return buf;
}

/* ---- running ------------------------------------------------------------- */

void mb_rewrite_bytes(const unsigned char *bytes, size_t size, const rnnstate_options *options,
                      mb_run *run)
{
    memset(run, 0, sizeof *run);
    run->in = xmalloc(size);
    memcpy(run->in, bytes, size);
    run->in_size = size;
    rnnstate_error err = { 0 };
    rnnstate_model *model = NULL;
    if (rnnstate_model_load_memory(run->in, size, "test.onnx", NULL, &model, &err) != RNNSTATE_OK)
        fail_msg("load: %s", err.message);
    if (rnnstate_rewrite(model, options, &run->report, &err) != RNNSTATE_OK) {
        rnnstate_model_free(model);
        fail_msg("rewrite: %s", err.message);
    }
    if (rnnstate_model_save_memory(model, &run->out, &run->out_size, &err) != RNNSTATE_OK) {
        rnnstate_model_free(model);
        fail_msg("save: %s", err.message);
    }
    rnnstate_model_free(model);
    run->model = onnx__model_proto__unpack(NULL, run->out_size, run->out);
    assert_non_null(run->model);
    assert_non_null(run->model->graph);
    run->g = run->model->graph;
    if (getenv("MB_PRINT"))
        mb_print_graph(stderr, run->g);
}

void mb_rewrite(Onnx__ModelProto *m, const rnnstate_options *options, mb_run *run)
{
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    mb_rewrite_bytes(bytes, size, options, run);
    free(bytes);
}

void mb_run_free(mb_run *run)
{
    free(run->in);
    rnnstate_buffer_free(run->out);
    if (run->model)
        onnx__model_proto__free_unpacked(run->model, NULL);
    rnnstate_report_free(run->report);
    memset(run, 0, sizeof *run);
}

void mb_assert_saves_as(const rnnstate_model *model, const unsigned char *bytes, size_t size)
{
    unsigned char *out;
    size_t out_size;
    rnnstate_error err;
    if (rnnstate_model_save_memory(model, &out, &out_size, &err) != RNNSTATE_OK)
        fail_msg("save: %s", err.message);
    assert_int_equal(out_size, size);
    assert_memory_equal(out, bytes, size);
    rnnstate_buffer_free(out);
}

/* ---- files ----------------------------------------------------------------- */

char *mb_temp_dir(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *dir = xmalloc(strlen(base) + 32);
    sprintf(dir, "%s/rnnstate-unit-XXXXXX", base);
    assert_non_null(mkdtemp(dir));
    return dir;
}

char *mb_path_in(const char *dir, const char *name)
{
    char *p = xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

unsigned char *mb_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *buf = xmalloc(1 << 20);
    *size = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

void mb_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

/* ---- inspecting ---------------------------------------------------------- */

static Onnx__ValueInfoProto *find_vi(Onnx__ValueInfoProto **vis, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(nz(vis[i]->name), name))
            return vis[i];
    return NULL;
}

Onnx__ValueInfoProto *mb_find_input(const Onnx__GraphProto *g, const char *name)
{
    return find_vi(g->input, g->n_input, name);
}

Onnx__ValueInfoProto *mb_find_output(const Onnx__GraphProto *g, const char *name)
{
    return find_vi(g->output, g->n_output, name);
}

Onnx__ValueInfoProto *mb_find_value_info(const Onnx__GraphProto *g, const char *name)
{
    return find_vi(g->value_info, g->n_value_info, name);
}

Onnx__TensorProto *mb_find_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!strcmp(nz(g->initializer[i]->name), name))
            return g->initializer[i];
    return NULL;
}

Onnx__NodeProto *mb_find_node(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (!strcmp(nz(g->node[i]->name), name))
            return g->node[i];
    return NULL;
}

Onnx__NodeProto *mb_producer(const Onnx__GraphProto *g, const char *value)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t o = 0; o < g->node[i]->n_output; o++)
            if (*value && !strcmp(nz(g->node[i]->output[o]), value))
                return g->node[i];
    return NULL;
}

int mb_node_index(const Onnx__GraphProto *g, const Onnx__NodeProto *node)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i] == node)
            return (int)i;
    return -1;
}

size_t mb_count_readers(const Onnx__GraphProto *g, const char *value)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            n += !strcmp(nz(g->node[i]->input[k]), value);
    return n;
}

size_t mb_count_op(const Onnx__GraphProto *g, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_node; i++)
        n += !strcmp(nz(g->node[i]->op_type), op);
    return n;
}

static const char *vi_names(Onnx__ValueInfoProto **vis, size_t n)
{
    char *b = ring_next();
    for (size_t i = 0; i < n; i++)
        ring_add(b, "%s%s", i ? "," : "", nz(vis[i]->name));
    return b;
}

const char *mb_input_names(const Onnx__GraphProto *g)
{
    return vi_names(g->input, g->n_input);
}

const char *mb_output_names(const Onnx__GraphProto *g)
{
    return vi_names(g->output, g->n_output);
}

const char *mb_initializer_names(const Onnx__GraphProto *g)
{
    char *b = ring_next();
    for (size_t i = 0; i < g->n_initializer; i++)
        ring_add(b, "%s%s", i ? "," : "", nz(g->initializer[i]->name));
    return b;
}

const char *mb_node_ops(const Onnx__GraphProto *g)
{
    char *b = ring_next();
    for (size_t i = 0; i < g->n_node; i++)
        ring_add(b, "%s%s", i ? "," : "", nz(g->node[i]->op_type));
    return b;
}

const char *mb_node_names(const Onnx__GraphProto *g)
{
    char *b = ring_next();
    for (size_t i = 0; i < g->n_node; i++)
        ring_add(b, "%s%s", i ? "," : "", nz(g->node[i]->name));
    return b;
}

const char *mb_shape_str(const Onnx__ValueInfoProto *vi)
{
    char *b = ring_next();
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->shape) {
        ring_add(b, "<none>");
        return b;
    }
    const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
    for (size_t i = 0; i < s->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = s->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            ring_add(b, "%s%lld", i ? "," : "", (long long)d->dim_value);
        else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
            ring_add(b, "%s%s", i ? "," : "", nz(d->dim_param));
        else
            ring_add(b, "%s?", i ? "," : "");
    }
    return b;
}

int32_t mb_elem_type(const Onnx__ValueInfoProto *vi)
{
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->has_elem_type)
        return 0;
    return vi->type->tensor_type->elem_type;
}

const char *mb_dims_str(const Onnx__TensorProto *t)
{
    char *b = ring_next();
    for (size_t i = 0; t && i < t->n_dims; i++)
        ring_add(b, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    return b;
}

static const char *strings_str(char **items, size_t n)
{
    char *b = ring_next();
    for (size_t i = 0; i < n; i++)
        ring_add(b, "%s%s", i ? "," : "", nz(items[i]));
    return b;
}

const char *mb_inputs_str(const Onnx__NodeProto *n)
{
    return strings_str(n->input, n->n_input);
}

const char *mb_outputs_str(const Onnx__NodeProto *n)
{
    return strings_str(n->output, n->n_output);
}

const Onnx__AttributeProto *mb_find_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(nz(n->attribute[i]->name), name))
            return n->attribute[i];
    return NULL;
}

static size_t elem_size_of(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return 8;
    default: return 0;
    }
}

unsigned char *mb_tensor_bytes(const Onnx__TensorProto *t, size_t *count, size_t *elem_size)
{
    size_t width = elem_size_of(t->data_type), n = 1;
    for (size_t i = 0; i < t->n_dims; i++)
        n *= (size_t)t->dims[i];
    *count = n;
    *elem_size = width;
    if (!width)
        return NULL;
    unsigned char *out = xmalloc(n * width);
    if (t->has_raw_data && t->raw_data.len) {
        if (t->raw_data.len != n * width) {
            free(out);
            return NULL;
        }
        memcpy(out, t->raw_data.data, n * width);
        return out;
    }
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        if (t->n_float_data == n) {
            memcpy(out, t->float_data, n * 4);
            return out;
        }
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        if (t->n_double_data == n) {
            memcpy(out, t->double_data, n * 8);
            return out;
        }
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        if (t->n_int64_data == n) {
            memcpy(out, t->int64_data, n * 8);
            return out;
        }
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        if (t->n_int32_data == n) {
            for (size_t i = 0; i < n; i++) {
                uint16_t h = (uint16_t)t->int32_data[i];
                memcpy(out + 2 * i, &h, 2);
            }
            return out;
        }
        break;
    default: break;
    }
    free(out);
    return NULL;
}

float *mb_tensor_floats(const Onnx__TensorProto *t, size_t *count)
{
    assert_int_equal(t->data_type, MB_FLOAT);
    size_t width;
    unsigned char *b = mb_tensor_bytes(t, count, &width);
    assert_non_null(b);
    return (float *)b; /* xmalloc'd: suitably aligned */
}

int64_t *mb_tensor_int64s(const Onnx__TensorProto *t, size_t *count)
{
    assert_int_equal(t->data_type, MB_INT64);
    size_t width;
    unsigned char *b = mb_tensor_bytes(t, count, &width);
    assert_non_null(b);
    return (int64_t *)b;
}

bool mb_tensor_all_zero(const Onnx__TensorProto *t, size_t count)
{
    size_t n, width;
    unsigned char *b = mb_tensor_bytes(t, &n, &width);
    bool ok = b && n == count;
    for (size_t i = 0; ok && i < n * width; i++)
        ok = b[i] == 0;
    free(b);
    return ok;
}

const rnnstate_node_report *mb_report_node(const rnnstate_report *r, const char *name)
{
    for (size_t i = 0; i < r->n_nodes; i++)
        if (!strcmp(r->nodes[i].name, name))
            return &r->nodes[i];
    return NULL;
}

const rnnstate_state_pair *mb_report_pair(const rnnstate_report *r, const char *input)
{
    for (size_t i = 0; i < r->n_pairs; i++)
        if (!strcmp(r->pairs[i].input, input))
            return &r->pairs[i];
    return NULL;
}

const char *mb_pair_shape_str(const rnnstate_state_pair *p)
{
    char *b = ring_next();
    for (size_t i = 0; i < p->rank; i++) {
        if (p->shape[i].param)
            ring_add(b, "%s%s", i ? "," : "", p->shape[i].param);
        else
            ring_add(b, "%s%lld", i ? "," : "", (long long)p->shape[i].value);
    }
    return b;
}

const char *mb_join(size_t n, const char *const *items)
{
    char *b = ring_next();
    for (size_t i = 0; i < n; i++)
        ring_add(b, "%s%s", i ? "," : "", items[i]);
    return b;
}

bool mb_any_contains(size_t n, const char *const *items, const char *needle)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(items[i], needle))
            return true;
    return false;
}

static const char *elem_name(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return "float";
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return "float16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return "double";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return "int64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return "int32";
    default: return "?";
    }
}

static void print_vis(FILE *out, const char *what, Onnx__ValueInfoProto **vis, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %s %s: %s [%s]\n", what, nz(vis[i]->name), elem_name(mb_elem_type(vis[i])),
                mb_shape_str(vis[i]));
}

void mb_print_graph(FILE *out, const Onnx__GraphProto *g)
{
    fprintf(out, "graph %s\n", nz(g->name));
    print_vis(out, "input", g->input, g->n_input);
    print_vis(out, "output", g->output, g->n_output);
    print_vis(out, "value_info", g->value_info, g->n_value_info);
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        size_t n, width;
        unsigned char *b = mb_tensor_bytes(t, &n, &width);
        fprintf(out, "  initializer %s: %s [%s]", nz(t->name), elem_name(t->data_type),
                mb_dims_str(t));
        for (size_t k = 0; b && k < n && k < 16; k++) {
            if (t->data_type == MB_FLOAT) {
                float f;
                memcpy(&f, b + 4 * k, 4);
                fprintf(out, " %g", f);
            } else if (t->data_type == MB_INT64) {
                int64_t v;
                memcpy(&v, b + 8 * k, 8);
                fprintf(out, " %lld", (long long)v);
            } else if (t->data_type == MB_DOUBLE) {
                double v;
                memcpy(&v, b + 8 * k, 8);
                fprintf(out, " %g", v);
            }
        }
        fprintf(out, "%s\n", b && n > 16 ? " ..." : "");
        free(b);
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        fprintf(out, "  node %s '%s': (%s) -> (%s)", nz(n->op_type), nz(n->name), mb_inputs_str(n),
                mb_outputs_str(n));
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            fprintf(out, " %s", nz(at->name));
            if (at->has_i)
                fprintf(out, "=%lld", (long long)at->i);
            else if (at->has_s)
                fprintf(out, "=%.*s", (int)at->s.len, (const char *)at->s.data);
            else if (at->t)
                fprintf(out, "=tensor[%s]", mb_dims_str(at->t));
        }
        fprintf(out, "\n");
    }
}
