#include "array.h"
#include "onnx_build.h"

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
    if (!set_string(&node->op_type, op_type) || !set_string(&node->name, name)) {
        protobuf_c_message_free_unpacked(&node->base, NULL);
        return NULL;
    }
    return node;
}

bool node_add_int_attr(Onnx__NodeProto *node, const char *name, int64_t value)
{
    Onnx__AttributeProto *attr = malloc(sizeof *attr);
    if (!attr)
        return false;
    onnx__attribute_proto__init(attr);
    attr->has_type = 1;
    attr->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    attr->has_i = 1;
    attr->i = value;
    if (!set_string(&attr->name, name) || !APPEND_PTR(&node->attribute, &node->n_attribute, attr)) {
        protobuf_c_message_free_unpacked(&attr->base, NULL);
        return false;
    }
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
