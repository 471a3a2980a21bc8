#include "util/array.h"
#include "model/onnx_build.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util/arena.h"

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
    arena_piece_free(*field); /* it may be a parsed string */
    *field = copy;
    return true;
}

/* A new, initialised message of type `desc` whose string field at byte offset
 * `field` holds a copy of `value` (left unset when value is NULL); NULL when
 * out of memory. Every constructor below starts here. */
static void *message_new(const ProtobufCMessageDescriptor *desc, size_t field, const char *value)
{
    ProtobufCMessage *m = malloc(desc->sizeof_message);
    if (!m)
        return NULL;
    protobuf_c_message_init(desc, m);
    if (value && !set_string((char **)((char *)m + field), value)) {
        arena_message_free(m);
        return NULL;
    }
    return m;
}

bool append_ptr(void ***array, size_t *count, void *item)
{
    /* a parsed array may be an arena piece: copied out with room to grow,
     * never realloc()ed */
    void **grown = *array && arena_owns(*array)
                       ? arena_piece_realloc(*array, *count * sizeof(void *),
                                             2 * (*count + 1) * sizeof(void *))
                       : array_grow(*array, *count, sizeof(void *));
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
    return message_new(&onnx__graph_proto__descriptor, offsetof(Onnx__GraphProto, name), name);
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
        arena_message_free(&op->base);
    ok = ok && set_string(&m->producer_name, producer) && (m->graph = graph_new(graph_name));
    if (!ok) {
        if (m)
            arena_message_free(&m->base);
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
    Onnx__NodeProto *node =
        message_new(&onnx__node_proto__descriptor, offsetof(Onnx__NodeProto, op_type), op_type);
    if (node && name && !set_string(&node->name, name)) {
        arena_message_free(&node->base);
        return NULL;
    }
    return node;
}

Onnx__AttributeProto *node_add_attr(Onnx__NodeProto *node, const char *name,
                                    Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *attr =
        message_new(&onnx__attribute_proto__descriptor, offsetof(Onnx__AttributeProto, name), name);
    if (!attr)
        return NULL;
    attr->has_type = 1;
    attr->type = type;
    if (!APPEND_PTR(&node->attribute, &node->n_attribute, attr)) {
        arena_message_free(&attr->base);
        return NULL;
    }
    return attr;
}

/* Adds attribute `name` with the type and value of `value` (a compound
 * literal: its base and name do not count). The attribute takes what the value
 * points to (ints, s, t, g), which is freed when it cannot be added. */
static bool node_add_filled_attr(Onnx__NodeProto *node, const char *name,
                                 const Onnx__AttributeProto *value)
{
    Onnx__AttributeProto *attr = node_add_attr(node, name, value->type);
    if (!attr) {
        free(value->ints);
        free(value->s.data);
        if (value->t)
            arena_message_free(&value->t->base);
        if (value->g)
            arena_message_free(&value->g->base);
        return false;
    }
    /* what node_add_attr set stays; every other field comes from value */
    Onnx__AttributeProto filled = *value;
    filled.base = attr->base;
    filled.name = attr->name;
    filled.has_type = attr->has_type;
    *attr = filled;
    return true;
}

bool node_add_int_attr(Onnx__NodeProto *node, const char *name, int64_t value)
{
    return node_add_filled_attr(node, name, &(Onnx__AttributeProto){
        .type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, .has_i = 1, .i = value });
}

bool node_add_float_attr(Onnx__NodeProto *node, const char *name, float value)
{
    return node_add_filled_attr(node, name, &(Onnx__AttributeProto){
        .type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, .has_f = 1, .f = value });
}

bool node_add_ints_attr(Onnx__NodeProto *node, const char *name, const int64_t *values,
                        size_t n)
{
    int64_t *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return false;
    if (n)
        memcpy(copy, values, n * sizeof *copy);
    return node_add_filled_attr(node, name, &(Onnx__AttributeProto){
        .type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, .n_ints = n, .ints = copy });
}

bool node_add_string_attr(Onnx__NodeProto *node, const char *name, const char *value)
{
    size_t len = strlen(value);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return false;
    memcpy(copy, value, len);
    return node_add_filled_attr(node, name, &(Onnx__AttributeProto){
        .type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, .has_s = 1, .s = { len, copy } });
}

bool node_add_tensor_attr(Onnx__NodeProto *node, const char *name, Onnx__TensorProto *t)
{
    return node_add_filled_attr(node, name, &(Onnx__AttributeProto){
        .type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, .t = t });
}

bool node_add_graph_attr(Onnx__NodeProto *node, const char *name, Onnx__GraphProto *g)
{
    return node_add_filled_attr(node, name, &(Onnx__AttributeProto){
        .type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH, .g = g });
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
    Onnx__TensorShapeProto__Dimension *dim =
        message_new(&onnx__tensor_shape_proto__dimension__descriptor,
                    offsetof(Onnx__TensorShapeProto__Dimension, dim_param), d->param);
    if (!dim)
        return NULL;
    if (d->param) {
        dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
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
                arena_message_free(&dim->base);
            arena_message_free(&type->base);
            return NULL;
        }
    }
    return type;
}

/* A value info named `name` that owns `type` (NULL: no type); the type is
 * freed with it when the value info cannot be made. */
static Onnx__ValueInfoProto *value_info_with_type(const char *name, Onnx__TypeProto *type)
{
    Onnx__ValueInfoProto *vi = message_new(&onnx__value_info_proto__descriptor,
                                           offsetof(Onnx__ValueInfoProto, name), name);
    if (vi)
        vi->type = type;
    else if (type)
        arena_message_free(&type->base);
    return vi;
}

Onnx__ValueInfoProto *value_info_new(const char *name, int32_t elem_type, const dim_info *dims,
                                     size_t rank)
{
    Onnx__TypeProto *type = tensor_type_new(elem_type, dims, rank);
    return type ? value_info_with_type(name, type) : NULL;
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
        if (!out->param)
            oom_note(); /* not an unknown dimension (error.h) */
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
        arena_message_free(&vi->type->base);
        vi->type = NULL;
    } else if (!dims) {
        arena_message_free(&tt->shape->base);
        tt->shape = NULL;
    }
    return vi;
}

/* A deep copy of `type` through the wire format, which keeps every field. */
static Onnx__TypeProto *type_copy(const Onnx__TypeProto *type)
{
    size_t size = onnx__type_proto__get_packed_size(type);
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf)
        return NULL;
    onnx__type_proto__pack(type, buf);
    Onnx__TypeProto *copy = onnx__type_proto__unpack(NULL, size, buf);
    free(buf);
    return copy;
}

Onnx__ValueInfoProto *value_info_copy(const Onnx__ValueInfoProto *src, const char *name)
{
    Onnx__TypeProto *type = src->type ? type_copy(src->type) : NULL;
    if (src->type && !type)
        return NULL;
    return value_info_with_type(name, type);
}

Onnx__TensorProto *tensor_shell_new(const char *name, int32_t elem_type, const int64_t *dims,
                                    size_t rank)
{
    int64_t *copy = malloc((rank ? rank : 1) * sizeof *copy);
    Onnx__TensorProto *t =
        copy ? message_new(&onnx__tensor_proto__descriptor, offsetof(Onnx__TensorProto, name), name)
             : NULL;
    if (!t) {
        free(copy);
        return NULL;
    }
    if (rank)
        memcpy(copy, dims, rank * sizeof *copy);
    t->has_data_type = 1;
    t->data_type = elem_type;
    t->dims = copy;
    t->n_dims = rank;
    return t;
}

Onnx__StringStringEntryProto *string_entry_new(const char *key)
{
    return message_new(&onnx__string_string_entry_proto__descriptor,
                       offsetof(Onnx__StringStringEntryProto, key), key);
}
