/* Where a dimension comes from with the same size (analysis/dim_source.h):
 * the walk back through ops that keep it, and the two facts it shares with
 * the shape inference: a Reshape entry taken from a Shape, and the X axis a
 * recurrent output's axis is. */
#include "analysis/dim_source.h"

#include <stdlib.h>

#include "analysis/shape.h"
#include "model/tensor_util.h"
#include "recurrent_ops.h"

/* Entry `index` of a Reshape's target shape when it is a dimension of a
 * value taken with Shape (Concat of Unsqueeze(Gather(Shape(y), j)) pieces, as
 * exporters write reshape(b, t, -1)): *y and *j, or false. */
bool shape_entry_source(const scope *s, const char *shape, int64_t index, const scope **ys,
                        const char **y, int64_t *j)
{
    const scope *o;
    const Onnx__NodeProto *p = value_producer(s, shape, &o);
    for (int hops = 0; p && hops < 8 && node_op_is(p, "Concat"); hops++) {
        const Onnx__NodeProto *piece = NULL;
        int64_t at = 0;
        for (size_t i = 0; i < p->n_input && !piece; i++) {
            int64_t r = infer_rank(o, node_input(p, i)), len = -1;
            dim_info d = { 0 };
            if (r == 1 && infer_dim(o, node_input(p, i), 0, &d) && d.known && !d.param)
                len = d.value;
            dim_info_clear(&d);
            if (len < 0)
                return false;
            if (index < at + len) {
                if (len != 1)
                    return false;
                piece = value_producer(o, node_input(p, i), &o);
            }
            at += len;
        }
        p = piece;
    }
    while (p && (node_op_is(p, "Unsqueeze") || node_op_is(p, "Cast")))
        p = value_producer(o, node_input(p, 0), &o);
    if (!p || !node_op_is(p, "Gather") || node_attr_int(p, "axis", 0) != 0)
        return false;
    const Onnx__TensorProto *t = scope_tensor_data(o, constant_tensor(o, node_input(p, 1)));
    int64_t *v = NULL;
    size_t n = 0;
    bool ok = t && tensor_read_int64s(t, &v, &n) && n == 1 && v[0] >= 0;
    const scope *so;
    const Onnx__NodeProto *sh = ok ? value_producer(o, node_input(p, 0), &so) : NULL;
    ok = sh && node_op_is(sh, "Shape") && !node_attr(sh, "start");
    if (ok) {
        *ys = so;
        *y = node_input(sh, 0);
        *j = v[0];
    }
    free(v);
    return ok;
}

/* Recurrent outputs: Y is [T, D, B, H] (layout 0) or [B, T, D, H] (layout 1);
 * Y_h and Y_c are [D, B, H] or [B, D, H]. Only X-derived dims are traced. */
int64_t recurrent_x_axis(const Onnx__NodeProto *p, int slot, int64_t axis)
{
    bool batch_first = node_attr_int(p, "layout", 0) == 1;
    if (slot == 0)
        return batch_first ? (axis <= 1 ? axis : -1) : (axis == 0 ? 0 : axis == 2 ? 1 : -1);
    return (batch_first ? axis == 0 : axis == 1) ? (batch_first ? 0 : 1) : -1;
}

/* dim_source's step: the axis of input 0 (or, for a Reshape entry taken
 * from a Shape, of another value: *s and *value change) that dimension
 * `axis` of p's output is, with the same size; -1 when there is none. */
static int64_t same_size_axis(const scope **s, const Onnx__NodeProto *p, int slot, int64_t axis,
                              const char **value)
{
    const Onnx__AttributeProto *perm = node_attr(p, "perm");
    *value = node_input(p, 0);
    if (recurrent_op_of(p))
        return recurrent_x_axis(p, slot, axis);
    if (node_op_in(p, same_shape_ops) || (node_op_in(p, batch_keeping_ops) && axis == 0))
        return axis;
    if (node_op_is(p, "Transpose"))
        return perm && (size_t)axis < perm->n_ints ? perm->ints[axis] : -1;
    if (node_op_is(p, "Reshape") && p->n_input > 1) {
        int64_t j;
        if (shape_entry_source(*s, node_input(p, 1), axis, s, value, &j))
            return j;
        int64_t *shape = NULL;
        size_t n = 0;
        bool copy = node_ints(*s, p, "", 1, &shape, &n) && (size_t)axis < n && shape[axis] == 0 &&
                    node_attr_int(p, "allowzero", 0) == 0;
        free(shape);
        return copy ? axis : -1;
    }
    if (node_op_is(p, "Squeeze") || node_op_is(p, "Unsqueeze")) {
        int64_t *axes = NULL, r = infer_rank(*s, *value), out_rank;
        size_t n = 0;
        if (r < 0 || !node_ints(*s, p, "axes", 1, &axes, &n))
            return -1;
        bool squeeze = node_op_is(p, "Squeeze");
        out_rank = squeeze ? r - (int64_t)n : r + (int64_t)n;
        /* walk the longer list, counting the axes the shorter one lacks */
        int64_t longer = squeeze ? r : out_rank, kept = -1, found = -1;
        for (int64_t i = 0; i < longer && found < 0; i++) {
            bool listed = false;
            for (size_t k = 0; k < n; k++)
                listed |= (axes[k] < 0 ? axes[k] + longer : axes[k]) == i;
            if (!listed)
                kept++;
            if (squeeze && !listed && kept == axis)
                found = i;
            if (!squeeze && i == axis)
                found = listed ? -2 : kept;
        }
        free(axes);
        return found < 0 ? -1 : found;
    }
    return -1;
}

void dim_source(const scope *s, const char *value, int64_t axis, const scope **os,
                const char **ovalue, int64_t *oaxis)
{
    for (int steps = 0; steps < MAX_TRACE_DEPTH * 16; steps++) {
        const scope *o;
        int slot;
        const Onnx__NodeProto *p = shape_producer(s, value, &o, &slot);
        const char *next = NULL;
        int64_t a = p && p->n_input ? same_size_axis(&o, p, slot, axis, &next) : -1;
        if (a < 0 || !*next)
            break;
        s = o;
        value = next;
        axis = a;
    }
    *os = s;
    *ovalue = value;
    *oaxis = axis;
}
