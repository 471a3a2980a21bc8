/* model_builder's running and inspecting half (the cmocka side): rewriting
 * a built model through the public API and reading the result back. */
#include "model_builder.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

/* ---- running ------------------------------------------------------------- */

void mb_rewrite_bytes(const unsigned char *bytes, size_t size, const rnnstate_options *options,
                      mb_run *run)
{
    memset(run, 0, sizeof *run);
    run->in = mb_must_malloc(size);
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

void mb_assert_unchanged(const mb_run *run)
{
    assert_false(run->report->changed);
    assert_int_equal(run->out_size, run->in_size);
    assert_memory_equal(run->out, run->in, run->in_size);
}

static unsigned char *pack_graph(const Onnx__GraphProto *g, size_t *size)
{
    *size = onnx__graph_proto__get_packed_size(g);
    unsigned char *bytes = mb_must_malloc(*size ? *size : 1);
    onnx__graph_proto__pack(g, bytes);
    return bytes;
}

void mb_assert_annotated(const mb_run *run, const char *state_json, const char *time_json)
{
    assert_false(run->report->changed);
    assert_true(run->report->annotated);
    Onnx__ModelProto *in = onnx__model_proto__unpack(NULL, run->in_size, run->in);
    assert_non_null(in);
    size_t in_size, out_size;
    unsigned char *in_graph = pack_graph(in->graph, &in_size);
    unsigned char *out_graph = pack_graph(run->g, &out_size);
    bool same = in_size == out_size && !memcmp(in_graph, out_graph, in_size) &&
                in->ir_version == run->model->ir_version;
    free(in_graph);
    free(out_graph);
    onnx__model_proto__free_unpacked(in, NULL);
    assert_true(same);
    /* the pairs, the time axes and the stream verdict */
    assert_int_equal(run->model->n_metadata_props, 3);
    assert_string_equal(run->model->metadata_props[0]->key, RNNSTATE_METADATA_KEY);
    assert_string_equal(run->model->metadata_props[0]->value, state_json);
    assert_string_equal(run->model->metadata_props[1]->key, RNNSTATE_TIME_METADATA_KEY);
    assert_string_equal(run->model->metadata_props[1]->value, time_json);
}

/* ---- files ----------------------------------------------------------------- */

char *mb_temp_dir(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *dir = mb_must_malloc(strlen(base) + 32);
    sprintf(dir, "%s/rnnstate-unit-XXXXXX", base);
    assert_non_null(mkdtemp(dir));
    return dir;
}

char *mb_path_in(const char *dir, const char *name)
{
    char *p = mb_must_malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

unsigned char *mb_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *buf = mb_must_malloc(1 << 20);
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
    unsigned char *out = mb_must_malloc(n * width);
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

const char *mb_pairs_str(const rnnstate_report *r)
{
    char *b = ring_next();
    for (size_t i = 0; i < r->n_pairs; i++) {
        const rnnstate_state_pair *p = &r->pairs[i];
        ring_add(b, "%s%s->%s:%s:%s:%d", i ? "," : "", p->input, p->output,
                 mb_pair_shape_str(p), p->dtype, p->batch_axis);
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
