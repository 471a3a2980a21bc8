/* analysis/stream's insides, shared by its files: stream.c (the walk, the
 * time states, the findings), stream_dims.c (dimensions as monomials, the
 * shapes that Reshapes are given), stream_layout.c (frame-wise and layout
 * ops), stream_ops.c (convolutions and pools, ops across axes, recurrent
 * nodes, the op table). Nothing outside analysis/stream*.c includes it. */
#ifndef RNNSTATE_ANALYSIS_STREAM_WALK_H
#define RNNSTATE_ANALYSIS_STREAM_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/shape.h"
#include "analysis/stream.h"
#include "recurrent_ops.h"
#include "util/strmap.h"

#define MONO_SYMBOLS 6
#define SHAPE_ENTRIES 8
#define SHAPE_DEPTH 24
#define DIM_KEY_SIZE 600


/* coef * sym[0] * ... * sym[n-1]; symbols sorted; !ok: not known. */
typedef struct mono {
    bool ok;
    int n;
    int64_t coef;
    int sym[MONO_SYMBOLS];
} mono;

typedef enum time_kind { T_NONE, T_AXIS, T_MERGED, T_UNKNOWN } time_kind;

typedef struct time_state {
    unsigned char kind;
    bool front_cached;  /* the frames in front come from the model's own cache */
    int axis;
    int64_t scale;      /* input frames per frame of this value */
    int64_t pad_front;  /* frames a Pad (or a cache Concat) put before the data */
    int64_t pad_back;   /* frames a Pad put after the data */
    mono outer;         /* T_MERGED: the product of what lies before time in its axis */
    mono whole;         /* T_MERGED: the whole axis (outer * time * what follows it) */
    const Onnx__NodeProto *merged_by; /* T_MERGED: the op that merged it */
    const Onnx__NodeProto *padded_by; /* pad_front or pad_back: the Pad */
} time_state;

typedef struct stream_walk {
    const scope_tree *tree;
    int64_t opset;
    stream_analysis *out;
    strmap symbols;
    int n_symbols;
    char **symbol_params; /* by symbol id - SYM_TIME - 1: the dim name of a "p:" key, or NULL */
    /* The dims of Reshape outputs as monomials, by dim_key, into `shaped`:
     * a dimension inferred from nothing else is known from its Reshape. */
    strmap shaped_keys;
    mono *shaped;
    size_t n_shaped;
    ptrmap chomps; /* Slices that drop what a Conv's right padding added */
    bool oom;
} stream_walk;

enum { SYM_TIME = 1 };

typedef struct shape_expr {
    size_t n;
    mono v[SHAPE_ENTRIES];
} shape_expr;

typedef struct node_view {
    const scope *s;
    const Onnx__NodeProto *n;
    size_t at;         /* n's position in s's graph, whose index is current */
    time_state in0;    /* input 0's time state */
    int time_inputs;   /* how many inputs carry time */
} node_view;

typedef void (*node_handler)(stream_walk *w, const node_view *v);

/* ---- stream.c: time states and findings ---- */
/* The time state of a value; none for an unknown name (or out of memory). */
time_state get_state(stream_walk *w, const scope *s, const char *value);
/* The value input k (or output k) of the node names, as scope_lookup() finds
 * it, from the index's node_values (no name hashed); NULL for an empty name. */
const value_entry *view_value(const node_view *v, size_t k, bool output, const scope **o);
/* get_state() and infer_rank() of view_value()'s answer. */
time_state view_state(const node_view *v, size_t k);
int64_t view_rank(const node_view *v, size_t k);
void set_state(stream_walk *w, const scope *s, const char *value, time_state t);
static inline bool carries_time(const time_state *t) { return t->kind != T_NONE; }
/* The symbol of a named or sourced size (SYM_TIME for none). */
int stream_symbol(stream_walk *w, const char *key);
bool stream_grow(void **array, size_t n, size_t size);
/* Records a blocker (unknown: an op the analysis does not know). */
void stream_block(stream_walk *w, const scope *s, const Onnx__NodeProto *node, bool unknown,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Chunks must be a multiple of k input frames. */
void need_multiple(stream_walk *w, int64_t k);
const char *op_name(const Onnx__NodeProto *n);
int64_t rank_of_value(const scope *s, const char *value);
/* Every output of the node gets time state t. */
void set_outputs(stream_walk *w, const node_view *v, time_state t);
/* A blocker for an op the analysis cannot follow; its outputs are unknown. */
void unknown_op(stream_walk *w, const node_view *v, const char *why);
/* True (and a blocker) when a padded value reaches anything but a window. */
bool refuse_padded(stream_walk *w, const node_view *v, const time_state *t);

/* ---- stream_dims.c: monomials and shapes ---- */
mono mono_int(int64_t v);
mono mono_sym(int sym);
mono mono_mul(mono a, mono b);
mono mono_div(mono a, mono b); /* a / b when b divides a exactly, else not ok */
/* Dimension `axis` of `value`: time, a number, a named size, or a symbol. */
mono dim_mono(stream_walk *w, const scope *s, const char *value, int64_t axis);
void remember_shape(stream_walk *w, const scope *s, const char *value, const shape_expr *e);
/* The entries of a small int64 tensor that holds a shape, as monomials. */
bool shape_of(stream_walk *w, const scope *s, const char *value, shape_expr *out, int depth);
bool const_ints(const scope *s, const char *value, int64_t **v, size_t *n);
bool tensor_is_zero(const Onnx__TensorProto *t);
/* Where time lands in a reshaped value of shape `out`, given the product of
 * what lies before it in element order. */
time_state locate_time(const time_state *in, mono before, const shape_expr *out,
                       const Onnx__NodeProto *node);
mono before_time(stream_walk *w, const scope *s, const char *x, const time_state *t);
mono product_of_dims(stream_walk *w, const scope *s, const char *x, int64_t rank);

/* ---- stream_layout.c: frame-wise and layout ops ---- */
time_state time_moved(time_state t, int axis);
bool axes_of(const node_view *v, int64_t rank, int64_t **axes, size_t *n);
void on_elementwise(stream_walk *w, const node_view *v);
void on_transpose(stream_walk *w, const node_view *v);
void on_squeeze(stream_walk *w, const node_view *v);
void on_unsqueeze(stream_walk *w, const node_view *v);
void on_reshape(stream_walk *w, const node_view *v);
void on_flatten(stream_walk *w, const node_view *v);
void on_concat(stream_walk *w, const node_view *v);
void on_split(stream_walk *w, const node_view *v);
void on_slice(stream_walk *w, const node_view *v);
void on_gather(stream_walk *w, const node_view *v);
void on_expand(stream_walk *w, const node_view *v);
void on_pad(stream_walk *w, const node_view *v);

/* ---- stream_ops.c: windows, ops across axes, recurrent nodes ---- */
void on_conv(stream_walk *w, const node_view *v);
void on_matmul(stream_walk *w, const node_view *v);
void on_recurrent(stream_walk *w, const node_view *v, const recurrent_op *op);
/* The handler of a default-domain op, or NULL when the analysis does not
 * know it. */
node_handler handler_of(const Onnx__NodeProto *n);

#endif
