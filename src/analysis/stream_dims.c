/* Dimensions as monomials (analysis/stream_walk.h): an integer times
 * symbolic sizes, time among them, so that reshape(b, t, -1) with b and t
 * taken from Shape ops is seen to keep time where it was. A dimension that
 * is not known is a symbol named after its same-size source, or the entry
 * its Reshape was given. */
#include "analysis/stream_walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dim_source.h"
#include "util/array.h"
#include "model/tensor_util.h"

mono mono_int(int64_t v) { return (mono){ .ok = true, .coef = v }; }

mono mono_sym(int sym)
{
    mono m = mono_int(1);
    m.n = 1;
    m.sym[0] = sym;
    return m;
}

static bool mono_eq(const mono *a, const mono *b)
{
    if (!a->ok || !b->ok || a->coef != b->coef || a->n != b->n)
        return false;
    return !memcmp(a->sym, b->sym, (size_t)a->n * sizeof a->sym[0]);
}

mono mono_mul(mono a, mono b)
{
    if (!a.ok || !b.ok || a.n + b.n > MONO_SYMBOLS ||
        (a.coef && b.coef && (a.coef > INT64_MAX / b.coef)))
        return (mono){ .ok = false };
    mono m = { .ok = true, .coef = a.coef * b.coef };
    int i = 0, j = 0;
    while (i < a.n || j < b.n)
        m.sym[m.n++] = j >= b.n || (i < a.n && a.sym[i] <= b.sym[j]) ? a.sym[i++] : b.sym[j++];
    return m;
}

/* a / b when b divides a exactly, else not ok. */
mono mono_div(mono a, mono b)
{
    if (!a.ok || !b.ok || b.coef == 0 || a.coef % b.coef)
        return (mono){ .ok = false };
    mono m = { .ok = true, .coef = a.coef / b.coef };
    int j = 0;
    for (int i = 0; i < a.n; i++) {
        if (j < b.n && a.sym[i] == b.sym[j])
            j++;
        else
            m.sym[m.n++] = a.sym[i];
    }
    return j == b.n ? m : (mono){ .ok = false };
}

/* ---- dimensions as monomials -------------------------------------------------- */

/* A key naming the source of a dimension (analysis/dim_source.h). */
static void dim_key(const scope *s, const char *value, int64_t axis, char key[DIM_KEY_SIZE])
{
    const scope *o;
    const char *v;
    int64_t a;
    dim_source(s, value, axis, &o, &v, &a);
    const value_entry *e = scope_lookup(o, v, &o); /* the scope that holds it */
    snprintf(key, DIM_KEY_SIZE, "v:%p:%.500s:%lld", (const void *)(e ? o : s), v, (long long)a);
}

/* Dimension `axis` of `value`: time, a number, a named size, or a symbol of
 * its own (equal only to itself). */
mono dim_mono(stream_walk *w, const scope *s, const char *value, int64_t axis)
{
    time_state t = get_state(w, s, value);
    if (t.kind == T_AXIS && t.axis == axis && !t.pad_front && !t.pad_back)
        return mono_sym(SYM_TIME);
    if (t.kind == T_MERGED && t.axis == axis)
        return t.whole;
    dim_info d = { 0 };
    if (!infer_dim(s, value, axis, &d)) {
        w->oom = true;
        return (mono){ .ok = false };
    }
    char key[DIM_KEY_SIZE];
    mono m;
    if (d.known && !d.param) {
        m = mono_int(d.value);
    } else if (d.param) {
        snprintf(key, sizeof key, "p:%s", d.param);
        m = mono_sym(stream_symbol(w, key));
    } else { /* the same source, the same size: a Reshape's entry, or a symbol */
        dim_key(s, value, axis, key);
        int at = strmap_get(&w->shaped_keys, key);
        m = at >= 0 ? w->shaped[at] : mono_sym(stream_symbol(w, key));
    }
    dim_info_clear(&d);
    return m;
}

/* Remembers the dims of a Reshape's output (that dim_mono would otherwise
 * see as symbols of their own). */
void remember_shape(stream_walk *w, const scope *s, const char *value,
                           const shape_expr *e)
{
    for (size_t i = 0; i < e->n && !w->oom; i++) {
        char key[DIM_KEY_SIZE];
        dim_key(s, value, (int64_t)i, key);
        if (!e->v[i].ok || strmap_get(&w->shaped_keys, key) >= 0)
            continue;
        w->oom = !stream_grow((void **)&w->shaped, w->n_shaped, sizeof *w->shaped) ||
                 !strmap_put(&w->shaped_keys, key, (int)w->n_shaped);
        if (!w->oom)
            w->shaped[w->n_shaped++] = e->v[i];
    }
}

bool shape_of(stream_walk *w, const scope *s, const char *value, shape_expr *out,
                     int depth);

bool const_ints(const scope *s, const char *value, int64_t **v, size_t *n)
{
    const Onnx__TensorProto *t = scope_tensor_data(s, constant_tensor(s, value));
    return t && tensor_read_int64s(t, v, n);
}

static bool shape_from_shape_op(stream_walk *w, const scope *s, const Onnx__NodeProto *p,
                                shape_expr *out)
{
    const char *x = node_input(p, 0);
    int64_t r = infer_rank(s, x);
    int64_t start = node_attr_int(p, "start", 0), end = node_attr_int(p, "end", r);
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end > r ? r : end;
    if (r < 0 || start < 0 || end - start > SHAPE_ENTRIES)
        return false;
    out->n = 0;
    for (int64_t i = start; i < end; i++)
        out->v[out->n++] = dim_mono(w, s, x, i);
    return true;
}

static bool shape_gather(stream_walk *w, const scope *s, const Onnx__NodeProto *p,
                         shape_expr *out, int depth)
{
    shape_expr data;
    int64_t *idx = NULL;
    size_t n = 0;
    bool ok = node_attr_int(p, "axis", 0) == 0 && shape_of(w, s, node_input(p, 0), &data, depth) &&
              const_ints(s, node_input(p, 1), &idx, &n) && n <= SHAPE_ENTRIES;
    out->n = 0;
    for (size_t i = 0; ok && i < n; i++) {
        int64_t k = idx[i] < 0 ? idx[i] + (int64_t)data.n : idx[i];
        ok = k >= 0 && (size_t)k < data.n;
        if (ok)
            out->v[out->n++] = data.v[k];
    }
    free(idx);
    return ok;
}

static bool shape_slice(stream_walk *w, const scope *s, const Onnx__NodeProto *p,
                        shape_expr *out, int depth)
{
    shape_expr data;
    int64_t *st = NULL, *en = NULL;
    size_t ns = 0, ne = 0;
    bool ok = shape_of(w, s, node_input(p, 0), &data, depth) &&
              node_ints(s, p, "starts", 1, &st, &ns) && node_ints(s, p, "ends", 2, &en, &ne) &&
              ns == 1 && ne == 1 && p->n_input < 5;
    if (ok) {
        int64_t n = (int64_t)data.n;
        int64_t a = st[0] < 0 ? st[0] + n : st[0], b = en[0] < 0 ? en[0] + n : en[0];
        a = a < 0 ? 0 : a > n ? n : a;
        b = b < a ? a : b > n ? n : b;
        out->n = 0;
        for (int64_t i = a; i < b; i++)
            out->v[out->n++] = data.v[i];
    }
    free(st);
    free(en);
    return ok;
}

static bool shape_arith(stream_walk *w, const scope *s, const Onnx__NodeProto *p,
                        shape_expr *out, int depth)
{
    shape_expr a, b;
    if (p->n_input != 2 || !shape_of(w, s, node_input(p, 0), &a, depth) ||
        !shape_of(w, s, node_input(p, 1), &b, depth) || (a.n != b.n && a.n != 1 && b.n != 1))
        return false;
    out->n = a.n > b.n ? a.n : b.n;
    for (size_t i = 0; i < out->n; i++) {
        mono x = a.v[a.n == 1 ? 0 : i], y = b.v[b.n == 1 ? 0 : i];
        bool plain = x.ok && y.ok && !x.n && !y.n;
        if (node_op_is(p, "Mul"))
            out->v[i] = mono_mul(x, y);
        else if (node_op_is(p, "Div"))
            out->v[i] = mono_div(x, y);
        else if (plain && node_op_is(p, "Add"))
            out->v[i] = mono_int(x.coef + y.coef);
        else if (plain && node_op_is(p, "Sub"))
            out->v[i] = mono_int(x.coef - y.coef);
        else
            out->v[i] = (mono){ .ok = false };
    }
    return true;
}

static bool shape_concat(stream_walk *w, const scope *s, const Onnx__NodeProto *p,
                         shape_expr *out, int depth)
{
    out->n = 0;
    for (size_t i = 0; i < p->n_input; i++) {
        shape_expr part;
        if (!shape_of(w, s, node_input(p, i), &part, depth) || out->n + part.n > SHAPE_ENTRIES)
            return false;
        memcpy(out->v + out->n, part.v, part.n * sizeof part.v[0]);
        out->n += part.n;
    }
    return true;
}

/* The entries of a small int64 tensor that holds a shape (or one size), as
 * monomials; false when it is not built from constants and Shape ops. */
bool shape_of(stream_walk *w, const scope *s, const char *value, shape_expr *out,
                     int depth)
{
    int64_t *v = NULL;
    size_t n = 0;
    if (const_ints(s, value, &v, &n)) {
        bool ok = n <= SHAPE_ENTRIES;
        for (size_t i = 0; ok && i < n; i++)
            out->v[i] = mono_int(v[i]);
        out->n = n;
        free(v);
        return ok;
    }
    const scope *o;
    const Onnx__NodeProto *p = value_producer(s, value, &o);
    if (!p || depth > SHAPE_DEPTH || !node_default_domain(p))
        return false;
    static const char *const passing[] = { "Unsqueeze", "Squeeze", "Cast", "Identity",
                                           "Reshape", NULL };
    if (node_op_is(p, "Shape"))
        return shape_from_shape_op(w, o, p, out);
    if (node_op_in(p, passing))
        return shape_of(w, o, node_input(p, 0), out, depth + 1);
    if (node_op_is(p, "Gather"))
        return shape_gather(w, o, p, out, depth + 1);
    if (node_op_is(p, "Slice"))
        return shape_slice(w, o, p, out, depth + 1);
    if (node_op_is(p, "Concat"))
        return shape_concat(w, o, p, out, depth + 1);
    static const char *const arith[] = { "Mul", "Div", "Add", "Sub", NULL };
    if (node_op_in(p, arith))
        return shape_arith(w, o, p, out, depth + 1);
    return false;
}

/* A one-element (or empty) tensor holding zero. */
bool tensor_is_zero(const Onnx__TensorProto *t)
{
    unsigned char *bytes = NULL;
    size_t size = 0;
    if (!tensor_read_bytes(t, &bytes, &size))
        return false;
    bool zero = true;
    for (size_t i = 0; i < size; i++)
        zero &= bytes[i] == 0;
    free(bytes);
    return zero;
}

/* Where time lies in a tensor of dims `out` (a Reshape's or Flatten's
 * output), given P, the product of what lies before time in element order:
 * the axis whose prefix product is P and whose size is time (intact), or
 * the axis time is merged into. */
time_state locate_time(const time_state *in, mono before, const shape_expr *out,
                              const Onnx__NodeProto *node)
{
    mono prefix = mono_int(1);
    for (size_t i = 0; i < out->n && prefix.ok; i++) {
        mono outer = mono_div(before, prefix);
        if (outer.ok) {
            mono time_part = mono_mul(outer, mono_sym(SYM_TIME));
            time_state t = *in;
            t.axis = (int)i;
            if (mono_eq(&out->v[i], &time_part) && outer.coef == 1 && !outer.n) {
                t.kind = T_AXIS;
                return t;
            }
            if (mono_div(out->v[i], time_part).ok) {
                t.kind = T_MERGED;
                t.outer = outer;
                t.whole = out->v[i];
                t.merged_by = node;
                return t;
            }
        }
        prefix = mono_mul(prefix, out->v[i]);
    }
    return (time_state){ .kind = T_UNKNOWN };
}

/* P: the product of what lies before time in element order. */
mono before_time(stream_walk *w, const scope *s, const char *x, const time_state *t)
{
    mono p = t->kind == T_MERGED ? t->outer : mono_int(1);
    for (int i = 0; i < t->axis; i++)
        p = mono_mul(p, dim_mono(w, s, x, i));
    return p;
}

mono product_of_dims(stream_walk *w, const scope *s, const char *x, int64_t rank)
{
    mono p = mono_int(1);
    for (int64_t i = 0; i < rank; i++)
        p = mono_mul(p, dim_mono(w, s, x, i));
    return p;
}
