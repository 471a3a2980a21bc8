/* What a value is, as the graphs say it (analysis/values.h): its producer,
 * its declarations (graph input, value_info, graph output) and their type
 * and shape, and its contents when it is a constant: an initializer, a
 * Constant node, or a small int64 computed from constants only, as PyTorch
 * exports F.pad's pads. */
#include "analysis/values.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model/tensor_util.h"

const Onnx__NodeProto *value_producer(const scope *s, const char *value, const scope **owner)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e || e->producer < 0)
        return NULL;
    if (owner)
        *owner = o;
    return o->graph->node[e->producer];
}

const Onnx__TensorProto *constant_tensor(const scope *s, const char *value)
{
    const scope *o;
    const value_entry *e = scope_lookup(s, value, &o);
    return e ? constant_tensor_of(o, e) : NULL;
}

const Onnx__TensorProto *constant_tensor_of(const scope *o, const value_entry *e)
{
    if (e->graph_input >= 0)
        return NULL; /* a graph input can be overridden: not a constant */
    if (e->initializer >= 0)
        return o->graph->initializer[e->initializer];
    if (e->producer < 0)
        return NULL;
    const Onnx__NodeProto *p = o->graph->node[e->producer];
    if (!node_op_is(p, "Constant"))
        return NULL;
    const Onnx__AttributeProto *a = node_attr(p, "value");
    return a ? a->t : NULL;
}

/* The declarations of a value, in the order they are trusted: graph input,
 * value_info, graph output. Fills `out` and returns how many there are. */
static size_t declarations(const scope *o, const value_entry *e,
                           const Onnx__ValueInfoProto *out[3])
{
    const Onnx__GraphProto *g = o->graph;
    size_t n = 0;
    if (e->graph_input >= 0)
        out[n++] = g->input[e->graph_input];
    if (e->value_info >= 0)
        out[n++] = g->value_info[e->value_info];
    if (e->graph_output >= 0)
        out[n++] = g->output[e->graph_output];
    return n;
}

/* The declared shape of a value (graph input, value_info or output). */
const Onnx__TensorShapeProto *declared_shape(const scope *o, const value_entry *e)
{
    const Onnx__ValueInfoProto *decl[3];
    const Onnx__TensorShapeProto *sh = NULL;
    for (size_t i = 0, n = declarations(o, e, decl); !sh && i < n; i++)
        sh = value_info_shape(decl[i]);
    return sh;
}

int32_t declared_elem_type(const scope *s, const char *value)
{
    const scope *o = NULL;
    const value_entry *e = scope_lookup(s, value, &o);
    if (!e) {
        /* declared in value_info only, e.g. an output of a node elsewhere */
        e = graph_index_find(&s->index, value);
        o = s;
    }
    if (!e)
        return 0;
    const Onnx__GraphProto *g = o->graph;
    const Onnx__ValueInfoProto *decl[3];
    int32_t t = 0;
    for (size_t i = 0, n = declarations(o, e, decl); !t && i < n; i++)
        t = value_info_elem_type(decl[i]);
    if (!t && e->initializer >= 0)
        t = g->initializer[e->initializer]->data_type;
    return t;
}

bool node_ints(const scope *s, const Onnx__NodeProto *p, const char *attr, size_t input,
                     int64_t **vals, size_t *n)
{
    const Onnx__AttributeProto *a = *attr ? node_attr(p, attr) : NULL;
    if (a && a->n_ints) {
        *vals = malloc(a->n_ints * sizeof **vals);
        if (!*vals) {
            oom_note(); /* not "no such list" (error.h) */
            return false;
        }
        memcpy(*vals, a->ints, a->n_ints * sizeof **vals);
        *n = a->n_ints;
        return true;
    }
    const Onnx__TensorProto *t =
        input < p->n_input ? constant_tensor(s, str_or_empty(p->input[input])) : NULL;
    t = scope_tensor_data(s, t);
    return t && tensor_read_int64s(t, vals, n);
}

/* ---- folding small int64 constants ---- */

#define FOLD_MAX 64 /* elements; pads and shapes are small */
#define FOLD_DEPTH 16

typedef struct folded {
    size_t n, rows, cols; /* rows x cols = n; a vector is 1 x n */
    int64_t v[FOLD_MAX];
} folded;

static bool fold_at(const scope *s, const char *value, folded *out, int depth);

static bool fold_slice(const scope *s, const Onnx__NodeProto *p, folded *out, int depth)
{
    folded data, st, en, ax = { 0 }, sp = { 0 };
    if (!fold_at(s, node_input(p, 0), &data, depth) || !fold_at(s, node_input(p, 1), &st, depth) ||
        !fold_at(s, node_input(p, 2), &en, depth) || st.n != 1 || en.n != 1)
        return false;
    if (p->n_input > 3 && *node_input(p, 3) && !fold_at(s, node_input(p, 3), &ax, depth))
        return false;
    if (p->n_input > 4 && *node_input(p, 4) && !fold_at(s, node_input(p, 4), &sp, depth))
        return false;
    int64_t axis = ax.n ? ax.v[0] : 0, step = sp.n ? sp.v[0] : 1;
    int64_t len = (int64_t)(data.rows > 1 ? data.rows : data.n);
    if ((axis != 0 && axis != -(data.rows > 1 ? 2 : 1)) || step == 0)
        return false;
    int64_t a = st.v[0] < 0 ? st.v[0] + len : st.v[0], b = en.v[0] < 0 ? en.v[0] + len : en.v[0];
    size_t width = data.rows > 1 ? data.cols : 1;
    out->n = 0;
    if (step > 0) {
        a = a < 0 ? 0 : a > len ? len : a;
        b = b > len ? len : b;
    } else {
        a = a >= len ? len - 1 : a;
        b = b < -1 ? -1 : b;
    }
    for (int64_t i = a; step > 0 ? i < b : i > b; i += step)
        for (size_t c = 0; c < width && out->n < FOLD_MAX; c++)
            out->v[out->n++] = data.v[(size_t)i * width + c];
    out->cols = width;
    out->rows = data.rows > 1 ? out->n / width : 1;
    if (data.rows <= 1)
        out->cols = out->n;
    return true;
}

static bool fold_produced(const scope *s, const Onnx__NodeProto *p, folded *out, int depth)
{
    static const char *const passing[] = { "Cast", "Identity", "Squeeze", "Unsqueeze", NULL };
    if (node_op_in(p, passing))
        return fold_at(s, node_input(p, 0), out, depth);
    if (node_op_is(p, "Reshape")) {
        folded shape;
        if (!fold_at(s, node_input(p, 0), out, depth) || !fold_at(s, node_input(p, 1), &shape, depth))
            return false;
        if (shape.n == 2 && shape.v[1] > 0 && out->n % (size_t)shape.v[1] == 0) {
            out->cols = (size_t)shape.v[1];
            out->rows = out->n / out->cols;
        } else {
            out->rows = 1;
            out->cols = out->n;
        }
        return true;
    }
    if (node_op_is(p, "Concat")) {
        out->n = 0;
        for (size_t i = 0; i < p->n_input; i++) {
            folded part;
            if (!fold_at(s, node_input(p, i), &part, depth) || out->n + part.n > FOLD_MAX)
                return false;
            memcpy(out->v + out->n, part.v, part.n * sizeof part.v[0]);
            out->n += part.n;
        }
        out->rows = 1;
        out->cols = out->n;
        return true;
    }
    if (node_op_is(p, "ConstantOfShape")) {
        folded shape;
        const Onnx__AttributeProto *a = node_attr(p, "value");
        int64_t *fill = NULL;
        size_t nf = 0;
        if (!fold_at(s, node_input(p, 0), &shape, depth) || shape.n != 1 || shape.v[0] < 0 ||
            shape.v[0] > FOLD_MAX || (a && (!a->t || !tensor_read_int64s(a->t, &fill, &nf) || nf != 1)))
            return false;
        for (out->n = 0; out->n < (size_t)shape.v[0]; out->n++)
            out->v[out->n] = fill ? fill[0] : 0;
        free(fill);
        out->rows = 1;
        out->cols = out->n;
        return true;
    }
    if (node_op_is(p, "Slice"))
        return fold_slice(s, p, out, depth);
    if (node_op_is(p, "Transpose")) {
        folded m;
        if (!fold_at(s, node_input(p, 0), &m, depth) || m.rows < 1)
            return false;
        out->n = m.n;
        out->rows = m.cols;
        out->cols = m.rows;
        for (size_t r = 0; r < m.rows; r++)
            for (size_t c = 0; c < m.cols; c++)
                out->v[c * m.rows + r] = m.v[r * m.cols + c];
        return true;
    }
    return false;
}

static bool fold_at(const scope *s, const char *value, folded *out, int depth)
{
    const Onnx__TensorProto *t = scope_tensor_data(s, constant_tensor(s, value));
    if (t) {
        int64_t *v = NULL;
        size_t n = 0;
        bool ok = tensor_read_int64s(t, &v, &n) && n <= FOLD_MAX && t->n_dims <= 2;
        if (ok) {
            memcpy(out->v, v, n * sizeof *v);
            out->n = n;
            out->rows = t->n_dims == 2 ? (size_t)t->dims[0] : 1;
            out->cols = t->n_dims == 2 ? (size_t)t->dims[1] : n;
        }
        free(v);
        return ok;
    }
    const scope *o;
    const Onnx__NodeProto *p = value_producer(s, value, &o);
    return p && depth < FOLD_DEPTH && node_default_domain(p) && fold_produced(o, p, out, depth + 1);
}

bool fold_int64s(const scope *s, const char *value, int64_t **vals, size_t *n)
{
    folded f;
    if (!fold_at(s, value, &f, 0))
        return false;
    *vals = malloc((f.n ? f.n : 1) * sizeof **vals);
    if (!*vals) {
        oom_note();
        return false;
    }
    memcpy(*vals, f.v, f.n * sizeof f.v[0]);
    *n = f.n;
    return true;
}
