/* The context-cache pass: each causal convolution or pool along time that
 * the stream analysis found (analysis/stream.h, main graph only) reads, in
 * place of its zero padding, the last frames of its input from the previous
 * call:
 *
 *     joined    = Concat(cache, X) along time      (cache: a new graph input)
 *     cache_out = Slice(joined, -frames:) along time (a new graph output)
 *     node reads joined, with no padding before the frames along time
 *
 * where X is the node's input, or the input of the zero Pad that padded it
 * (the Pad keeps its other padding). A first call with a zero cache gives
 * exactly the original's zero padding. In optional mode the cache input gets
 * a default of zeros of size 1 in every axis but time, broadcast by an
 * Expand to X's shape (with `frames` along time), so the caller may leave it
 * out at any batch. The pair is reported as a state pair of kind context. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/shape.h"
#include "passes/passes.h"
#include "state/types.h"
#include "model/tensor_util.h"
#include "util/arena.h"

#define MAX_RANK 8

typedef struct cache_job {
    rewrite_ctx *ctx;
    scope *main_scope;
    const context_need *need;
    Onnx__NodeProto *target; /* the Pad, or the node */
    size_t before;           /* where new nodes go */
    const char *x;           /* the input the cache goes in front of (until rewired) */
    bool cacheable;          /* measured: rank, type and dims known */
    int64_t rank;
    int32_t elem_type;
    dim_info dims[MAX_RANK];
    char *names[2];          /* cache input, cache output */
} cache_job;

static char *fresh(cache_job *j, const char *what)
{
    char base[160];
    snprintf(base, sizeof base, "%s_%s", j->need->name, what);
    return name_registry_unique(&j->ctx->names, base);
}

static Onnx__TensorProto *int64_tensor(const char *name, const int64_t *v, size_t n)
{
    int64_t dims[1] = { (int64_t)n };
    Onnx__TensorProto *t = tensor_shell_new(name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, dims, 1);
    int64_t *data = t ? malloc((n ? n : 1) * sizeof *data) : NULL;
    if (!data) {
        if (t)
            arena_message_free(&t->base);
        return NULL;
    }
    memcpy(data, v, n * sizeof *v);
    t->int64_data = data;
    t->n_int64_data = n;
    return t;
}

/* A new initializer holding `v`; its name, owned by the graph. */
static const char *add_int64s(cache_job *j, const char *what, const int64_t *v, size_t n)
{
    char *name = fresh(j, what);
    Onnx__TensorProto *t = name ? int64_tensor(name, v, n) : NULL;
    free(name);
    return t && scope_add_initializer(j->main_scope, t) ? t->name : NULL;
}

/* A node `op` with inputs `in` and one new output (returned, owned by the node). */
static const char *add_node(cache_job *j, const char *op, const char *what, const char *const *in,
                            size_t n_in, int64_t axis)
{
    char *name = fresh(j, what);
    Onnx__NodeProto *node = name ? node_new(op, name) : NULL;
    bool ok = node && append_string(&node->output, &node->n_output, name);
    for (size_t i = 0; ok && i < n_in; i++)
        ok = append_string(&node->input, &node->n_input, in[i]);
    if (ok && axis != INT64_MIN)
        ok = node_add_int_attr(node, "axis", axis);
    free(name);
    if (!ok) {
        if (node)
            arena_message_free(&node->base);
        return NULL;
    }
    return scope_queue_node(j->main_scope, j->before, node) ? node->output[0] : NULL;
}

/* A zero initializer named `name` of shape dims[rank]; false when out of
 * memory (or the size overflows). */
static bool add_zeros(cache_job *j, const char *name, const int64_t *dims, size_t rank)
{
    size_t count = 1;
    if (!shape_element_count(dims, rank, &count))
        return false;
    Onnx__TensorProto *zeros = tensor_shell_new(name, j->elem_type, dims, rank);
    size_t bytes = dtype_size(j->elem_type) * count;
    unsigned char *raw = zeros ? calloc(1, bytes ? bytes : 1) : NULL;
    if (!raw) {
        if (zeros)
            arena_message_free(&zeros->base);
        return false;
    }
    zeros->has_raw_data = true;
    zeros->raw_data = (ProtobufCBinaryData){ bytes, raw };
    return scope_add_initializer(j->main_scope, zeros);
}

/* How the cache's default is built (optional mode). */
typedef enum default_kind {
    DEFAULT_FULL,   /* every dimension fixed: zeros of the cache's shape */
    DEFAULT_EMPTY,  /* a dynamic batch (axis 0), the rest fixed: empty, completed at run time */
    DEFAULT_EXPAND  /* other dynamic dimensions: size 1 there, expanded to X's */
} default_kind;

static default_kind default_kind_of(const cache_job *j)
{
    bool others_fixed = true;
    for (int64_t i = 1; i < j->rank; i++)
        others_fixed &= i == j->need->time_axis || (j->dims[i].known && !j->dims[i].param);
    bool batch_fixed = j->dims[0].known && !j->dims[0].param;
    return !others_fixed ? DEFAULT_EXPAND : batch_fixed ? DEFAULT_FULL : DEFAULT_EMPTY;
}

/* The cache's dimensions for its default: fixed ones as they are, `frames`
 * along time, `batch` at axis 0 when it is dynamic, 1 where others are. */
static void default_dims(const cache_job *j, int64_t batch, int64_t dims[MAX_RANK])
{
    for (int64_t i = 0; i < j->rank; i++) {
        const dim_info *d = &j->dims[i];
        dims[i] = i == j->need->time_axis ? j->need->frames
                  : d->known && !d->param ? d->value
                  : i == 0                ? batch
                                          : 1;
    }
}

/* X's shape with `frames` along time: the shape of a full cache. */
static const char *cache_shape(cache_job *j, const char *first)
{
    int64_t t = j->need->time_axis, frames = j->need->frames, one = 1, after = t + 1,
            end = INT64_MAX;
    const char *shape = add_node(j, "Shape", "shape", &j->x, 1, INT64_MIN);
    const char *c1 = add_int64s(j, "one", &one, 1), *ct = add_int64s(j, "time", &t, 1);
    const char *ca = add_int64s(j, "after", &after, 1), *ce = add_int64s(j, "end", &end, 1);
    const char *cf = add_int64s(j, "frames", &frames, 1);
    if (!shape || !c1 || !ct || !ca || !ce || !cf)
        return NULL;
    int64_t zero = 0;
    const char *c0 = first ? NULL : add_int64s(j, "start", &zero, 1);
    if (!first && !c0)
        return NULL;
    /* [first or X's axis 0] + X's axes 1 .. t-1 + [frames] + X's axes after t */
    const char *head0_in[] = { shape, c0, c1 }, *mid_in[] = { shape, c1, ct },
               *tail_in[] = { shape, ca, ce };
    const char *head0 = first ? first : add_node(j, "Slice", "batch", head0_in, 3, INT64_MIN);
    const char *mid = head0 ? add_node(j, "Slice", "middle", mid_in, 3, INT64_MIN) : NULL;
    const char *tail = mid ? add_node(j, "Slice", "tail", tail_in, 3, INT64_MIN) : NULL;
    const char *parts[] = { head0, mid, cf, tail };
    return tail ? add_node(j, "Concat", "cache_shape", parts, 4, 0) : NULL;
}

/* DEFAULT_EMPTY: the default has batch 0; the node reads
 *   Concat(cache, Expand(0, [batch(cache) == 0 ? B : 0, ..., frames, ...]), axis 0)
 * so an absent cache is zeros at X's batch B, a cache fed with batch B is
 * used as given, and one fed with another batch reaches the node with it,
 * which the runtime refuses: never broadcast to every stream. */
static const char *empty_default(cache_job *j)
{
    int64_t dims[MAX_RANK], zero = 0;
    default_dims(j, 0, dims);
    char *fill_name = fresh(j, "fill");
    bool ok = fill_name && add_zeros(j, j->names[0], dims, (size_t)j->rank) &&
              add_zeros(j, fill_name, dims, 0); /* a scalar zero of the cache's type */
    const char *c0 = ok ? add_int64s(j, "batch_axis", &zero, 1) : NULL;
    const char *xshape = c0 ? add_node(j, "Shape", "x_shape", &j->x, 1, INT64_MIN) : NULL;
    const char *xb_in[] = { xshape, c0 };
    const char *xb = xshape ? add_node(j, "Gather", "x_batch", xb_in, 2, INT64_MIN) : NULL;
    const char *given = j->names[0];
    const char *cshape = xb ? add_node(j, "Shape", "given_shape", &given, 1, INT64_MIN) : NULL;
    const char *cb_in[] = { cshape, c0 };
    const char *cb = cshape ? add_node(j, "Gather", "given_batch", cb_in, 2, INT64_MIN) : NULL;
    const char *absent_in[] = { cb, c0 };
    const char *absent = cb ? add_node(j, "Equal", "absent", absent_in, 2, INT64_MIN) : NULL;
    const char *n_in[] = { absent, xb, c0 };
    const char *n = absent ? add_node(j, "Where", "fill_batch", n_in, 3, INT64_MIN) : NULL;
    const char *shape = n ? cache_shape(j, n) : NULL;
    const char *filled_in[] = { fill_name, shape };
    const char *filled = shape ? add_node(j, "Expand", "filled", filled_in, 2, INT64_MIN) : NULL;
    const char *joined_in[] = { given, filled };
    const char *result = filled ? add_node(j, "Concat", "or_default", joined_in, 2, 0) : NULL;
    free(fill_name);
    return result;
}

/* Optional mode: the cache's default, and the value the node reads in its
 * place (the cache itself, or the cache completed at run time). */
static const char *with_default(cache_job *j)
{
    int64_t dims[MAX_RANK];
    default_dims(j, 1, dims);
    switch (default_kind_of(j)) {
    case DEFAULT_FULL:
        return add_zeros(j, j->names[0], dims, (size_t)j->rank) ? j->names[0] : NULL;
    case DEFAULT_EMPTY:
        return empty_default(j);
    default:
        break;
    }
    /* ONNX Runtime wants the input's fixed sizes; 1 broadcasts the others */
    const char *full = add_zeros(j, j->names[0], dims, (size_t)j->rank) ? cache_shape(j, NULL)
                                                                        : NULL;
    const char *expand_in[] = { j->names[0], full };
    return full ? add_node(j, "Expand", "cache_full", expand_in, 2, INT64_MIN) : NULL;
}

static bool declare_pair(cache_job *j)
{
    dim_info dims[MAX_RANK];
    memcpy(dims, j->dims, sizeof dims);
    dims[j->need->time_axis] = (dim_info){ .known = true, .value = j->need->frames };
    /* an empty default (batch 0) declares the input's batch unnamed: an equal
     * name would tell ONNX Runtime it is X's batch (state/defaults.c) */
    dim_info batch = dims[0];
    bool optional = j->ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL;
    if (optional && default_kind_of(j) == DEFAULT_EMPTY)
        dims[0] = (dim_info){ .known = false };
    Onnx__ValueInfoProto *in = value_info_new(j->names[0], j->elem_type, dims, (size_t)j->rank);
    dims[0] = batch;
    Onnx__ValueInfoProto *out = value_info_new(j->names[1], j->elem_type, dims, (size_t)j->rank);
    bool ok = in && out;
    if (ok) {
        ok = scope_add_input(j->main_scope, in);
        in = NULL;
        ok = scope_add_output(j->main_scope, out) && ok;
        out = NULL;
    }
    if (in)
        arena_message_free(&in->base);
    if (out)
        arena_message_free(&out->base);
    int batch_axis = dims[0].param || !dims[0].known ? 0 : -1;
    report_add_pair(&j->ctx->report, j->names[0], j->names[1], dims, (size_t)j->rank,
                    j->elem_type, batch_axis, optional, true, RNNSTATE_PAIR_CONTEXT);
    return ok;
}

/* The node (or its Pad) no longer pads before the frames along time. */
static bool drop_front_padding(cache_job *j)
{
    int64_t t = j->need->time_axis;
    if (!j->need->pad) {
        const Onnx__AttributeProto *pads = node_attr(j->target, "pads");
        size_t i = (size_t)(t - 2);
        if (pads && i < pads->n_ints)
            pads->ints[i] = 0;
        return true;
    }
    int64_t *pads = NULL;
    size_t n = 0;
    if (!fold_int64s(j->main_scope, node_input(j->target, 1), &pads, &n) ||
        (size_t)t >= n) {
        free(pads);
        return false;
    }
    pads[t] = 0;
    const char *name = add_int64s(j, "pads", pads, n);
    free(pads);
    return name && node_set_input(j->target, 1, name);
}

static bool build_cache(cache_job *j)
{
    const char *cache = j->names[0];
    if (j->ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL &&
        !(cache = with_default(j)))
        return false;
    int64_t neg = -j->need->frames, end = INT64_MAX, axis = j->need->time_axis;
    const char *joined_in[] = { cache, j->x };
    const char *joined = add_node(j, "Concat", "joined", joined_in, 2, axis);
    const char *cs = add_int64s(j, "keep", &neg, 1), *ce = add_int64s(j, "keep_end", &end, 1);
    const char *ca = add_int64s(j, "keep_axis", &axis, 1);
    if (!joined || !cs || !ce || !ca)
        return false;
    /* the output is named by the pair: a Slice writing it directly */
    Onnx__NodeProto *slice = node_new("Slice", j->names[1]);
    const char *in[] = { joined, cs, ce, ca };
    bool ok = slice && append_string(&slice->output, &slice->n_output, j->names[1]);
    for (size_t i = 0; ok && i < 4; i++)
        ok = append_string(&slice->input, &slice->n_input, in[i]);
    if (!ok) {
        if (slice)
            arena_message_free(&slice->base);
        return false;
    }
    return scope_queue_node(j->main_scope, j->before, slice) &&
           node_set_input(j->target, 0, joined) && drop_front_padding(j);
}

static size_t node_position(const Onnx__GraphProto *g, const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i] == n)
            return i;
    return SIZE_MAX;
}

/* Reads what the cache of `need` needs (its node, the input's rank, element
 * type and dimensions) into *j, before any cache changes the graph: a cache
 * rewires the input of a Pad or Conv that a later need's shapes are inferred
 * through. j->cacheable is false when the need cannot be cached (a blocker
 * is reported). False when out of memory. */
static bool measure(rewrite_ctx *ctx, const elem_types *types, const context_need *need,
                    cache_job *j)
{
    scope *main_scope = ctx->scopes.scopes[0];
    *j = (cache_job){ .ctx = ctx, .main_scope = main_scope, .need = need, .x = "" };
    j->target = (Onnx__NodeProto *)(need->pad ? need->pad : need->node);
    /* both still in the graph (found by address, before reading them) */
    j->before = node_position(main_scope->graph, j->target);
    bool present = j->before != SIZE_MAX && node_position(main_scope->graph, need->node) != SIZE_MAX;
    const char *x = present ? node_input(j->target, 0) : "";
    j->rank = present ? infer_rank(main_scope, x) : -1;
    j->elem_type = present ? elem_type_of(types, main_scope, x) : 0;
    if (!present || j->rank < 1 || j->rank > MAX_RANK || !j->elem_type ||
        need->time_axis >= j->rank) {
        j->rank = 0;
        report_add_blocker(&ctx->report, "main", need->op, need->name,
                                  "needs %lld frame(s) of the previous call, but %s: not cached",
                                  (long long)need->frames,
                                  present ? "the rank or element type of its input is not known"
                                          : "the rewrite removed it");
        return true;
    }
    j->x = x;
    j->cacheable = true;
    bool ok = true;
    for (int64_t i = 0; ok && i < j->rank; i++)
        ok = infer_dim(main_scope, x, i, &j->dims[i]);
    return ok;
}

/* Adds the cache pair of a measured job (k: the template's {k}); false
 * when out of memory. */
static bool cache_one(cache_job *j, int k)
{
    const context_need *need = j->need;
    rewrite_ctx *ctx = j->ctx;
    char *names[2] = {
        expand_name_template(ctx->options.name_template, need->op, k, need->name, "cache"),
        expand_name_template(ctx->options.name_template, need->op, k, need->name, "cache_out"),
    };
    for (int i = 0; i < 2; i++)
        j->names[i] = names[i] ? name_registry_unique(&ctx->names, names[i]) : NULL;
    free(names[0]);
    free(names[1]);
    return j->names[0] && j->names[1] && declare_pair(j) && build_cache(j);
}

static void job_clear(cache_job *j)
{
    for (int64_t i = 0; i < j->rank; i++)
        dim_info_clear(&j->dims[i]);
    free(j->names[0]);
    free(j->names[1]);
}

/* The count of `op` among the needs before need i (the template's {k}). */
static int op_count_before(const stream_analysis *a, size_t i)
{
    int k = 0;
    for (size_t n = 0; n < i; n++)
        k += !strcmp(a->needs[n].op, a->needs[i].op);
    return k;
}

rnnstate_status pass_context_cache(rewrite_ctx *ctx)
{
    const stream_analysis *a = &ctx->stream;
    if (!ctx->options.context_caches || !a->n_needs)
        return RNNSTATE_OK;
    if (!scope_tree_refresh(&ctx->scopes))
        return ctx_oom(ctx);
    cache_job *jobs = calloc(a->n_needs, sizeof *jobs);
    elem_types types;
    if (!jobs || !elem_types_build(&types, &ctx->scopes)) {
        free(jobs);
        return ctx_oom(ctx);
    }
    bool ok = true;
    size_t measured = 0, added = 0;
    for (; ok && measured < a->n_needs; measured++)
        ok = measure(ctx, &types, &a->needs[measured], &jobs[measured]);
    elem_types_free(&types);
    for (size_t i = 0; ok && i < measured; i++) {
        ok = !jobs[i].cacheable || cache_one(&jobs[i], op_count_before(a, i));
        added += ok && jobs[i].cacheable;
    }
    for (size_t i = 0; i < measured; i++)
        job_clear(&jobs[i]);
    free(jobs);
    if (!ok)
        return ctx_oom(ctx);
    if (!added)
        return RNNSTATE_OK; /* none cached: each is a blocker, the graph is as it was */
    rnnstate_status st = RNNSTATE_OK;
    if (ctx->model->ir_version < 4 && ctx->options.state_inputs == RNNSTATE_STATE_INPUTS_OPTIONAL) {
        report_note(&ctx->report, "ir_version raised from %lld to 4 so that the context caches' "
                                  "defaults can be left out",
                    (long long)ctx->model->ir_version);
        ctx->model->ir_version = 4; /* an initializer as an input's default */
    }
    if (!scope_tree_flush(&ctx->scopes))
        st = ctx_oom(ctx);
    ctx->scopes.stale = true;
    ctx->changed = true;
    return st;
}
