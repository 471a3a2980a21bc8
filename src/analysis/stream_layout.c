/* Frame-wise and layout ops along the time axis (analysis/stream_walk.h):
 * elementwise and broadcasting ops, Transpose, Squeeze, Unsqueeze, Reshape,
 * Flatten, Concat, Split, Slice, Gather, Expand, Pad. Each moves the time
 * axis (or keeps it, merges it, or blocks the stream) for its outputs. */
#include "analysis/stream_walk.h"

#include <stdlib.h>
#include <string.h>

#include "model/tensor_util.h"

time_state time_moved(time_state t, int axis)
{
    t.axis = axis;
    return t;
}

/* Elementwise and broadcasting ops: the time axis keeps its place counted
 * from the last axis. */
#define RANKS_KEPT 8 /* inputs whose ranks on_elementwise keeps (Sum may have more) */

void on_elementwise(stream_walk *w, const node_view *v)
{
    int64_t out_rank = -1, ranks[RANKS_KEPT];
    for (size_t i = 0; i < v->n->n_input; i++) {
        int64_t r = view_rank(v, i);
        if (i < RANKS_KEPT)
            ranks[i] = r;
        out_rank = r > out_rank ? r : out_rank;
    }
    time_state out = { .kind = T_NONE };
    for (size_t i = 0; i < v->n->n_input; i++) {
        time_state t = view_state(v, i);
        if (!carries_time(&t))
            continue;
        int64_t r = i < RANKS_KEPT ? ranks[i] : view_rank(v, i);
        if (r < 0 || out_rank < 0) {
            unknown_op(w, v, "the ranks of its inputs are not known");
            return;
        }
        time_state here = time_moved(t, (int)(t.axis + out_rank - r));
        if (out.kind != T_NONE && out.axis != here.axis) {
            unknown_op(w, v, "its inputs carry time on different axes");
            return;
        }
        if (out.kind == T_NONE || here.pad_front || here.pad_back)
            out = here;
        out.scale = t.scale > out.scale ? t.scale : out.scale;
    }
    set_outputs(w, v, out);
}

void on_transpose(stream_walk *w, const node_view *v)
{
    time_state t = v->in0;
    const Onnx__AttributeProto *perm = node_attr(v->n, "perm");
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    if (!perm || !perm->n_ints) {
        if (r < 0) {
            unknown_op(w, v, "the rank of its input is not known");
            return;
        }
        set_outputs(w, v, time_moved(t, (int)(r - 1 - t.axis)));
        return;
    }
    for (size_t i = 0; i < perm->n_ints; i++)
        if (perm->ints[i] == t.axis) {
            set_outputs(w, v, time_moved(t, (int)i));
            return;
        }
    unknown_op(w, v, "its perm does not name the time axis");
}

bool axes_of(const node_view *v, int64_t rank, int64_t **axes, size_t *n)
{
    if (!node_ints(v->s, v->n, "axes", 1, axes, n))
        return false;
    for (size_t i = 0; i < *n; i++)
        (*axes)[i] = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
    return true;
}

void on_squeeze(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *axes = NULL;
    size_t n = 0;
    if (r < 0 || !axes_of(v, r, &axes, &n)) {
        unknown_op(w, v, "its axes or the rank of its input are not known");
        return;
    }
    int before = 0;
    bool hit = false;
    for (size_t i = 0; i < n; i++) {
        hit |= axes[i] == v->in0.axis;
        before += axes[i] < v->in0.axis;
    }
    free(axes);
    if (hit) {
        stream_block(w, v->s, v->n, false, "removes the time axis");
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    set_outputs(w, v, time_moved(v->in0, v->in0.axis - before));
}

void on_unsqueeze(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *axes = NULL;
    size_t n = 0;
    if (r < 0 || !node_ints(v->s, v->n, "axes", 1, &axes, &n)) {
        unknown_op(w, v, "its axes or the rank of its input are not known");
        return;
    }
    int64_t out_rank = r + (int64_t)n, axis = 0, in_axis = 0;
    for (; axis < out_rank; axis++) {
        bool inserted = false;
        for (size_t i = 0; i < n; i++)
            inserted |= (axes[i] < 0 ? axes[i] + out_rank : axes[i]) == axis;
        if (!inserted && in_axis++ == v->in0.axis)
            break;
    }
    free(axes);
    set_outputs(w, v, time_moved(v->in0, (int)axis));
}

void on_reshape(stream_walk *w, const node_view *v)
{
    const char *x = node_input(v->n, 0);
    shape_expr out;
    if (!shape_of(w, v->s, node_input(v->n, 1), &out, 0)) {
        unknown_op(w, v, "its target shape is computed in a way the analysis cannot follow");
        return;
    }
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
    remember_shape(w, v->s, node_output(v->n, 0), &out);
    time_state t = locate_time(&v->in0, before_time(w, v->s, x, &v->in0), &out, v->n);
    if (t.kind == T_UNKNOWN) {
        unknown_op(w, v, "the time axis cannot be followed through this Reshape");
        return;
    }
    set_outputs(w, v, t);
}

void on_flatten(stream_walk *w, const node_view *v)
{
    const char *x = node_input(v->n, 0);
    int64_t r = rank_of_value(v->s, x), k = node_attr_int(v->n, "axis", 1);
    k = k < 0 ? k + r : k;
    if (r < 0) {
        unknown_op(w, v, "the rank of its input is not known");
        return;
    }
    shape_expr out = { .n = 2, .v = { mono_int(1), mono_int(1) } };
    for (int64_t i = 0; i < r; i++)
        out.v[i < k ? 0 : 1] = mono_mul(out.v[i < k ? 0 : 1],
                                        v->in0.kind == T_AXIS && i == v->in0.axis
                                            ? mono_sym(SYM_TIME)
                                            : dim_mono(w, v->s, x, i));
    time_state t = locate_time(&v->in0, before_time(w, v->s, x, &v->in0), &out, v->n);
    if (t.kind == T_UNKNOWN) {
        unknown_op(w, v, "the time axis cannot be followed through this Flatten");
        return;
    }
    set_outputs(w, v, t);
}

/* Concat along time: the model's own cache (a state input put in front of
 * the frames) when every other operand does not vary along time. */
void on_concat(stream_walk *w, const node_view *v)
{
    time_state t = { .kind = T_NONE };
    const char *first = NULL;
    for (size_t i = 0; i < v->n->n_input && t.kind == T_NONE; i++) {
        t = get_state(w, v->s, node_input(v->n, i));
        first = node_input(v->n, i);
    }
    int64_t r = rank_of_value(v->s, first), c = node_attr_int(v->n, "axis", 0);
    c = c < 0 && r >= 0 ? c + r : c;
    if (c != t.axis || t.kind != T_AXIS) {
        set_outputs(w, v, t);
        return;
    }
    int64_t cached = 0;
    for (size_t i = 0; i < v->n->n_input; i++) {
        const char *in = node_input(v->n, i);
        time_state o = get_state(w, v->s, in);
        if (o.kind != T_NONE && in != first) {
            unknown_op(w, v, "joins several sequences along time");
            return;
        }
        dim_info d = { 0 };
        if (o.kind == T_NONE && (!infer_dim(v->s, in, c, &d) || !d.known || d.param)) {
            dim_info_clear(&d);
            unknown_op(w, v, "puts frames of unknown length before the time axis");
            return;
        }
        cached += o.kind == T_NONE ? d.value : 0;
        if (o.kind == T_NONE && in == node_input(v->n, v->n->n_input - 1)) {
            unknown_op(w, v, "appends frames after the time axis");
            return;
        }
    }
    t.pad_front += cached;
    t.front_cached = true;
    set_outputs(w, v, t);
}

void on_split(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), c = node_attr_int(v->n, "axis", 0);
    c = c < 0 && r >= 0 ? c + r : c;
    if (c == v->in0.axis) {
        stream_block(w, v->s, v->n, false, "splits the sequence along time");
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    set_outputs(w, v, v->in0);
}

static bool listed_chomp(const stream_walk *w, const Onnx__NodeProto *n)
{
    size_t unused;
    return ptrmap_get(&w->chomps, n, &unused);
}

void on_slice(stream_walk *w, const node_view *v)
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
        stream_block(w, v->s, v->n, false, "takes frames %lld to %lld of the sequence",
              (long long)st[along], (long long)en[along]);
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
    }
    free(axes);
    free(st);
    free(en);
}

void on_gather(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), g = node_attr_int(v->n, "axis", 0);
    int64_t q = rank_of_value(v->s, node_input(v->n, 1));
    g = g < 0 && r >= 0 ? g + r : g;
    if (g == v->in0.axis) {
        stream_block(w, v->s, v->n, false, "picks frames out of the sequence (Gather along time)");
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    if (v->in0.axis > g && q < 0) {
        unknown_op(w, v, "the rank of its indices is not known");
        return;
    }
    set_outputs(w, v, time_moved(v->in0, (int)(v->in0.axis < g ? v->in0.axis : v->in0.axis - 1 + q)));
}

void on_expand(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0));
    int64_t out_rank = rank_of_value(v->s, node_output(v->n, 0));
    shape_expr sh;
    if (out_rank < 0 && shape_of(w, v->s, node_input(v->n, 1), &sh, 0))
        out_rank = (int64_t)sh.n;
    if (r < 0 || out_rank < 0) {
        unknown_op(w, v, "the rank of its output is not known");
        return;
    }
    out_rank = out_rank > r ? out_rank : r;
    set_outputs(w, v, time_moved(v->in0, (int)(v->in0.axis + out_rank - r)));
}

void on_pad(stream_walk *w, const node_view *v)
{
    int64_t r = rank_of_value(v->s, node_input(v->n, 0)), *pads = NULL, *axes = NULL;
    size_t n = 0, na = 0;
    if (r < 0 || !(node_ints(v->s, v->n, "pads", 1, &pads, &n) ||
                   fold_int64s(v->s, node_input(v->n, 1), &pads, &n))) {
        unknown_op(w, v, "its pads are not constant");
        return;
    }
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
        stream_block(w, v->s, v->n, false, "pads along time with %s values (%lld before, %lld after)",
              mode, (long long)front, (long long)back);
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    const Onnx__TensorProto *fill =
        v->n->n_input > 2 ? scope_tensor_data(v->s, constant_tensor(v->s, node_input(v->n, 2)))
                          : NULL;
    if ((front || back) && fill && !tensor_is_zero(fill)) {
        stream_block(w, v->s, v->n, false, "pads along time with a value other than zero");
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    if (front < 0 || back < 0) {
        stream_block(w, v->s, v->n, false, "crops frames along time");
        set_outputs(w, v, (time_state){ .kind = T_UNKNOWN });
        return;
    }
    t.pad_front += front;
    t.pad_back += back;
    if (front || back)
        t.padded_by = v->n;
    set_outputs(w, v, t);
}
