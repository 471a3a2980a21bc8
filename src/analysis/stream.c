/* The time axis followed forward (analysis/stream.h).
 *
 * Each value gets a time state: none (it does not vary along time), an axis
 * (time is that axis, intact), merged (time was folded with the dimensions
 * before it into one axis, as a dual-path model folds it into the batch; a
 * Reshape can split it back out), or unknown (past an op the analysis does
 * not know, which is reported once, where it is met). Reshapes are followed
 * by comparing products of dimensions, kept as monomials (an integer times
 * symbolic sizes), so that reshape(b, t, -1) with b and t taken from Shape
 * ops keeps time where it was. */
#include "analysis/stream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/shape.h"
#include "array.h"
#include "recurrent_ops.h"
#include "strbuf.h"
#include "strmap.h"
#include "tensor_util.h"

#define MONO_SYMBOLS 6
#define SHAPE_ENTRIES 8
#define SHAPE_DEPTH 24

/* ---- monomials ----------------------------------------------------------- */

/* coef * sym[0] * ... * sym[n-1]; symbols sorted; !ok: not known. */
typedef struct mono {
    bool ok;
    int n;
    int64_t coef;
    int sym[MONO_SYMBOLS];
} mono;

static mono mono_int(int64_t v) { return (mono){ .ok = true, .coef = v }; }

static mono mono_sym(int sym)
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

static mono mono_mul(mono a, mono b)
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
static mono mono_div(mono a, mono b)
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

/* ---- time states ----------------------------------------------------------- */

typedef enum time_kind { T_NONE, T_AXIS, T_MERGED, T_UNKNOWN } time_kind;

typedef struct time_state {
    unsigned char kind;
    bool front_cached;  /* the frames in front come from the model's own cache */
    int axis;
    int64_t scale;      /* input frames per frame of this value */
    int64_t pad_front;  /* frames a Pad (or a cache Concat) put before the data */
    int64_t pad_back;   /* frames a Pad put after the data */
    mono outer;         /* T_MERGED: the product of what lies before time in its axis */
    const Onnx__NodeProto *merged_by; /* T_MERGED: the op that merged it */
    const Onnx__NodeProto *padded_by; /* pad_front or pad_back: the Pad */
} time_state;

typedef struct stream_walk {
    const scope_tree *tree;
    int64_t opset;
    stream_analysis *out;
    strmap symbols;
    int n_symbols;
    ptrmap chomps; /* Slices that drop what a Conv's right padding added */
    bool oom;
} stream_walk;

enum { SYM_TIME = 1 };

static time_state *state_of(stream_walk *w, const scope *s, const char *value)
{
    const scope *o;
    const value_entry *e = *value ? scope_lookup(s, value, &o) : NULL;
    if (!e)
        return NULL;
    time_state *t = memo_entry(o, e, MEMO_SLOT_STREAM, sizeof(time_state), NULL);
    if (!t)
        w->oom = true; /* the walk needs the state: out of memory ends the analysis */
    return t;
}

/* The time state of a value; none for an unknown name (or out of memory). */
static time_state get_state(stream_walk *w, const scope *s, const char *value)
{
    time_state *t = state_of(w, s, value);
    return t ? *t : (time_state){ .kind = T_NONE };
}

static void set_state(stream_walk *w, const scope *s, const char *value, time_state t)
{
    time_state *slot = state_of(w, s, value);
    if (slot)
        *slot = t;
}

static bool carries_time(const time_state *t) { return t->kind != T_NONE; }

static int symbol(stream_walk *w, const char *key)
{
    int id = strmap_get(&w->symbols, key);
    if (id >= 0)
        return id;
    id = SYM_TIME + 1 + w->n_symbols++;
    if (!strmap_put(&w->symbols, key, id))
        w->oom = true;
    return id;
}

/* ---- findings ---------------------------------------------------------------- */

static bool grow(void **array, size_t n, size_t size)
{
    void *grown = owned_array_grow(*array, n, size);
    if (grown)
        *array = grown;
    return grown != NULL;
}

static void block(stream_walk *w, const scope *s, const Onnx__NodeProto *node, bool unknown,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void block(stream_walk *w, const scope *s, const Onnx__NodeProto *node, bool unknown,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *reason = str_vformat(fmt, ap);
    va_end(ap);
    stream_analysis *a = w->out;
    stream_blocker b = { strdup(s->path), strdup(str_or_empty(node->op_type)),
                         strdup(str_or_empty(node->name)), unknown, reason };
    if (!b.graph || !b.op || !b.name || !reason ||
        !grow((void **)&a->blockers, a->n_blockers, sizeof *a->blockers)) {
        free(b.graph);
        free(b.op);
        free(b.name);
        free(reason);
        w->oom = true;
        return;
    }
    a->blockers[a->n_blockers++] = b;
}

static size_t gcd(size_t a, size_t b) { return b ? gcd(b, a % b) : a; }

static void need_multiple(stream_walk *w, int64_t k)
{
    size_t m = w->out->chunk_multiple, kk = k > 0 ? (size_t)k : 1;
    w->out->chunk_multiple = m / gcd(m, kk) * kk;
}

int stream_recurrent_class(const stream_analysis *a, const Onnx__NodeProto *node)
{
    size_t c = 0;
    return ptrmap_get(&a->classes, node, &c) ? (int)c : 0;
}

/* ---- dimensions as monomials -------------------------------------------------- */

/* Dimension `axis` of `value`: time, a number, a named size, or a symbol of
 * its own (equal only to itself). */
static mono dim_mono(stream_walk *w, const scope *s, const char *value, int64_t axis)
{
    time_state t = get_state(w, s, value);
    if (t.kind == T_AXIS && t.axis == axis && !t.pad_front && !t.pad_back)
        return mono_sym(SYM_TIME);
    dim_info d = { 0 };
    if (!infer_dim(s, value, axis, &d)) {
        w->oom = true;
        return (mono){ .ok = false };
    }
    char key[600];
    mono m;
    if (d.known && !d.param) {
        m = mono_int(d.value);
    } else {
        if (d.param)
            snprintf(key, sizeof key, "p:%s", d.param);
        else
            snprintf(key, sizeof key, "v:%p:%.500s:%lld", (const void *)s, value, (long long)axis);
        m = mono_sym(symbol(w, key));
    }
    dim_info_clear(&d);
    return m;
}

typedef struct shape_expr {
    size_t n;
    mono v[SHAPE_ENTRIES];
} shape_expr;

static bool shape_of(stream_walk *w, const scope *s, const char *value, shape_expr *out,
                     int depth);

static bool const_ints(const scope *s, const char *value, int64_t **v, size_t *n)
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
static bool shape_of(stream_walk *w, const scope *s, const char *value, shape_expr *out,
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
static bool tensor_is_zero(const Onnx__TensorProto *t)
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

/* ---- node handlers ------------------------------------------------------------ */

typedef struct node_view {
    const scope *s;
    const Onnx__NodeProto *n;
    time_state in0;    /* input 0's time state */
    int time_inputs;   /* how many inputs carry time */
} node_view;

static const char *op_name(const Onnx__NodeProto *n) { return str_or_empty(n->op_type); }

static int64_t rank_of_value(const scope *s, const char *value)
{
    return *value ? infer_rank(s, value) : -1;
}

static void set_outputs(stream_walk *w, const node_view *v, time_state t)
{
    for (size_t i = 0; i < v->n->n_output; i++)
        set_state(w, v->s, node_output(v->n, i), t);
}

static void unknown_op(stream_walk *w, const node_view *v, const char *why)
{
    block(w, v->s, v->n, true, "%s", why);
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
}

/* A padded value reaching anything but a convolution or pool. */
static bool refuse_padded(stream_walk *w, const node_view *v, const time_state *t)
{
    if (!t->pad_front && !t->pad_back)
        return false;
    if (t->front_cached)
        block(w, v->s, v->n, false, "reads frames the model's own cache put before the time axis");
    else
        block(w, v->s, v->n, false, "reads the %lld frame(s) a Pad added along time",
              (long long)(t->pad_front + t->pad_back));
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    return true;
}

static time_state moved(time_state t, int axis)
{
    t.axis = axis;
    return t;
}

/* Elementwise and broadcasting ops: the time axis keeps its place counted
 * from the last axis. */
static void on_elementwise(stream_walk *w, const node_view *v)
{
    int64_t out_rank = -1;
    for (size_t i = 0; i < v->n->n_input; i++) {
        int64_t r = rank_of_value(v->s, node_input(v->n, i));
        out_rank = r > out_rank ? r : out_rank;
    }
    time_state out = { .kind = T_NONE };
    for (size_t i = 0; i < v->n->n_input; i++) {
        const char *in = node_input(v->n, i);
        time_state t = get_state(w, v->s, in);
        if (!carries_time(&t))
            continue;
        int64_t r = rank_of_value(v->s, in);
        if (r < 0 || out_rank < 0)
            return unknown_op(w, v, "the ranks of its inputs are not known");
        time_state here = moved(t, (int)(t.axis + out_rank - r));
        if (out.kind != T_NONE && out.axis != here.axis)
            return unknown_op(w, v, "its inputs carry time on different axes");
        if (out.kind == T_NONE || here.pad_front || here.pad_back)
            out = here;
        out.scale = t.scale > out.scale ? t.scale : out.scale;
    }
    set_outputs(w, v, out);
}

static void on_transpose(stream_walk *w, const node_view *v)
{
    time_state t = v->in0;
    const Onnx__AttributeProto *perm = node_attr(v->n, "perm");
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    if (!perm || !perm->n_ints) {
        if (r < 0)
            return unknown_op(w, v, "the rank of its input is not known");
        return set_outputs(w, v, moved(t, (int)(r - 1 - t.axis)));
    }
    for (size_t i = 0; i < perm->n_ints; i++)
        if (perm->ints[i] == t.axis)
            return set_outputs(w, v, moved(t, (int)i));
    unknown_op(w, v, "its perm does not name the time axis");
}

static bool axes_of(const node_view *v, int64_t rank, int64_t **axes, size_t *n)
{
    if (!node_ints(v->s, v->n, "axes", 1, axes, n))
        return false;
    for (size_t i = 0; i < *n; i++)
        (*axes)[i] = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
    return true;
}

static void on_squeeze(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *axes = NULL;
    size_t n = 0;
    if (r < 0 || !axes_of(v, r, &axes, &n))
        return unknown_op(w, v, "its axes or the rank of its input are not known");
    int before = 0;
    bool hit = false;
    for (size_t i = 0; i < n; i++) {
        hit |= axes[i] == v->in0.axis;
        before += axes[i] < v->in0.axis;
    }
    free(axes);
    if (hit) {
        block(w, v->s, v->n, false, "removes the time axis");
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    set_outputs(w, v, moved(v->in0, v->in0.axis - before));
}

static void on_unsqueeze(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *axes = NULL;
    size_t n = 0;
    if (r < 0 || !node_ints(v->s, v->n, "axes", 1, &axes, &n))
        return unknown_op(w, v, "its axes or the rank of its input are not known");
    int64_t out_rank = r + (int64_t)n, axis = 0, in_axis = 0;
    for (; axis < out_rank; axis++) {
        bool inserted = false;
        for (size_t i = 0; i < n; i++)
            inserted |= (axes[i] < 0 ? axes[i] + out_rank : axes[i]) == axis;
        if (!inserted && in_axis++ == v->in0.axis)
            break;
    }
    free(axes);
    set_outputs(w, v, moved(v->in0, (int)axis));
}

/* Where time lies in a tensor of dims `out` (a Reshape's or Flatten's
 * output), given P, the product of what lies before time in element order:
 * the axis whose prefix product is P and whose size is time (intact), or
 * the axis time is merged into. */
static time_state locate_time(const time_state *in, mono before, const shape_expr *out,
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
                t.merged_by = node;
                return t;
            }
        }
        prefix = mono_mul(prefix, out->v[i]);
    }
    return (time_state){ .kind = T_UNKNOWN };
}

/* P: the product of what lies before time in element order. */
static mono before_time(stream_walk *w, const scope *s, const char *x, const time_state *t)
{
    mono p = t->kind == T_MERGED ? t->outer : mono_int(1);
    for (int i = 0; i < t->axis; i++)
        p = mono_mul(p, dim_mono(w, s, x, i));
    return p;
}

static mono product_of_dims(stream_walk *w, const scope *s, const char *x, int64_t rank)
{
    mono p = mono_int(1);
    for (int64_t i = 0; i < rank; i++) {
        time_state t = get_state(w, s, x);
        p = mono_mul(p, t.kind == T_MERGED && t.axis == i ? (mono){ .ok = false }
                                                           : dim_mono(w, s, x, i));
    }
    return p;
}

static void on_reshape(stream_walk *w, const node_view *v)
{
    const char *x = node_input(v->n, 0);
    shape_expr out;
    if (!shape_of(w, v->s, node_input(v->n, 1), &out, 0))
        return unknown_op(w, v, "its target shape is computed in a way the analysis cannot follow");
    int64_t r = rank_of_value(v->s, x);
    int minus_one = -1;
    mono others = mono_int(1);
    for (size_t i = 0; i < out.n; i++) {
        if (out.v[i].ok && !out.v[i].n && out.v[i].coef == 0 &&
            node_attr_int(v->n, "allowzero", 0) == 0)
            out.v[i] = dim_mono(w, v->s, x, (int64_t)i);
        if (out.v[i].ok && !out.v[i].n && out.v[i].coef == -1)
            minus_one = (int)i;
        else
            others = mono_mul(others, out.v[i]);
    }
    if (minus_one >= 0)
        out.v[minus_one] = mono_div(product_of_dims(w, v->s, x, r), others);
    time_state t = locate_time(&v->in0, before_time(w, v->s, x, &v->in0), &out, v->n);
    if (t.kind == T_UNKNOWN)
        return unknown_op(w, v, "the time axis cannot be followed through this Reshape");
    set_outputs(w, v, t);
}

static void on_flatten(stream_walk *w, const node_view *v)
{
    const char *x = node_input(v->n, 0);
    int64_t r = rank_of_value(v->s, x), k = node_attr_int(v->n, "axis", 1);
    k = k < 0 ? k + r : k;
    if (r < 0)
        return unknown_op(w, v, "the rank of its input is not known");
    shape_expr out = { .n = 2, .v = { mono_int(1), mono_int(1) } };
    for (int64_t i = 0; i < r; i++)
        out.v[i < k ? 0 : 1] = mono_mul(out.v[i < k ? 0 : 1],
                                        v->in0.kind == T_AXIS && i == v->in0.axis
                                            ? mono_sym(SYM_TIME)
                                            : dim_mono(w, v->s, x, i));
    time_state t = locate_time(&v->in0, before_time(w, v->s, x, &v->in0), &out, v->n);
    if (t.kind == T_UNKNOWN)
        return unknown_op(w, v, "the time axis cannot be followed through this Flatten");
    set_outputs(w, v, t);
}

/* Concat along time: the model's own cache (a state input put in front of
 * the frames) when every other operand does not vary along time. */
static void on_concat(stream_walk *w, const node_view *v)
{
    time_state t = { .kind = T_NONE };
    const char *first = NULL;
    for (size_t i = 0; i < v->n->n_input && t.kind == T_NONE; i++) {
        t = get_state(w, v->s, node_input(v->n, i));
        first = node_input(v->n, i);
    }
    int64_t r = rank_of_value(v->s, first), c = node_attr_int(v->n, "axis", 0);
    c = c < 0 && r >= 0 ? c + r : c;
    if (c != t.axis || t.kind != T_AXIS)
        return set_outputs(w, v, t);
    int64_t cached = 0;
    for (size_t i = 0; i < v->n->n_input; i++) {
        const char *in = node_input(v->n, i);
        time_state o = get_state(w, v->s, in);
        if (o.kind != T_NONE && in != first)
            return unknown_op(w, v, "joins several sequences along time");
        dim_info d = { 0 };
        if (o.kind == T_NONE && (!infer_dim(v->s, in, c, &d) || !d.known || d.param)) {
            dim_info_clear(&d);
            return unknown_op(w, v, "puts frames of unknown length before the time axis");
        }
        cached += o.kind == T_NONE ? d.value : 0;
        if (o.kind == T_NONE && in == node_input(v->n, v->n->n_input - 1))
            return unknown_op(w, v, "appends frames after the time axis");
    }
    t.pad_front += cached;
    t.front_cached = true;
    set_outputs(w, v, t);
}

static void on_split(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), c = node_attr_int(v->n, "axis", 0);
    c = c < 0 && r >= 0 ? c + r : c;
    if (c == v->in0.axis) {
        block(w, v->s, v->n, false, "splits the sequence along time");
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    set_outputs(w, v, v->in0);
}

static bool listed_chomp(const stream_walk *w, const Onnx__NodeProto *n)
{
    size_t unused;
    return ptrmap_get(&w->chomps, n, &unused);
}

static void on_slice(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    int64_t *axes = NULL, *st = NULL, *en = NULL;
    size_t na = 0, ns = 0, ne = 0;
    bool have = node_ints(v->s, v->n, "starts", 1, &st, &ns) &&
                node_ints(v->s, v->n, "ends", 2, &en, &ne) && ns == ne;
    if (have && !node_ints(v->s, v->n, "axes", 3, &axes, &na)) {
        na = ns; /* no axes: the first ones */
        axes = malloc((ns ? ns : 1) * sizeof *axes);
        for (size_t i = 0; axes && i < ns; i++)
            axes[i] = (int64_t)i;
        have = axes != NULL;
    }
    int along = -1;
    for (size_t i = 0; have && i < na && i < ns; i++)
        if ((axes[i] < 0 ? axes[i] + r : axes[i]) == v->in0.axis)
            along = (int)i;
    time_state t = v->in0;
    if (!have) {
        unknown_op(w, v, "its bounds are not constant");
    } else if (along < 0 || listed_chomp(w, v->n)) {
        if (listed_chomp(w, v->n))
            t.pad_back = 0;
        if (listed_chomp(w, v->n) || !refuse_padded(w, v, &t))
            set_outputs(w, v, t);
    } else if (st[along] < 0 && en[along] >= INT32_MAX) {
        /* the last frames: what a model's own cache keeps for the next call */
        set_outputs(w, v, (time_state){ .kind = T_NONE });
    } else if (refuse_padded(w, v, &t)) {
        /* reported */
    } else {
        block(w, v->s, v->n, false, "takes frames %lld to %lld of the sequence",
              (long long)st[along], (long long)en[along]);
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    free(axes);
    free(st);
    free(en);
}

static void on_gather(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), g = node_attr_int(v->n, "axis", 0);
    int64_t q = rank_of_value(v->s, node_input(v->n, 1));
    g = g < 0 && r >= 0 ? g + r : g;
    if (g == v->in0.axis) {
        block(w, v->s, v->n, false, "picks frames out of the sequence (Gather along time)");
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    if (v->in0.axis > g && q < 0)
        return unknown_op(w, v, "the rank of its indices is not known");
    set_outputs(w, v, moved(v->in0, (int)(v->in0.axis < g ? v->in0.axis : v->in0.axis - 1 + q)));
}

static void on_expand(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    int64_t out_rank = rank_of_value(v->s, node_output(v->n, 0));
    shape_expr sh;
    if (out_rank < 0 && shape_of(w, v->s, node_input(v->n, 1), &sh, 0))
        out_rank = (int64_t)sh.n;
    if (r < 0 || out_rank < 0)
        return unknown_op(w, v, "the rank of its output is not known");
    out_rank = out_rank > r ? out_rank : r;
    set_outputs(w, v, moved(v->in0, (int)(v->in0.axis + out_rank - r)));
}

static void on_pad(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *pads = NULL, *axes = NULL;
    size_t n = 0, na = 0;
    if (r < 0 || !(node_ints(v->s, v->n, "pads", 1, &pads, &n) ||
                   fold_int64s(v->s, node_input(v->n, 1), &pads, &n)))
        return unknown_op(w, v, "its pads are not constant");
    bool with_axes = v->n->n_input > 3 && *node_input(v->n, 3) &&
                     node_ints(v->s, v->n, "", 3, &axes, &na);
    size_t m = with_axes ? na : (size_t)r;
    int64_t front = 0, back = 0;
    for (size_t i = 0; i < m && 2 * i + 1 < n + 1 && i + m < n; i++) {
        int64_t a = with_axes ? (axes[i] < 0 ? axes[i] + r : axes[i]) : (int64_t)i;
        if (a == v->in0.axis) {
            front = pads[i];
            back = pads[i + m];
        }
    }
    free(pads);
    free(axes);
    char buf[16];
    const char *mode = node_attr_string(v->n, "mode", buf, sizeof buf);
    mode = mode ? mode : "constant";
    time_state t = v->in0;
    if ((front || back) && strcmp(mode, "constant")) {
        block(w, v->s, v->n, false, "pads along time with %s values (%lld before, %lld after)",
              mode, (long long)front, (long long)back);
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    const Onnx__TensorProto *fill =
        v->n->n_input > 2 ? scope_tensor_data(v->s, constant_tensor(v->s, node_input(v->n, 2)))
                          : NULL;
    if ((front || back) && fill && !tensor_is_zero(fill)) {
        block(w, v->s, v->n, false, "pads along time with a value other than zero");
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    if (front < 0 || back < 0) {
        block(w, v->s, v->n, false, "crops frames along time");
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    t.pad_front += front;
    t.pad_back += back;
    if (front || back)
        t.padded_by = v->n;
    set_outputs(w, v, t);
}

/* ---- convolutions and pools ----------------------------------------------------- */

typedef struct window {
    int64_t kernel, stride, dilation, begin, end; /* along time */
} window;

/* The window along spatial axis `i` of a Conv or pool; false when its
 * kernel is not known. */
static bool window_along(const node_view *v, int i, int spatial, window *out)
{
    const Onnx__AttributeProto *k = node_attr(v->n, "kernel_shape");
    const Onnx__AttributeProto *st = node_attr(v->n, "strides");
    const Onnx__AttributeProto *d = node_attr(v->n, "dilations");
    const Onnx__AttributeProto *p = node_attr(v->n, "pads");
    *out = (window){ .kernel = -1, .stride = 1, .dilation = 1 };
    if (k && (size_t)i < k->n_ints) {
        out->kernel = k->ints[i];
    } else if (v->n->n_input > 1) {
        dim_info dim = { 0 };
        bool ok = infer_dim(v->s, node_input(v->n, 1), 2 + i, &dim);
        if (ok && dim.known && !dim.param)
            out->kernel = dim.value;
        dim_info_clear(&dim);
    }
    if (st && (size_t)i < st->n_ints)
        out->stride = st->ints[i];
    if (d && (size_t)i < d->n_ints)
        out->dilation = d->ints[i];
    if (p && (size_t)(i + spatial) < p->n_ints) {
        out->begin = p->ints[i];
        out->end = p->ints[i + spatial];
    }
    return out->kernel > 0 && out->stride > 0 && out->dilation > 0;
}

/* SAME_* padding along time, where it does not depend on the input size. */
static bool resolve_auto_pad(const node_view *v, window *win)
{
    char buf[16];
    const char *mode = node_attr_string(v->n, "auto_pad", buf, sizeof buf);
    if (!mode || !*mode || !strcmp(mode, "NOTSET"))
        return true;
    if (!strcmp(mode, "VALID")) {
        win->begin = win->end = 0;
        return true;
    }
    if (win->stride != 1)
        return false;
    int64_t total = (win->kernel - 1) * win->dilation;
    bool lower = !strcmp(mode, "SAME_LOWER");
    win->begin = lower ? total - total / 2 : total / 2;
    win->end = total - win->begin;
    return true;
}

static bool step_is_one(const scope *s, const Onnx__NodeProto *slice)
{
    int64_t *v = NULL;
    size_t n = 0;
    if (slice->n_input < 5 || !*node_input(slice, 4))
        return true;
    bool one = node_ints(s, slice, "", 4, &v, &n) && n == 1 && v[0] == 1;
    free(v);
    return one;
}

/* A Slice right after the node that drops the last `frames` frames along
 * `axis` (a TCN "chomp"), or NULL. */
static const Onnx__NodeProto *chomp_after(const node_view *v, int axis, int64_t frames)
{
    const scope *o;
    const value_entry *e = scope_lookup(v->s, node_output(v->n, 0), &o);
    if (!e || e->n_consumers != 1 || o != v->s)
        return NULL;
    const Onnx__NodeProto *c = o->graph->node[e->consumers[0]];
    int64_t *st = NULL, *en = NULL, *ax = NULL;
    size_t ns = 0, ne = 0, na = 0;
    bool ok = node_op_is(c, "Slice") && node_ints(v->s, c, "starts", 1, &st, &ns) &&
              node_ints(v->s, c, "ends", 2, &en, &ne) && ns == 1 && ne == 1 &&
              node_ints(v->s, c, "axes", 3, &ax, &na) && na == 1 && st[0] == 0 &&
              en[0] == -frames && step_is_one(v->s, c);
    int64_t r = ok ? infer_rank(v->s, node_input(v->n, 0)) : -1;
    ok = ok && (ax[0] < 0 ? ax[0] + r : ax[0]) == axis;
    free(st);
    free(en);
    free(ax);
    return ok ? c : NULL;
}

static void record_need(stream_walk *w, const node_view *v, const time_state *t, int64_t frames)
{
    stream_analysis *a = w->out;
    if (!grow((void **)&a->needs, a->n_needs, sizeof *a->needs)) {
        w->oom = true;
        return;
    }
    context_need need = { v->n, strdup(op_name(v->n)), strdup(str_or_empty(v->n->name)),
                          t->pad_front ? t->padded_by : NULL, t->axis, frames };
    if (!need.op || !need.name) {
        free(need.op);
        free(need.name);
        w->oom = true;
        return;
    }
    a->needs[a->n_needs++] = need;
}

/* Can a zero cache stand for the node's own padding? Pools that pad with
 * something else, or leave the padding out of their average, cannot. */
static const char *zero_cache_refused(const node_view *v, const window *win)
{
    if (!win->begin)
        return NULL;
    if (node_op_is(v->n, "MaxPool"))
        return "pads with -infinity along time, which a zero cache cannot reproduce";
    if (node_op_is(v->n, "AveragePool") && node_attr_int(v->n, "count_include_pad", 0) == 0)
        return "leaves its padding out of the average (count_include_pad=0), which a cache "
               "cannot reproduce";
    return NULL;
}

static void classify_window(stream_walk *w, const node_view *v, const time_state *t, window win)
{
    int64_t span = (win.kernel - 1) * win.dilation;
    int64_t begin = win.begin + t->pad_front, end = win.end + t->pad_back;
    time_state out = *t;
    out.pad_front = out.pad_back = 0;
    out.front_cached = false;
    out.scale = t->scale * win.stride;
    if (begin < span) {
        int64_t ahead = span - begin;
        block(w, v->s, v->n, false, "looks %lld frame%s ahead: pads %lld,%lld along time "
              "(kernel %lld, dilation %lld)", (long long)ahead, ahead == 1 ? "" : "s",
              (long long)begin, (long long)end, (long long)win.kernel, (long long)win.dilation);
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    if (end > 0) {
        block(w, v->s, v->n, false, "adds %lld frame%s after the sequence: pads %lld,%lld along "
              "time", (long long)end, end == 1 ? "" : "s", (long long)begin, (long long)end);
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    if (begin > span) {
        block(w, v->s, v->n, false, "delays the sequence: pads %lld frames before a kernel "
              "that spans %lld", (long long)begin, (long long)(span + 1));
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    if (win.stride > 1)
        need_multiple(w, t->scale * win.stride);
    const char *refused = t->pad_front ? NULL : zero_cache_refused(v, &win);
    if (refused) {
        block(w, v->s, v->n, false, "%s", refused);
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    if (span && !t->front_cached) {
        if (v->s->parent || (t->pad_front && win.begin)) {
            block(w, v->s, v->n, false, "needs %lld frame(s) of the previous call, %s",
                  (long long)span, v->s->parent ? "inside a subgraph (not cached)"
                                                : "padded twice (not cached)");
            return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        }
        record_need(w, v, t, span);
    }
    set_outputs(w, v, out);
}

static void on_conv(stream_walk *w, const node_view *v)
{
    time_state t = v->in0;
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    if (t.axis == 0)
        return set_outputs(w, v, t); /* time in the batch: frame by frame */
    if (r < 3)
        return unknown_op(w, v, "the rank of its input is not known");
    if (t.kind == T_MERGED || t.axis == 1) {
        block(w, v->s, v->n, false, "mixes %s", t.axis == 1 ? "all frames (time is its channel axis)"
                                                         : "time merged with another axis");
        return set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    window win;
    int spatial = (int)r - 2, i = t.axis - 2;
    if (!window_along(v, i, spatial, &win))
        return unknown_op(w, v, "its kernel size along time is not known");
    if (!resolve_auto_pad(v, &win))
        return unknown_op(w, v, "auto_pad with a stride along time is not analysed");
    if (node_op_is(v->n, "ConvTranspose")) {
        if (win.kernel == 1 && win.stride == 1 && !win.begin && !win.end && !t.pad_front &&
            !t.pad_back)
            return set_outputs(w, v, t);
        return unknown_op(w, v, "a transposed convolution along time is not analysed");
    }
    if (win.end && win.stride == 1 && !t.pad_back) {
        const Onnx__NodeProto *chomp = chomp_after(v, t.axis, win.end);
        if (chomp) {
            w->oom |= !ptrmap_put(&w->chomps, chomp, 1);
            win.end = 0;
        }
    }
    if (node_attr_int(v->n, "ceil_mode", 0) && win.stride > 1)
        return unknown_op(w, v, "ceil_mode with a stride along time is not analysed");
    classify_window(w, v, &t, win);
}

static void on_global_pool(stream_walk *w, const node_view *v)
{
    if (v->in0.axis <= 1)
        return set_outputs(w, v, v->in0);
    block(w, v->s, v->n, false, "pools over the whole time axis");
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
}

/* ---- ops across axes -------------------------------------------------------------- */

static void whole_sequence(stream_walk *w, const node_view *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void whole_sequence(stream_walk *w, const node_view *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *reason = str_vformat(fmt, ap);
    va_end(ap);
    w->oom |= !reason;
    block(w, v->s, v->n, false, "%s", reason ? reason : "reads the whole sequence");
    free(reason);
    set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
}

static void on_matmul(stream_walk *w, const node_view *v)
{
    const char *a = node_input(v->n, 0), *b = node_input(v->n, 1);
    time_state ta = get_state(w, v->s, a), tb = get_state(w, v->s, b);
    int64_t ra = rank_of_value(v->s, a), rb = rank_of_value(v->s, b);
    bool gemm = node_op_is(v->n, "Gemm");
    if (carries_time(&tb))
        return whole_sequence(w, v, carries_time(&ta)
                                        ? "multiplies frames with frames (attention across time)"
                                        : "multiplies across the time axis");
    if (ra < 0 || (gemm && node_attr_int(v->n, "transA", 0)))
        return unknown_op(w, v, "the rank of its first input is not known");
    if (ta.axis == ra - 1)
        return whole_sequence(w, v, "sums over the time axis (%s)", op_name(v->n));
    int64_t out_rank = gemm ? 2 : (ra > rb ? ra : rb);
    set_outputs(w, v, moved(ta, (int)(ta.axis + out_rank - ra)));
}

/* Ops that work along one axis (attribute `axis`, default `fallback`). */
static void on_axis_op(stream_walk *w, const node_view *v, int64_t fallback, const char *what)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), a = node_attr_int(v->n, "axis", fallback);
    a = a < 0 && r >= 0 ? a + r : a;
    if (a < 0)
        return unknown_op(w, v, "the rank of its input is not known");
    if (a == v->in0.axis)
        return whole_sequence(w, v, "%s over the time axis", what);
    set_outputs(w, v, v->in0);
}

static void on_softmax(stream_walk *w, const node_view *v)
{
    if (w->opset >= 13)
        return on_axis_op(w, v, -1, "normalises");
    /* before opset 13: over every axis from `axis` (default 1) on */
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), a = node_attr_int(v->n, "axis", 1);
    a = a < 0 && r >= 0 ? a + r : a;
    if (v->in0.axis >= a)
        return whole_sequence(w, v, "normalises over the time axis");
    set_outputs(w, v, v->in0);
}

static void on_layer_norm(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), a = node_attr_int(v->n, "axis", -1);
    a = a < 0 && r >= 0 ? a + r : a;
    if (a < 0)
        return unknown_op(w, v, "the rank of its input is not known");
    if (v->in0.axis >= a)
        return whole_sequence(w, v, "normalises over axes that include time (axis %lld on)",
                              (long long)a);
    set_outputs(w, v, v->in0);
}

static void on_instance_norm(stream_walk *w, const node_view *v)
{
    bool group = node_op_is(v->n, "GroupNormalization");
    if (v->in0.axis >= (group ? 1 : 2))
        return whole_sequence(w, v, "%s normalisation over time", group ? "group" : "instance");
    set_outputs(w, v, v->in0);
}

static void on_reduce(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *axes = NULL;
    size_t n = 0;
    bool all = !axes_of(v, r, &axes, &n) || n == 0;
    if (all && node_attr_int(v->n, "noop_with_empty_axes", 0))
        return set_outputs(w, v, v->in0);
    int before = 0;
    bool hit = all;
    for (size_t i = 0; i < n; i++) {
        hit |= axes[i] == v->in0.axis;
        before += axes[i] < v->in0.axis;
    }
    free(axes);
    if (hit) {
        char op[32];
        snprintf(op, sizeof op, "%s", op_name(v->n) + 6); /* "ReduceMean" -> "mean" */
        op[0] = (char)(op[0] >= 'A' && op[0] <= 'Z' ? op[0] - 'A' + 'a' : op[0]);
        return whole_sequence(w, v, "%s over the time axis", *op ? op : "reduces");
    }
    set_outputs(w, v, moved(v->in0, node_attr_int(v->n, "keepdims", 1) ? v->in0.axis
                                                                       : v->in0.axis - before));
}

static void on_cumsum(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *a = NULL;
    size_t n = 0;
    if (!const_ints(v->s, node_input(v->n, 1), &a, &n) || n != 1)
        return unknown_op(w, v, "its axis is not constant");
    int64_t axis = a[0] < 0 ? a[0] + r : a[0];
    free(a);
    if (axis == v->in0.axis)
        return whole_sequence(w, v, "running sums across time (CumSum) are not carried");
    set_outputs(w, v, v->in0);
}

static void on_resize(stream_walk *w, const node_view *v)
{
    const scope *s = v->s;
    const Onnx__TensorProto *t =
        v->n->n_input > 2 ? scope_tensor_data(s, constant_tensor(s, node_input(v->n, 2))) : NULL;
    float scale = 0;
    if (t && t->n_float_data > (size_t)v->in0.axis)
        scale = t->float_data[v->in0.axis];
    else if (t && t->has_raw_data && t->raw_data.len >= 4 * ((size_t)v->in0.axis + 1))
        memcpy(&scale, t->raw_data.data + 4 * v->in0.axis, sizeof scale);
    if (scale == 1.0f)
        return set_outputs(w, v, v->in0);
    whole_sequence(w, v, "resamples along time");
}

/* ---- recurrent nodes ------------------------------------------------------------------ */

static void on_recurrent(stream_walk *w, const node_view *v, const recurrent_op *op)
{
    bool batch_first = recurrent_batch_first(op, v->n);
    int seq = batch_first ? 1 : 0, batch = batch_first ? 0 : 1;
    time_state t = v->in0, y = t, h = t;
    char buf[32];
    const char *dir = node_attr_string(v->n, "direction", buf, sizeof buf);
    if (t.axis == seq && t.kind == T_AXIS) {
        if (dir && strcmp(dir, "forward"))
            return whole_sequence(w, v, "%s %s: its backward direction reads the sequence from "
                                        "its end",
                                  strcmp(dir, "reverse") ? "bidirectional" : "reverse", op->name);
        w->oom |= !ptrmap_put(&w->out->classes, v->n, STREAM_ALONG_TIME);
        y.axis = batch_first ? 1 : 0;
        set_state(w, v->s, node_output(v->n, 0), y);
        for (size_t i = 1; i < v->n->n_output; i++)
            set_state(w, v->s, node_output(v->n, i), (time_state){ .kind = T_NONE });
        return;
    }
    if (t.axis != batch)
        return whole_sequence(w, v, "mixes time into its features");
    w->oom |= !ptrmap_put(&w->out->classes, v->n, STREAM_PER_FRAME);
    y.axis = batch_first ? 0 : 2; /* Y is [T, D, B, H] or [B, T, D, H] */
    h.axis = batch_first ? 0 : 1; /* Y_h is [D, B, H] or [B, D, H] */
    set_state(w, v->s, node_output(v->n, 0), y);
    for (size_t i = 1; i < v->n->n_output; i++)
        set_state(w, v->s, node_output(v->n, i), h);
}

/* ---- the op table ------------------------------------------------------------------------ */

typedef void (*node_handler)(stream_walk *w, const node_view *v);

static void on_argmax(stream_walk *w, const node_view *v) { on_axis_op(w, v, 0, "picks"); }
static void on_lp_norm(stream_walk *w, const node_view *v) { on_axis_op(w, v, -1, "normalises"); }
static void on_topk(stream_walk *w, const node_view *v) { on_axis_op(w, v, -1, "sorts"); }
static void on_shape_only(stream_walk *w, const node_view *v)
{
    set_outputs(w, v, (time_state){ .kind = T_NONE });
}
static void on_tile(stream_walk *w, const node_view *v)
{
    int64_t *rep = NULL;
    size_t n = 0;
    bool once = const_ints(v->s, node_input(v->n, 1), &rep, &n) && (size_t)v->in0.axis < n &&
                rep[v->in0.axis] == 1;
    free(rep);
    if (!once)
        return whole_sequence(w, v, "repeats the sequence along time");
    set_outputs(w, v, v->in0);
}
static void on_range(stream_walk *w, const node_view *v)
{
    whole_sequence(w, v, "counts positions along the sequence");
}
static void on_mvn(stream_walk *w, const node_view *v)
{
    whole_sequence(w, v, "normalises over the time axis");
}
static void on_lrn(stream_walk *w, const node_view *v)
{
    if (v->in0.axis == 1)
        return whole_sequence(w, v, "normalises across neighbouring frames");
    set_outputs(w, v, v->in0);
}

typedef struct op_entry {
    const char *op;
    node_handler handle;
} op_entry;

static const op_entry op_table[] = {
    /* frame-wise, elementwise */
    { "Identity", on_elementwise }, { "Cast", on_elementwise }, { "Dropout", on_elementwise },
    { "Relu", on_elementwise }, { "LeakyRelu", on_elementwise }, { "PRelu", on_elementwise },
    { "Elu", on_elementwise }, { "Selu", on_elementwise }, { "Celu", on_elementwise },
    { "Sigmoid", on_elementwise }, { "HardSigmoid", on_elementwise }, { "Tanh", on_elementwise },
    { "Softplus", on_elementwise }, { "Softsign", on_elementwise }, { "Abs", on_elementwise },
    { "Neg", on_elementwise }, { "Exp", on_elementwise }, { "Log", on_elementwise },
    { "Sqrt", on_elementwise }, { "Reciprocal", on_elementwise }, { "Clip", on_elementwise },
    { "Erf", on_elementwise }, { "Gelu", on_elementwise }, { "HardSwish", on_elementwise },
    { "Mish", on_elementwise }, { "Not", on_elementwise }, { "Floor", on_elementwise },
    { "Ceil", on_elementwise }, { "Round", on_elementwise }, { "Sign", on_elementwise },
    { "Sin", on_elementwise }, { "Cos", on_elementwise }, { "Tan", on_elementwise },
    { "Atan", on_elementwise }, { "IsNaN", on_elementwise }, { "IsInf", on_elementwise },
    { "ThresholdedRelu", on_elementwise }, { "Shrink", on_elementwise },
    { "BatchNormalization", on_elementwise }, { "QuantizeLinear", on_elementwise },
    { "DequantizeLinear", on_elementwise }, { "Add", on_elementwise },
    { "Sub", on_elementwise }, { "Mul", on_elementwise }, { "Div", on_elementwise },
    { "Pow", on_elementwise }, { "Max", on_elementwise }, { "Min", on_elementwise },
    { "Sum", on_elementwise }, { "Mean", on_elementwise }, { "Where", on_elementwise },
    { "Equal", on_elementwise }, { "Greater", on_elementwise }, { "Less", on_elementwise },
    { "GreaterOrEqual", on_elementwise }, { "LessOrEqual", on_elementwise },
    { "And", on_elementwise }, { "Or", on_elementwise }, { "Xor", on_elementwise },
    { "Mod", on_elementwise },
    /* layout */
    { "Transpose", on_transpose }, { "Reshape", on_reshape }, { "Flatten", on_flatten },
    { "Squeeze", on_squeeze }, { "Unsqueeze", on_unsqueeze }, { "Concat", on_concat },
    { "Split", on_split }, { "Slice", on_slice }, { "Gather", on_gather },
    { "Expand", on_expand }, { "Tile", on_tile }, { "Pad", on_pad }, { "Resize", on_resize },
    { "Shape", on_shape_only }, { "Size", on_shape_only }, { "ConstantOfShape", on_shape_only },
    { "Range", on_range },
    /* over features, or across time */
    { "MatMul", on_matmul }, { "Gemm", on_matmul }, { "Softmax", on_softmax },
    { "LogSoftmax", on_softmax }, { "Hardmax", on_softmax },
    { "LayerNormalization", on_layer_norm }, { "InstanceNormalization", on_instance_norm },
    { "GroupNormalization", on_instance_norm }, { "LpNormalization", on_lp_norm },
    { "MeanVarianceNormalization", on_mvn }, { "LRN", on_lrn },
    { "ReduceMax", on_reduce }, { "ReduceMin", on_reduce },
    { "ReduceMean", on_reduce }, { "ReduceSum", on_reduce },
    { "ReduceProd", on_reduce }, { "ReduceL1", on_reduce },
    { "ReduceL2", on_reduce }, { "ReduceLogSum", on_reduce },
    { "ReduceLogSumExp", on_reduce }, { "ReduceSumSquare", on_reduce },
    { "ArgMax", on_argmax }, { "ArgMin", on_argmax }, { "TopK", on_topk },
    { "CumSum", on_cumsum },
    /* windows along the spatial axes */
    { "Conv", on_conv }, { "ConvTranspose", on_conv }, { "AveragePool", on_conv },
    { "MaxPool", on_conv }, { "LpPool", on_conv }, { "GlobalAveragePool", on_global_pool },
    { "GlobalMaxPool", on_global_pool }, { "GlobalLpPool", on_global_pool },
};

static node_handler handler_of(const Onnx__NodeProto *n)
{
    if (!node_default_domain(n))
        return NULL;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (node_op_is(n, op_table[i].op))
            return op_table[i].handle;
    return NULL;
}

/* ---- the walk ------------------------------------------------------------------------------ */

static bool subgraph_reads_time(stream_walk *w, const scope *s, const Onnx__GraphProto *g);

typedef struct subgraph_probe {
    stream_walk *w;
    const scope *s;
    bool time;
} subgraph_probe;

static bool probe_subgraph(const Onnx__GraphProto *g, void *ctx)
{
    subgraph_probe *p = ctx;
    p->time |= subgraph_reads_time(p->w, p->s, g);
    return true;
}

/* Does a subgraph read (at any depth) a value of `s` that carries time? */
static bool subgraph_reads_time(stream_walk *w, const scope *s, const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            time_state t = get_state(w, s, node_input(n, k));
            if (carries_time(&t))
                return true;
        }
        subgraph_probe probe = { w, s, false };
        for_each_subgraph(n, probe_subgraph, &probe);
        if (probe.time)
            return true;
    }
    return false;
}

static bool has_subgraph(const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->g || n->attribute[i]->n_graphs)
            return true;
    return false;
}

static void visit_node(stream_walk *w, const scope *s, const Onnx__NodeProto *n)
{
    node_view v = { .s = s, .n = n };
    bool unknown_input = false;
    for (size_t i = 0; i < n->n_input; i++) {
        time_state t = get_state(w, s, node_input(n, i));
        if (!carries_time(&t))
            continue;
        if (!v.time_inputs++ || i == 0)
            v.in0 = t; /* input 0's, else the first that carries time */
        unknown_input |= t.kind == T_UNKNOWN;
    }
    if (has_subgraph(n)) {
        subgraph_probe probe = { w, s, false };
        for_each_subgraph(n, probe_subgraph, &probe);
        if (probe.time || v.time_inputs)
            return unknown_op(w, &v, "a subgraph op on time-carrying values is not analysed");
        return;
    }
    if (!v.time_inputs)
        return; /* nothing here varies along time */
    if (unknown_input)
        return set_outputs(w, &v, (time_state){ .kind = T_UNKNOWN });
    const recurrent_op *op = recurrent_op_of(n);
    if (op)
        return on_recurrent(w, &v, op);
    node_handler h = handler_of(n);
    if (!h) {
        char why[160];
        snprintf(why, sizeof why, "the analysis does not know how %.64s treats the time axis",
                 op_name(n));
        return unknown_op(w, &v, why);
    }
    /* a Slice may keep the last frames of a cache Concat (the model's own cache) */
    bool window = h == on_conv || h == on_pad || h == on_slice;
    if (!window && refuse_padded(w, &v, &v.in0))
        return;
    bool first_is_time = carries_time(&(time_state){ .kind = get_state(w, s, node_input(n, 0)).kind });
    if (!first_is_time && h != on_elementwise && h != on_matmul && h != on_concat)
        return unknown_op(w, &v, "time reaches it through an input other than its first");
    h(w, &v);
}

/* Main-graph outputs must carry time intact (or not at all). */
static void check_outputs(stream_walk *w, const scope *main_scope)
{
    const Onnx__GraphProto *g = main_scope->graph;
    for (size_t i = 0; i < g->n_output; i++) {
        time_state t = get_state(w, main_scope, str_or_empty(g->output[i]->name));
        if (t.kind == T_MERGED && t.merged_by)
            block(w, main_scope, t.merged_by, false,
                  "merges time with another axis for good (output '%s')",
                  str_or_empty(g->output[i]->name));
        else if ((t.pad_front || t.pad_back) && t.padded_by && !t.front_cached)
            block(w, main_scope, t.padded_by, false, "adds frames along time to output '%s'",
                  str_or_empty(g->output[i]->name));
    }
}

static void seed_sources(stream_walk *w, const scope *main_scope,
                         const rnnstate_time_axis *sources, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *name = sources[i].input;
        time_state t = { .kind = T_AXIS, .axis = (int)sources[i].axis, .scale = 1 };
        set_state(w, main_scope, name, t);
    }
}

bool stream_analyse(const scope_tree *tree, int64_t opset, const rnnstate_time_axis *sources,
                    size_t n_sources, stream_analysis *out)
{
    memset(out, 0, sizeof *out);
    out->classes = (ptrmap)PTRMAP_INIT;
    out->chunk_multiple = 1;
    if (!n_sources || !tree->n)
        return true;
    out->analysed = true;
    stream_walk w = { .tree = tree, .opset = opset, .out = out, .symbols = STRMAP_INIT,
                      .chomps = PTRMAP_INIT };
    const scope *main_scope = tree->scopes[0];
    seed_sources(&w, main_scope, sources, n_sources);
    for (size_t k = 0; !w.oom && k < main_scope->graph->n_node; k++) {
        visit_node(&w, main_scope, main_scope->graph->node[k]);
    }
    if (!w.oom)
        check_outputs(&w, main_scope);
    strmap_free(&w.symbols);
    ptrmap_free(&w.chomps);
    if (w.oom)
        stream_analysis_free(out);
    return !w.oom;
}

void stream_analysis_free(stream_analysis *a)
{
    for (size_t i = 0; i < a->n_blockers; i++) {
        free(a->blockers[i].graph);
        free(a->blockers[i].op);
        free(a->blockers[i].name);
        free(a->blockers[i].reason);
    }
    for (size_t i = 0; i < a->n_needs; i++) {
        free(a->needs[i].op);
        free(a->needs[i].name);
    }
    free(a->blockers);
    free(a->needs);
    ptrmap_free(&a->classes);
    memset(a, 0, sizeof *a);
}
