#include "array.h"
#include "onnx_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dim_info_clear(dim_info *d)
{
    free(d->param);
    d->param = NULL;
    d->known = false;
    d->value = 0;
}

bool set_string(char **field, const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        return false;
    free(*field);
    *field = copy;
    return true;
}

bool append_ptr(void ***array, size_t *count, void *item)
{
    void **grown = array_grow(*array, *count, sizeof(void *));
    if (!grown)
        return false;
    grown[*count] = item;
    *array = grown;
    (*count)++;
    return true;
}

bool append_string(char ***array, size_t *count, const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        return false;
    if (!APPEND_PTR(array, count, copy)) {
        free(copy);
        return false;
    }
    return true;
}

bool append_list(char ***array, size_t *count, const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        char *item = strndup(p, len);
        if (!item || !APPEND_PTR(array, count, item)) {
            free(item);
            return false;
        }
        if (!p[len])
            break;
        p += len + 1;
        if (!*p) /* a trailing comma names one more, empty, slot */
            return append_string(array, count, "");
    }
    return true;
}

Onnx__GraphProto *graph_new(const char *name)
{
    Onnx__GraphProto *g = malloc(sizeof *g);
    if (!g)
        return NULL;
    onnx__graph_proto__init(g);
    if (name && !set_string(&g->name, name)) {
        free(g);
        return NULL;
    }
    return g;
}

Onnx__ModelProto *model_new(int64_t ir_version, int64_t opset, const char *producer,
                            const char *graph_name)
{
    Onnx__ModelProto *m = malloc(sizeof *m);
    Onnx__OperatorSetIdProto *op = malloc(sizeof *op);
    if (m)
        onnx__model_proto__init(m);
    if (op)
        onnx__operator_set_id_proto__init(op);
    bool ok = m && op && set_string(&op->domain, "");
    if (ok) {
        op->has_version = 1;
        op->version = opset;
        ok = APPEND_PTR(&m->opset_import, &m->n_opset_import, op);
        op = ok ? NULL : op;
    }
    if (op)
        protobuf_c_message_free_unpacked(&op->base, NULL);
    ok = ok && set_string(&m->producer_name, producer) && (m->graph = graph_new(graph_name));
    if (!ok) {
        if (m)
            protobuf_c_message_free_unpacked(&m->base, NULL);
        return NULL;
    }
    m->has_ir_version = 1;
    m->ir_version = ir_version;
    return m;
}

static bool set_slot(char ***array, size_t *count, size_t slot, const char *name)
{
    while (*count <= slot)
        if (!append_string(array, count, ""))
            return false;
    return set_string(&(*array)[slot], name);
}

bool node_set_input(Onnx__NodeProto *node, size_t slot, const char *name)
{
    return set_slot(&node->input, &node->n_input, slot, name);
}

bool node_set_output(Onnx__NodeProto *node, size_t slot, const char *name)
{
    return set_slot(&node->output, &node->n_output, slot, name);
}

const char *node_input(const Onnx__NodeProto *node, size_t slot)
{
    return slot < node->n_input ? str_or_empty(node->input[slot]) : "";
}

const char *node_output(const Onnx__NodeProto *node, size_t slot)
{
    return slot < node->n_output ? str_or_empty(node->output[slot]) : "";
}

Onnx__NodeProto *node_new(const char *op_type, const char *name)
{
    Onnx__NodeProto *node = malloc(sizeof *node);
    if (!node)
        return NULL;
    onnx__node_proto__init(node);
    if ((op_type && !set_string(&node->op_type, op_type)) ||
        (name && !set_string(&node->name, name))) {
        protobuf_c_message_free_unpacked(&node->base, NULL);
        return NULL;
    }
    return node;
}

Onnx__AttributeProto *node_add_attr(Onnx__NodeProto *node, const char *name,
                                    Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *attr = malloc(sizeof *attr);
    if (!attr)
        return NULL;
    onnx__attribute_proto__init(attr);
    attr->has_type = 1;
    attr->type = type;
    if (!set_string(&attr->name, name) || !APPEND_PTR(&node->attribute, &node->n_attribute, attr)) {
        protobuf_c_message_free_unpacked(&attr->base, NULL);
        return NULL;
    }
    return attr;
}

bool node_add_int_attr(Onnx__NodeProto *node, const char *name, int64_t value)
{
    Onnx__AttributeProto *attr = node_add_attr(node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (attr) {
        attr->has_i = 1;
        attr->i = value;
    }
    return attr != NULL;
}

bool node_add_float_attr(Onnx__NodeProto *node, const char *name, float value)
{
    Onnx__AttributeProto *attr =
        node_add_attr(node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (attr) {
        attr->has_f = 1;
        attr->f = value;
    }
    return attr != NULL;
}

bool node_add_ints_attr(Onnx__NodeProto *node, const char *name, const int64_t *values,
                        size_t n)
{
    int64_t *copy = malloc((n ? n : 1) * sizeof *copy);
    Onnx__AttributeProto *attr =
        copy ? node_add_attr(node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) : NULL;
    if (!attr) {
        free(copy);
        return false;
    }
    if (n)
        memcpy(copy, values, n * sizeof *copy);
    attr->ints = copy;
    attr->n_ints = n;
    return true;
}

bool node_add_string_attr(Onnx__NodeProto *node, const char *name, const char *value)
{
    size_t len = strlen(value);
    uint8_t *copy = malloc(len ? len : 1);
    Onnx__AttributeProto *attr =
        copy ? node_add_attr(node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) : NULL;
    if (!attr) {
        free(copy);
        return false;
    }
    memcpy(copy, value, len);
    attr->has_s = 1;
    attr->s = (ProtobufCBinaryData){ len, copy };
    return true;
}

bool node_add_tensor_attr(Onnx__NodeProto *node, const char *name, Onnx__TensorProto *t)
{
    Onnx__AttributeProto *attr =
        node_add_attr(node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (!attr) {
        protobuf_c_message_free_unpacked(&t->base, NULL);
        return false;
    }
    attr->t = t;
    return true;
}

bool node_add_graph_attr(Onnx__NodeProto *node, const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *attr =
        node_add_attr(node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    if (!attr) {
        protobuf_c_message_free_unpacked(&g->base, NULL);
        return false;
    }
    attr->g = g;
    return true;
}

const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *node, const char *name)
{
    for (size_t i = 0; i < node->n_attribute; i++)
        if (strcmp(str_or_empty(node->attribute[i]->name), name) == 0)
            return node->attribute[i];
    return NULL;
}

int64_t node_attr_int(const Onnx__NodeProto *node, const char *name, int64_t fallback)
{
    const Onnx__AttributeProto *a = node_attr(node, name);
    if (!a || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) || !a->has_i)
        return fallback;
    return a->i;
}

const char *node_attr_string(const Onnx__NodeProto *node, const char *name, char *buf,
                             size_t bufsize)
{
    const Onnx__AttributeProto *a = node_attr(node, name);
    if (!a || !a->has_s || bufsize == 0)
        return NULL;
    size_t n = a->s.len < bufsize - 1 ? a->s.len : bufsize - 1;
    memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    return buf;
}

static Onnx__TensorShapeProto__Dimension *dimension_new(const dim_info *d)
{
    Onnx__TensorShapeProto__Dimension *dim = malloc(sizeof *dim);
    if (!dim)
        return NULL;
    onnx__tensor_shape_proto__dimension__init(dim);
    if (d->param) {
        dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        dim->dim_param = strdup(d->param);
        if (!dim->dim_param) {
            free(dim);
            return NULL;
        }
    } else if (d->known) {
        dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dim->dim_value = d->value;
    }
    return dim;
}

static Onnx__TypeProto *tensor_type_new(int32_t elem_type, const dim_info *dims, size_t rank)
{
    Onnx__TypeProto *type = malloc(sizeof *type);
    Onnx__TypeProto__Tensor *tensor = malloc(sizeof *tensor);
    Onnx__TensorShapeProto *shape = malloc(sizeof *shape);
    if (!type || !tensor || !shape) {
        free(type);
        free(tensor);
        free(shape);
        return NULL;
    }
    onnx__type_proto__init(type);
    onnx__type_proto__tensor__init(tensor);
    onnx__tensor_shape_proto__init(shape);
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type->tensor_type = tensor;
    tensor->has_elem_type = 1;
    tensor->elem_type = elem_type;
    tensor->shape = shape;
    for (size_t i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *dim = dimension_new(&dims[i]);
        if (!dim || !APPEND_PTR(&shape->dim, &shape->n_dim, dim)) {
            if (dim)
                protobuf_c_message_free_unpacked(&dim->base, NULL);
            protobuf_c_message_free_unpacked(&type->base, NULL);
            return NULL;
        }
    }
    return type;
}

Onnx__ValueInfoProto *value_info_new(const char *name, int32_t elem_type, const dim_info *dims,
                                     size_t rank)
{
    Onnx__ValueInfoProto *vi = malloc(sizeof *vi);
    if (!vi)
        return NULL;
    onnx__value_info_proto__init(vi);
    vi->type = tensor_type_new(elem_type, dims, rank);
    if (!vi->type || !set_string(&vi->name, name)) {
        protobuf_c_message_free_unpacked(&vi->base, NULL);
        return NULL;
    }
    return vi;
}

const Onnx__TensorShapeProto *value_info_shape(const Onnx__ValueInfoProto *vi)
{
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return NULL;
    return vi->type->tensor_type->shape;
}

int32_t value_info_elem_type(const Onnx__ValueInfoProto *vi)
{
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->has_elem_type)
        return 0;
    return vi->type->tensor_type->elem_type;
}

void dim_from_proto(const Onnx__TensorShapeProto__Dimension *d, dim_info *out)
{
    dim_info_clear(out);
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
        out->known = true;
        out->value = d->dim_value;
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               d->dim_param && d->dim_param[0]) {
        out->param = strdup(d->dim_param);
        out->known = out->param != NULL;
    }
}

/* One dimension of a shape written as text (see value_info_from_text). */
static bool dim_from_text(const char *word, size_t len, dim_info *d)
{
    char *copy = strndup(word, len), *end;
    if (!copy)
        return false;
    long long v = strtoll(copy, &end, 10);
    *d = (dim_info){ 0 };
    if (*copy && !*end)
        *d = (dim_info){ .known = true, .value = v };
    else if (strcmp(copy, "?") != 0)
        *d = (dim_info){ .known = true, .param = copy };
    if (!d->param)
        free(copy);
    return true;
}

static void dims_free(dim_info *dims, size_t rank)
{
    for (size_t i = 0; i < rank; i++)
        dim_info_clear(&dims[i]);
    free(dims);
}

/* Parses "T,batch,3" into a new array of dims; false when out of memory. */
static bool dims_from_text(const char *text, dim_info **dims, size_t *rank)
{
    size_t n = *text ? 1 : 0;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    *rank = 0;
    *dims = calloc(n ? n : 1, sizeof **dims);
    for (const char *p = text; *dims && *rank < n; (*rank)++) {
        size_t len = strcspn(p, ",");
        if (!dim_from_text(p, len, &(*dims)[*rank])) {
            dims_free(*dims, *rank);
            *dims = NULL;
            break;
        }
        p += len + (p[len] == ',');
    }
    return *dims != NULL;
}

Onnx__ValueInfoProto *value_info_from_text(const char *name, int32_t elem_type, const char *dims)
{
    dim_info *parsed = NULL;
    size_t rank = 0;
    if (dims && !dims_from_text(dims, &parsed, &rank))
        return NULL;
    Onnx__ValueInfoProto *vi = value_info_new(name ? name : "", elem_type, parsed, rank);
    dims_free(parsed, rank);
    if (!vi)
        return NULL;
    if (!name) {
        free(vi->name);
        vi->name = NULL;
    }
    Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    if (elem_type < 0) {
        protobuf_c_message_free_unpacked(&vi->type->base, NULL);
        vi->type = NULL;
    } else if (!dims) {
        protobuf_c_message_free_unpacked(&tt->shape->base, NULL);
        tt->shape = NULL;
    }
    return vi;
}

Onnx__ValueInfoProto *value_info_copy(const Onnx__ValueInfoProto *src, const char *name)
{
    Onnx__ValueInfoProto *vi = malloc(sizeof *vi);
    if (!vi)
        return NULL;
    onnx__value_info_proto__init(vi);
    /* a deep copy through the wire format keeps every field of the type */
    size_t size = src->type ? onnx__type_proto__get_packed_size(src->type) : 0;
    unsigned char *buf = malloc(size ? size : 1);
    if (buf && src->type) {
        onnx__type_proto__pack(src->type, buf);
        vi->type = onnx__type_proto__unpack(NULL, size, buf);
    }
    free(buf);
    if ((src->type && !vi->type) || !set_string(&vi->name, name)) {
        protobuf_c_message_free_unpacked(&vi->base, NULL);
        return NULL;
    }
    return vi;
}

Onnx__TensorProto *tensor_shell_new(const char *name, int32_t elem_type, const int64_t *dims,
                                    size_t rank)
{
    Onnx__TensorProto *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    onnx__tensor_proto__init(t);
    t->has_data_type = 1;
    t->data_type = elem_type;
    t->dims = malloc((rank ? rank : 1) * sizeof *t->dims);
    if (!t->dims || (name && !set_string(&t->name, name))) {
        protobuf_c_message_free_unpacked(&t->base, NULL);
        return NULL;
    }
    t->n_dims = rank;
    if (rank)
        memcpy(t->dims, dims, rank * sizeof *t->dims);
    return t;
}

Onnx__StringStringEntryProto *string_entry_new(const char *key)
{
    Onnx__StringStringEntryProto *e = malloc(sizeof *e);
    if (!e)
        return NULL;
    onnx__string_string_entry_proto__init(e);
    if (!set_string(&e->key, key)) {
        free(e);
        return NULL;
    }
    return e;
}
