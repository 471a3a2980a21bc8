/* make-bad-models: writes hostile and edge-case ONNX files for the bad-input
 * suite (tests/bad_input/) and the fuzzing seed corpus (tests/fuzz/), so that
 * neither needs Python or the onnx package at test time.
 *
 *     make-bad-models --list              the case names, one a line
 *     make-bad-models CASE FILE [N]       writes case CASE to FILE
 *     make-bad-models --all DIR           writes every fixed-size case into DIR/CASE.onnx
 *     make-bad-models --flip IN OUT POS BIT   copies IN with one bit inverted
 *     make-bad-models --names FILE        prints the graph's inputs, outputs and
 *                                         initializers of a model, one a line
 *                                         ("input NAME", "output NAME", ...)
 *
 * Most cases are built with the tests' model builder (tests/unit/model_builder.c,
 * on the library's onnx_build.c) and packed; those that
 * protobuf-c could not represent or would not survive (deep nesting, absurd
 * length fields) are written directly in the wire format. Every structure is
 * malloc'd and released with free_unpacked, so the tool itself runs clean
 * under ASan and valgrind. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_builder.h"
#include "onnx.pb-c.h"
#include "model/onnx_build.h"

/* ---- small helpers ------------------------------------------------------ */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("make-bad-models: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

#define xmalloc mb_must_malloc

/* Appends to a repeated message field of a model being built. */
static void push(void ***array, size_t *count, void *item)
{
    if (!append_ptr(array, count, item))
        die("out of memory");
}
#define PUSH(arr, n, item) push((void ***)&(arr), &(n), (item))

/* ---- building models: tests/unit/model_builder.c, on the library's onnx_build.c ---- */

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

static Onnx__ModelProto *new_model(int64_t opset)
{
    return mb_new(8, opset);
}

/* A tensor with dims and no data; `name` NULL leaves it unnamed. */
static Onnx__TensorProto *tensor(const char *name, int32_t elem, size_t rank, const int64_t *dims)
{
    return mb_must(tensor_shell_new(name, elem, dims, rank));
}

static size_t count_of(size_t rank, const int64_t *dims)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

static void set_raw_f32(Onnx__TensorProto *t, size_t count, float first, float step)
{
    t->has_raw_data = 1;
    t->raw_data.len = count * 4;
    t->raw_data.data = xmalloc(count * 4);
    for (size_t i = 0; i < count; i++) {
        float v = first + step * (float)i;
        memcpy(t->raw_data.data + 4 * i, &v, 4);
    }
}

static Onnx__TensorProto *add_init_f32(Onnx__GraphProto *g, const char *name, size_t rank,
                                       const int64_t *dims, float first, float step)
{
    Onnx__TensorProto *t = tensor(name, F32, rank, dims);
    set_raw_f32(t, count_of(rank, dims), first, step);
    return mb_graph_initializer(g, t);
}

/* int64 values in int64_data (not raw_data), as some exporters write them. */
static Onnx__TensorProto *add_init_i64(Onnx__GraphProto *g, const char *name, size_t n,
                                       const int64_t *values)
{
    int64_t dims[1] = { (int64_t)n };
    Onnx__TensorProto *t = tensor(name, I64, 1, dims);
    t->n_int64_data = n;
    t->int64_data = xmalloc(n * sizeof *t->int64_data);
    memcpy(t->int64_data, values, n * sizeof *values);
    return mb_graph_initializer(g, t);
}

static int gates_of(const char *op)
{
    return !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
}

/* A recurrent node reading graph input X [T,B,I] (`xdims`), with weights
 * W, R (and B) as initializers for hidden size `h` (or as graph inputs whose
 * shapes are declared only, when h is too large to hold), writing Y. */
typedef struct rnn_spec {
    const char *op;      /* "RNN", "GRU", "LSTM" */
    const char *xdims;   /* X's declared dims, NULL for no shape */
    int64_t h;           /* hidden size used for the weights */
    int64_t input;       /* input size */
    int64_t directions;  /* 1 or 2 */
    int hidden_attr;     /* 0: no hidden_size attribute, 1: INT attribute with value attr_value */
    int64_t attr_value;
    int weights_declared_only; /* W and R as graph inputs with declared shapes, no data */
    const char *inputs;  /* the node's inputs; NULL: "X,W,R" */
    const char *outputs; /* NULL: "Y" */
    const char *name;
} rnn_spec;

/* a * b, or INT64_MAX when that overflows (absurd sizes stay absurd) */
static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static Onnx__NodeProto *add_rnn(Onnx__ModelProto *m, const rnn_spec *s)
{
    Onnx__GraphProto *g = m->graph;
    int64_t d = s->directions ? s->directions : 1, gates = gates_of(s->op);
    if (s->xdims || !s->inputs)
        mb_graph_input(g, "X", F32, s->xdims);
    if (s->weights_declared_only) {
        char w[128], r[128];
        snprintf(w, sizeof w, "%lld,%lld,%lld", (long long)d, (long long)sat_mul(gates, s->h),
                 (long long)s->input);
        snprintf(r, sizeof r, "%lld,%lld,%lld", (long long)d, (long long)sat_mul(gates, s->h),
                 (long long)s->h);
        mb_graph_input(g, "W", F32, w);
        mb_graph_input(g, "R", F32, r);
    } else {
        int64_t wd[3] = { d, gates * s->h, s->input }, rd[3] = { d, gates * s->h, s->h };
        add_init_f32(g, "W", 3, wd, 0.01f, 0.001f);
        add_init_f32(g, "R", 3, rd, -0.02f, 0.0005f);
    }
    Onnx__NodeProto *n = mb_graph_node(g, s->op, s->name ? s->name : "rnn", s->inputs ? s->inputs : "X,W,R",
                                  s->outputs ? s->outputs : "Y");
    if (s->hidden_attr)
        mb_attr_int(n, "hidden_size", s->attr_value);
    if (d == 2)
        mb_attr_string(n, "direction", "bidirectional");
    if (!s->outputs)
        mb_graph_output(g, "Y", F32, NULL);
    return n;
}

/* The common good case: a recurrent node over X [T, 2, 4] with hidden size
 * 8, with the given inputs and outputs (NULL: "X,W,R" and "Y"). */
static Onnx__ModelProto *rnn_with_io(const char *op, const char *inputs, const char *outputs)
{
    Onnx__ModelProto *m = new_model(17);
    rnn_spec s = { .op = op, .xdims = "T,2,4", .h = 8, .input = 4, .hidden_attr = 1,
                   .attr_value = 8, .inputs = inputs, .outputs = outputs };
    add_rnn(m, &s);
    return m;
}

static Onnx__ModelProto *plain_rnn(const char *op)
{
    return rnn_with_io(op, NULL, NULL);
}

/* ---- writing ------------------------------------------------------------ */

static void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    if (fwrite(data, 1, size, f) != size || fclose(f) != 0)
        die("%s: cannot write", path);
}

static void write_message(const char *path, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    unsigned char *buf = xmalloc(n);
    if (protobuf_c_message_pack(msg, buf) != n)
        die("%s: packing failed", path);
    write_bytes(path, buf, n);
    free(buf);
}

static void write_model(const char *path, Onnx__ModelProto *m)
{
    write_message(path, &m->base);
    onnx__model_proto__free_unpacked(m, NULL);
}

/* ---- the wire format, built back to front --------------------------------- */

typedef struct wbuf {
    unsigned char *data; /* content lives at data[start, cap) */
    size_t start, cap;
} wbuf;

static void wb_reserve(wbuf *b, size_t extra)
{
    if (b->start >= extra)
        return;
    size_t used = b->cap - b->start, cap = b->cap ? b->cap : 64;
    while (cap - used < extra)
        cap *= 2;
    unsigned char *d = xmalloc(cap);
    if (used)
        memcpy(d + cap - used, b->data + b->start, used);
    free(b->data);
    b->data = d;
    b->start = cap - used;
    b->cap = cap;
}

static size_t wb_len(const wbuf *b)
{
    return b->cap - b->start;
}

static void wb_bytes(wbuf *b, const void *p, size_t n)
{
    if (!n)
        return;
    wb_reserve(b, n);
    b->start -= n;
    memcpy(b->data + b->start, p, n);
}

static void wb_varint(wbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    wb_bytes(b, tmp, n);
}

/* Prepends the key and length of a length-delimited field whose content is
 * everything after `mark` bytes from the end. */
static void wb_wrap(wbuf *b, unsigned field, size_t content_len)
{
    wb_varint(b, content_len);
    wb_varint(b, (uint64_t)field << 3 | 2);
}

static void wb_string(wbuf *b, unsigned field, const char *s)
{
    wb_bytes(b, s, strlen(s));
    wb_wrap(b, field, strlen(s));
}

static void wb_int(wbuf *b, unsigned field, uint64_t v)
{
    wb_varint(b, v);
    wb_varint(b, (uint64_t)field << 3);
}

/* ModelProto header around a serialized GraphProto already in b. */
static void wb_model_around_graph(wbuf *b)
{
    wb_wrap(b, 7, wb_len(b)); /* graph */
    size_t before = wb_len(b);
    wb_int(b, 2, 17);         /* OperatorSetIdProto.version */
    wb_wrap(b, 8, wb_len(b) - before);
    wb_int(b, 1, 8);          /* ir_version */
}

static void write_wbuf(const char *path, wbuf *b)
{
    write_bytes(path, b->data ? b->data + b->start : (const unsigned char *)"", wb_len(b));
    free(b->data);
}

/* `levels` If nodes, each holding the next in its then_branch. */
static void nested_if(const char *path, long levels)
{
    wbuf b = { 0 };
    /* the innermost graph: one Identity node */
    wb_string(&b, 4, "Identity"); /* NodeProto.op_type */
    wb_string(&b, 2, "y");
    wb_string(&b, 1, "x");
    wb_wrap(&b, 1, wb_len(&b)); /* GraphProto.node */
    for (long i = 0; i < levels; i++) {
        size_t graph_len = wb_len(&b);
        wb_wrap(&b, 6, graph_len);              /* AttributeProto.g */
        wb_int(&b, 20, 5);                      /* AttributeProto.type = GRAPH */
        wb_string(&b, 1, "then_branch");        /* AttributeProto.name */
        wb_wrap(&b, 5, wb_len(&b));             /* NodeProto.attribute */
        size_t attr_end = wb_len(&b);
        wb_string(&b, 4, "If");
        wb_string(&b, 2, "out");
        wb_string(&b, 1, "cond");
        wb_wrap(&b, 1, wb_len(&b));             /* GraphProto.node */
        (void)attr_end;
    }
    wb_model_around_graph(&b);
    write_wbuf(path, &b);
}

/* A graph input whose type is a sequence of a sequence of ... `levels` deep. */
static void nested_sequence(const char *path, long levels)
{
    wbuf b = { 0 };
    wb_int(&b, 1, 1);              /* TypeProto.Tensor.elem_type = FLOAT */
    wb_wrap(&b, 1, wb_len(&b));    /* TypeProto.tensor_type */
    for (long i = 0; i < levels; i++) {
        wb_wrap(&b, 1, wb_len(&b)); /* TypeProto.Sequence.elem_type */
        wb_wrap(&b, 4, wb_len(&b)); /* TypeProto.sequence_type */
    }
    wb_wrap(&b, 2, wb_len(&b));    /* ValueInfoProto.type */
    wb_string(&b, 1, "x");         /* ValueInfoProto.name */
    wb_wrap(&b, 11, wb_len(&b));   /* GraphProto.input */
    wb_model_around_graph(&b);
    write_wbuf(path, &b);
}

/* A graph field whose length claims 2^60 bytes. */
static void exabyte_length(const char *path)
{
    unsigned char bytes[32];
    size_t n = 0;
    bytes[n++] = 0x08; /* ir_version = 8 */
    bytes[n++] = 0x08;
    bytes[n++] = 0x3a; /* graph, length-delimited */
    uint64_t v = (uint64_t)1 << 60;
    do {
        bytes[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            bytes[n] |= 0x80;
        n++;
    } while (v);
    bytes[n++] = 0x0a; /* a node, empty */
    bytes[n++] = 0x00;
    write_bytes(path, bytes, n);
}

/* A length inside the graph that runs past the graph but not past the file. */
static void inner_length_overrun(const char *path)
{
    wbuf b = { 0 };
    wb_string(&b, 4, "Relu");
    /* NodeProto claims 200 bytes; the graph holds fewer */
    wb_varint(&b, 200);
    wb_varint(&b, 1 << 3 | 2);
    wb_model_around_graph(&b);
    /* padding after the graph so that 200 bytes exist in the file */
    unsigned char pad[256];
    memset(pad, 0, sizeof pad);
    size_t len = wb_len(&b);
    unsigned char *all = xmalloc(len + sizeof pad);
    memcpy(all, b.data + b.start, len);
    /* 0x00 is an invalid key (field 0): if anything reads the padding, it fails */
    memcpy(all + len, pad, sizeof pad);
    write_bytes(path, all, len + sizeof pad);
    free(all);
    free(b.data);
}

/* A varint of eleven bytes (0xff ...): longer than any 64-bit value. */
static void overlong_varint(const char *path)
{
    unsigned char bytes[16] = { 0x08 };
    memset(bytes + 1, 0xff, 11);
    bytes[12] = 0x01;
    write_bytes(path, bytes, 13);
}

/* ---- the cases ------------------------------------------------------------ */

static Onnx__ModelProto *gru_named_slots(void)
{
    /* GRU_0_initial_h is already a graph input (read by a Relu) and GRU_0_Y_h
     * a value, so the generated names must step aside */
    Onnx__ModelProto *m = plain_rnn("GRU");
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "GRU_0_initial_h", F32, "1,2,8");
    mb_graph_node(g, "Relu", "r1", "GRU_0_initial_h", "relu_out");
    mb_graph_output(g, "relu_out", F32, "1,2,8");
    mb_graph_node(g, "Relu", "r2", "X", "GRU_0_Y_h");
    mb_graph_output(g, "GRU_0_Y_h", F32, NULL);
    return m;
}

typedef void (*case_fn)(const char *path, long n);

static void c_tensor(const char *path, long n)
{
    (void)n;
    int64_t dims[3] = { 1, 2, 8 };
    Onnx__TensorProto *t = tensor("initial_h", F32, 3, dims);
    set_raw_f32(t, 16, 0.5f, 0.0f);
    write_message(path, &t->base);
    onnx__tensor_proto__free_unpacked(t, NULL);
}

static void c_no_graph(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    onnx__graph_proto__free_unpacked(m->graph, NULL);
    m->graph = NULL;
    write_model(path, m);
}

static void c_no_ir_version(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    m->has_ir_version = 0;
    write_model(path, m);
}

static void c_exabyte(const char *path, long n)
{
    (void)n;
    exabyte_length(path);
}

static void c_inner_overrun(const char *path, long n)
{
    (void)n;
    inner_length_overrun(path);
}

static void c_overlong_varint(const char *path, long n)
{
    (void)n;
    overlong_varint(path);
}

static void c_nested_if(const char *path, long n)
{
    nested_if(path, n ? n : 100000);
}

static void c_nested_seq(const char *path, long n)
{
    nested_sequence(path, n ? n : 100000);
}

/* `levels` nested If nodes (built as structures) with an LSTM in the
 * innermost branch that reads the outer X: within the nesting limit. With
 * drop_else, the outermost If has no else_branch (an invalid model). */
static Onnx__ModelProto *nested_if_model(long levels, int drop_else)
{
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "X", F32, "T,2,4");
    mb_graph_input(g, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    int64_t wd[3] = { 1, 32, 4 }, rd[3] = { 1, 32, 8 };
    add_init_f32(g, "W", 3, wd, 0.01f, 0.001f);
    add_init_f32(g, "R", 3, rd, 0.01f, 0.001f);
    Onnx__GraphProto *inner = mb_graph_new("inner");
    Onnx__NodeProto *lstm = mb_graph_node(inner, "LSTM", "deep_lstm", "X,W,R", "Y");
    mb_attr_int(lstm, "hidden_size", 8);
    PUSH(inner->output, inner->n_output, mb_value_info_new("Y", F32, NULL));
    for (long i = 0; i < levels; i++) {
        char out[32], name[32];
        snprintf(out, sizeof out, "if_out_%ld", i);
        snprintf(name, sizeof name, "if_%ld", i);
        Onnx__GraphProto *outer = i + 1 < levels ? mb_graph_new("branch") : g;
        Onnx__NodeProto *node = mb_graph_node(outer, "If", name, "cond", out);
        mb_attr_graph_take(node, "then_branch", inner);
        if (!(drop_else && outer == g)) {
            Onnx__GraphProto *other = mb_graph_new("else");
            char else_out[32];
            snprintf(else_out, sizeof else_out, "else_out_%ld", i);
            mb_graph_node(other, "Identity", NULL, "X", else_out);
            PUSH(other->output, other->n_output, mb_value_info_new(else_out, F32, NULL));
            mb_attr_graph_take(node, "else_branch", other);
        }
        if (outer != g)
            PUSH(outer->output, outer->n_output, mb_value_info_new(out, F32, NULL));
        else
            mb_graph_output(g, out, F32, NULL);
        inner = outer;
    }
    return m;
}

static void c_nested_if_ok(const char *path, long n)
{
    write_model(path, nested_if_model(n ? n : 40, 0));
}

/* the LSTM sits in an If's then_branch; that If has no else_branch */
static void c_if_missing_else(const char *path, long n)
{
    (void)n;
    write_model(path, nested_if_model(1, 1));
}

/* the same one level up: the LSTM's If is complete, the If around it is not */
static void c_if_missing_else_nested(const char *path, long n)
{
    (void)n;
    write_model(path, nested_if_model(2, 1));
}

static void huge(const char *path, const char *op, const char *xdims, int64_t h, int64_t dirs)
{
    Onnx__ModelProto *m = new_model(17);
    rnn_spec s = { .op = op, .xdims = xdims, .h = h, .input = 4, .directions = dirs,
                   .hidden_attr = 1, .attr_value = h, .weights_declared_only = 1 };
    add_rnn(m, &s);
    write_model(path, m);
}

/* batch 2^30, hidden 2^40: a 2^72-byte state, to be refused, not allocated */
static void c_huge_dims(const char *path, long n)
{
    (void)n;
    huge(path, "LSTM", "5,1073741824,4", (int64_t)1 << 40, 1);
}

/* batch and hidden 2^62, bidirectional: the element count overflows 64 bits */
static void c_huge_overflow(const char *path, long n)
{
    (void)n;
    huge(path, "GRU", "5,4611686018427387904,4", (int64_t)1 << 62, 2);
}

/* dynamic batch, hidden 2^40: even one batch entry is 4 TiB */
static void c_huge_hidden(const char *path, long n)
{
    (void)n;
    huge(path, "RNN", "T,N,4", (int64_t)1 << 40, 1);
}

/* hidden INT64_MAX: 4 * hidden overflows in any gate arithmetic */
static void c_hidden_int64_max(const char *path, long n)
{
    (void)n;
    huge(path, "LSTM", "T,2,4", INT64_MAX, 1);
}

static void hidden_variant(const char *path, int64_t attr, int with_attr, int r_shape_known)
{
    Onnx__ModelProto *m = new_model(17);
    rnn_spec s = { .op = "GRU", .xdims = "T,2,4", .h = 8, .input = 4, .hidden_attr = with_attr,
                   .attr_value = attr, .weights_declared_only = 1 };
    add_rnn(m, &s);
    if (!r_shape_known) {
        /* R without any shape */
        Onnx__GraphProto *g = m->graph;
        for (size_t i = 0; i < g->n_input; i++)
            if (!strcmp(g->input[i]->name, "R")) {
                Onnx__TypeProto__Tensor *tt = g->input[i]->type->tensor_type;
                onnx__tensor_shape_proto__free_unpacked(tt->shape, NULL);
                tt->shape = NULL;
            }
    }
    write_model(path, m);
}

static void c_hidden_negative(const char *path, long n)
{
    (void)n;
    hidden_variant(path, -5, 1, 0);
}

static void c_hidden_negative_r_known(const char *path, long n)
{
    (void)n;
    hidden_variant(path, -5, 1, 1);
}

static void c_hidden_zero(const char *path, long n)
{
    (void)n;
    hidden_variant(path, 0, 1, 0);
}

static void c_hidden_missing(const char *path, long n)
{
    (void)n;
    hidden_variant(path, 0, 0, 0);
}

/* no hidden_size attribute: R's declared shape [1, 24, 8] gives it */
static void c_hidden_from_r(const char *path, long n)
{
    (void)n;
    hidden_variant(path, 0, 0, 1);
}

/* no hidden_size, R's declared shape has a negative last dimension */
static void c_r_negative_dim(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "X", F32, "T,2,4");
    mb_graph_input(g, "W", F32, "1,24,4");
    mb_graph_input(g, "R", F32, "1,24,-8");
    mb_graph_node(g, "GRU", "gru", "X,W,R", "Y");
    mb_graph_output(g, "Y", F32, NULL);
    write_model(path, m);
}

/* X is a graph input without any type */
static void c_x_no_type(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    PUSH(g->input, g->n_input, mb_value_info_new("X", -1, NULL));
    int64_t wd[3] = { 1, 24, 4 }, rd[3] = { 1, 24, 8 };
    add_init_f32(g, "W", 3, wd, 0.01f, 0.001f);
    add_init_f32(g, "R", 3, rd, 0.01f, 0.001f);
    mb_graph_node(g, "GRU", "gru", "X,W,R", "Y");
    mb_graph_output(g, "Y", F32, NULL);
    write_model(path, m);
}

static void c_no_inputs(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    Onnx__NodeProto *node = mb_graph_node(m->graph, "GRU", "gru", NULL, "Y");
    mb_attr_int(node, "hidden_size", 8);
    mb_graph_output(m->graph, "Y", F32, NULL);
    write_model(path, m);
}

static void c_no_outputs(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    rnn_spec s = { .op = "GRU", .xdims = "T,2,4", .h = 8, .input = 4, .hidden_attr = 1,
                   .attr_value = 8, .outputs = "" };
    Onnx__NodeProto *node = add_rnn(m, &s);
    /* no outputs at all, not even an empty name */
    for (size_t i = 0; i < node->n_output; i++)
        free(node->output[i]);
    free(node->output);
    node->output = NULL;
    node->n_output = 0;
    write_model(path, m);
}

/* hidden_size given as a STRING attribute, direction as an INT, layout as a FLOAT */
static void c_wrong_attr_types(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    rnn_spec s = { .op = "LSTM", .xdims = "T,2,4", .h = 8, .input = 4 };
    Onnx__NodeProto *node = add_rnn(m, &s);
    mb_attr_string(node, "hidden_size", "eight");
    mb_attr_int(node, "direction", 2);
    mb_attr_float(node, "layout", 1.0f);
    write_model(path, m);
}

/* attributes whose type says one thing and whose fields another */
static void c_attr_type_mismatch(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    Onnx__NodeProto *node = m->graph->node[0];
    /* hidden_size: type INT but only f set */
    Onnx__AttributeProto *a = node->attribute[0];
    a->has_i = 0;
    a->has_f = 1;
    a->f = 8.0f;
    /* direction: type STRING without s */
    mb_attr(node, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    /* layout: type INTS, no ints */
    mb_attr(node, "layout", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    /* an If elsewhere whose then_branch is typed GRAPH but has no graph */
    mb_graph_input(m->graph, "c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    Onnx__NodeProto *iff = mb_graph_node(m->graph, "If", "if", "c", "o");
    mb_attr(iff, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    mb_attr(iff, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    write_model(path, m);
}

static void c_direction_bogus(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("RNN");
    mb_attr_string(m->graph->node[0], "direction", "sideways");
    mb_attr_int(m->graph->node[0], "layout", 7);
    write_model(path, m);
}

/* nodes, values and tensors without names or op_type (NULL strings) */
static void c_null_strings(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("LSTM");
    Onnx__GraphProto *g = m->graph;
    mb_graph_node(g, NULL, NULL, "X", "");
    PUSH(g->input, g->n_input, mb_value_info_new(NULL, F32, "1"));
    PUSH(g->value_info, g->n_value_info, mb_value_info_new(NULL, -1, NULL));
    int64_t d[1] = { 1 };
    Onnx__TensorProto *t = tensor(NULL, F32, 1, d);
    PUSH(g->initializer, g->n_initializer, t);
    free(g->name);
    g->name = NULL;
    free(g->node[0]->name);
    g->node[0]->name = NULL;
    free(m->opset_import[0]->domain);
    m->opset_import[0]->domain = NULL;
    write_model(path, m);
}

static void c_dup_value(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    mb_graph_node(m->graph, "Relu", "a", "X", "x");
    mb_graph_node(m->graph, "Sigmoid", "b", "X", "x");
    write_model(path, m);
}

static void c_dup_input(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    mb_graph_input(m->graph, "X", F32, "T,2,4");
    write_model(path, m);
}

static void c_dup_initializer(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    int64_t d[1] = { 1 };
    add_init_f32(m->graph, "W", 1, d, 1.0f, 0.0f);
    write_model(path, m);
}

static void c_dup_output(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    mb_graph_output(m->graph, "Y", F32, NULL);
    write_model(path, m);
}

/* a node writes the value that a graph input already names */
static void c_node_overwrites_input(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    mb_graph_node(m->graph, "Relu", "a", "Y", "X");
    write_model(path, m);
}

static void c_collide(const char *path, long n)
{
    (void)n;
    write_model(path, gru_named_slots());
}

/* GRU_0_initial_h and GRU_0_initial_h_1 both taken */
static void c_collide_twice(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = gru_named_slots();
    mb_graph_node(m->graph, "Relu", "r3", "X", "GRU_0_initial_h_1");
    mb_graph_output(m->graph, "GRU_0_initial_h_1", F32, NULL);
    write_model(path, m);
}

/* GRU_0_initial_h is a value inside an If's branch only */
/* An If reading input "cond" with the two branches, producing graph output
 * "if_out". */
static void add_if(Onnx__ModelProto *m, Onnx__GraphProto *then, Onnx__GraphProto *other)
{
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    Onnx__NodeProto *iff = mb_graph_node(g, "If", "if", "cond", "if_out");
    mb_attr_graph_take(iff, "then_branch", then);
    mb_attr_graph_take(iff, "else_branch", other);
    mb_graph_output(g, "if_out", F32, NULL);
}

static void c_collide_subgraph(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    Onnx__GraphProto *then = mb_graph_new("then");
    mb_graph_node(then, "Relu", "inner", "X", "GRU_0_initial_h");
    PUSH(then->output, then->n_output, mb_value_info_new("GRU_0_initial_h", F32, NULL));
    Onnx__GraphProto *other = mb_graph_new("else");
    mb_graph_node(other, "Sigmoid", "inner2", "X", "GRU_0_Y_h");
    PUSH(other->output, other->n_output, mb_value_info_new("GRU_0_Y_h", F32, NULL));
    add_if(m, then, other);
    write_model(path, m);
}

/* an If whose then_branch produces one value twice (the main graph's rule,
 * inside a subgraph) */
static void c_dup_value_in_branch(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    Onnx__GraphProto *then = mb_graph_new("then");
    mb_graph_node(then, "Relu", "a", "X", "twice");
    mb_graph_node(then, "Sigmoid", "b", "X", "twice");
    PUSH(then->output, then->n_output, mb_value_info_new("twice", F32, NULL));
    Onnx__GraphProto *other = mb_graph_new("else");
    mb_graph_node(other, "Relu", "c", "X", "once");
    PUSH(other->output, other->n_output, mb_value_info_new("once", F32, NULL));
    add_if(m, then, other);
    write_model(path, m);
}

/* an If whose branches have one and two outputs */
static void c_if_branch_outputs_differ(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    Onnx__GraphProto *then = mb_graph_new("then");
    mb_graph_node(then, "Relu", "a", "X", "t1");
    PUSH(then->output, then->n_output, mb_value_info_new("t1", F32, NULL));
    Onnx__GraphProto *other = mb_graph_new("else");
    mb_graph_node(other, "Relu", "c", "X", "e1");
    mb_graph_node(other, "Sigmoid", "d", "X", "e2");
    PUSH(other->output, other->n_output, mb_value_info_new("e1", F32, NULL));
    PUSH(other->output, other->n_output, mb_value_info_new("e2", F32, NULL));
    add_if(m, then, other);
    write_model(path, m);
}

/* initial_h is the GRU's own Y_h: a cycle */
static void c_cycle_self(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = rnn_with_io("GRU", "X,W,R,,,Y_h", "Y,Y_h");
    mb_graph_output(m->graph, "Y", F32, NULL);
    write_model(path, m);
}

/* initial_h comes from two Identity nodes that read each other; X from two
 * Relu nodes that read each other */
static void c_cycle_identity(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    mb_graph_node(g, "Identity", "i1", "b", "a");
    mb_graph_node(g, "Identity", "i2", "a", "b");
    mb_graph_node(g, "Relu", "x1", "x2", "x1");
    mb_graph_node(g, "Relu", "x2", "x1", "x2");
    int64_t wd[3] = { 1, 32, 4 }, rd[3] = { 1, 32, 8 };
    add_init_f32(g, "W", 3, wd, 0.01f, 0.001f);
    add_init_f32(g, "R", 3, rd, 0.01f, 0.001f);
    Onnx__NodeProto *node = mb_graph_node(g, "LSTM", "lstm", "x1,W,R,,,a,b", "Y");
    mb_attr_int(node, "hidden_size", 8);
    mb_graph_output(g, "Y", F32, NULL);
    write_model(path, m);
}

/* initial_h is an initializer whose raw data does not match its dims */
static void c_initializer_bad_data(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = rnn_with_io("GRU", "X,W,R,,,h0", NULL);
    int64_t d[3] = { 1, 2, 8 };
    Onnx__TensorProto *t = tensor("h0", F32, 3, d);
    set_raw_f32(t, 3, 1.0f, 0.0f); /* 12 bytes for 16 floats */
    PUSH(m->graph->initializer, m->graph->n_initializer, t);
    write_model(path, m);
}

/* initial_h is an initializer with absurd dims and no data */
static void c_initializer_huge_dims(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = rnn_with_io("GRU", "X,W,R,,,h0", NULL);
    int64_t d[3] = { 1, (int64_t)1 << 40, (int64_t)1 << 40 };
    PUSH(m->graph->initializer, m->graph->n_initializer, tensor("h0", F32, 3, d));
    write_model(path, m);
}

/* initial_h is stored in an external file at `location` */
static void external_at(const char *path, const char *location)
{
    Onnx__ModelProto *m = rnn_with_io("GRU", "X,W,R,,,h0", NULL);
    int64_t d[3] = { 1, 2, 8 };
    Onnx__TensorProto *t = tensor("h0", F32, 3, d);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    static const char *const entries[2][2] = { { "location", NULL },
                                               { "length", "18446744073709551615" } };
    for (size_t i = 0; i < 2; i++) {
        Onnx__StringStringEntryProto *e = mb_must(string_entry_new(entries[i][0]));
        e->value = mb_must(strdup(i == 0 ? location : entries[i][1]));
        PUSH(t->external_data, t->n_external_data, e);
    }
    PUSH(m->graph->initializer, m->graph->n_initializer, t);
    write_model(path, m);
}

/* ... in a file far outside the model's directory */
static void c_initializer_external(const char *path, long n)
{
    (void)n;
    external_at(path, "../../../../../../../../etc/shadow");
}

static void c_external_absolute(const char *path, long n)
{
    (void)n;
    external_at(path, "/etc/passwd");
}

static void c_external_missing(const char *path, long n)
{
    (void)n;
    external_at(path, "no-such-weights.bin");
}

/* initial_h = ConstantOfShape([1, 2^30, 2^40]) and initial_c = Expand of a
 * non-uniform constant to an absurd shape */
static void c_constant_huge_shape(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = rnn_with_io("LSTM", "X,W,R,,,h0,c0", NULL);
    Onnx__GraphProto *g = m->graph;
    int64_t shape[3] = { 1, (int64_t)1 << 30, (int64_t)1 << 40 };
    add_init_i64(g, "huge_shape", 3, shape);
    mb_graph_node(g, "ConstantOfShape", "cos", "huge_shape", "h0");
    int64_t pd[3] = { 1, 1, 8 };
    add_init_f32(g, "pattern", 3, pd, 1.0f, 1.0f);
    mb_graph_node(g, "Expand", "exp", "pattern,huge_shape", "c0");
    write_model(path, m);
}

/* initial_h is a STRING initializer; initial_c an INT64 one */
static void c_initializer_wrong_type(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = rnn_with_io("LSTM", "X,W,R,,,h0,c0", NULL);
    int64_t d[3] = { 1, 2, 8 };
    Onnx__TensorProto *t = tensor("h0", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 3, d);
    PUSH(m->graph->initializer, m->graph->n_initializer, t);
    int64_t vals[16] = { 0 };
    Onnx__TensorProto *c = add_init_i64(m->graph, "c0", 16, vals);
    free(c->dims);
    c->dims = xmalloc(3 * sizeof *c->dims);
    memcpy(c->dims, d, sizeof d);
    c->n_dims = 3;
    write_model(path, m);
}

/* a model with no opset_import at all */
static void c_no_opset(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    for (size_t i = 0; i < m->n_opset_import; i++)
        onnx__operator_set_id_proto__free_unpacked(m->opset_import[i], NULL);
    free(m->opset_import);
    m->opset_import = NULL;
    m->n_opset_import = 0;
    write_model(path, m);
}

/* ir_version 3 and opset 7 (no Expand yet); the rewrite must cope */
static void c_old_opset(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("LSTM");
    m->ir_version = 3;
    m->opset_import[0]->version = 7;
    write_model(path, m);
}

/* an LSTM inside an If branch, reading the outer X */
static void c_rnn_in_subgraph(const char *path, long n)
{
    (void)n;
    c_nested_if_ok(path, 1);
}

/* unknown fields (from a newer ONNX) must survive the rewrite: the model
 * carries field 99 with the text "canary-unknown-field" */
static void c_unknown_fields(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    size_t size = onnx__model_proto__get_packed_size(m);
    unsigned char *buf = xmalloc(size + 64);
    onnx__model_proto__pack(m, buf);
    const char canary[] = "canary-unknown-field";
    buf[size++] = 0x9a; /* field 99, length-delimited: (99 << 3 | 2) = 794 */
    buf[size++] = 0x06;
    buf[size++] = (unsigned char)(sizeof canary - 1);
    memcpy(buf + size, canary, sizeof canary - 1);
    size += sizeof canary - 1;
    write_bytes(path, buf, size);
    free(buf);
    onnx__model_proto__free_unpacked(m, NULL);
}

/* Names an attacker would pick: a CSI colour and bytes that are not UTF-8 in
 * the GRU's name, an OSC window title and BEL in X, a newline that would forge
 * a report line in Y, an overlong '/' and a UTF-16 surrogate in the weights,
 * a C1 CSI and a right-to-left override in X's batch dimension. The rewrite
 * must carry them byte for byte and escape them in every report (with
 * --name-template {name}_{slot}, in the names it adds too). */
#define HOSTILE_GRU "gru\x1b[31mRED\xff\xfe"
#define HOSTILE_X "x\x1b]0;pwned\x07" "bell"
#define HOSTILE_Y "y\nrnnstate-rewrite: forged line"
#define HOSTILE_W "w\xc0\xaf"
#define HOSTILE_R "r\xed\xa0\x80"
#define HOSTILE_BATCH "batch\xc2\x9b" "2J\xe2\x80\xae"

static Onnx__ModelProto *hostile_names_model(void)
{
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, HOSTILE_X, F32, "T," HOSTILE_BATCH ",4");
    int64_t wd[3] = { 1, 24, 4 }, rd[3] = { 1, 24, 8 };
    add_init_f32(g, HOSTILE_W, 3, wd, 0.01f, 0.001f);
    add_init_f32(g, HOSTILE_R, 3, rd, -0.02f, 0.0005f);
    Onnx__NodeProto *n = mb_graph_node(g, "GRU", HOSTILE_GRU, HOSTILE_X "," HOSTILE_W "," HOSTILE_R,
                                  HOSTILE_Y);
    mb_attr_int(n, "hidden_size", 8);
    mb_graph_output(g, HOSTILE_Y, F32, NULL);
    return m;
}

static void c_hostile_names(const char *path, long n)
{
    (void)n;
    write_model(path, hostile_names_model());
}

/* The same names in an error message: a value produced twice. */
static void c_hostile_names_dup(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = hostile_names_model();
    mb_graph_node(m->graph, "Relu", "dup", HOSTILE_W, HOSTILE_Y);
    write_model(path, m);
}

/* The good models the suite also needs. */
static void c_good_gru(const char *path, long n)
{
    (void)n;
    write_model(path, plain_rnn("GRU"));
}

static void c_good_lstm(const char *path, long n)
{
    (void)n;
    write_model(path, plain_rnn("LSTM"));
}

/* A Constant of 1 MiB, which loading allocates (constants are not left in
 * the file like large initializers). */
static void c_big_constant(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = plain_rnn("GRU");
    mb_constant(m, "big", "big_out", mb_tensor_filled("", F32, MB_DIMS(262144), 0.0));
    mb_graph_output(m->graph, "big_out", F32, NULL);
    write_model(path, m);
}

/* A GRU with hidden size 128 over 256 inputs: W alone is 384 KiB, above the
 * 64 KiB from which the loader leaves initializers in the file (lazy_scan.c).
 * N: the number of such GRUs (default 1), for more lazy initializers. */
static void c_big_weights(const char *path, long n)
{
    long count = n ? n : 1;
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "X", F32, "T,B,256");
    for (long i = 0; i < count; i++) {
        char w[32], r[32], b[32], y[32], name[32], inputs[128];
        snprintf(w, sizeof w, "W%ld", i);
        snprintf(r, sizeof r, "R%ld", i);
        snprintf(b, sizeof b, "B%ld", i);
        snprintf(y, sizeof y, "Y%ld", i);
        snprintf(name, sizeof name, "gru%ld", i);
        int64_t wd[3] = { 1, 384, 256 }, rd[3] = { 1, 384, 128 }, bd[2] = { 1, 768 };
        add_init_f32(g, w, 3, wd, 0.001f, 1e-6f);
        add_init_f32(g, r, 3, rd, -0.001f, 1e-6f);
        add_init_f32(g, b, 2, bd, 0.0f, 0.0f);
        snprintf(inputs, sizeof inputs, "X,%s,%s,%s", w, r, b);
        Onnx__NodeProto *node = mb_graph_node(g, "GRU", name, inputs, y);
        mb_attr_int(node, "hidden_size", 128);
        mb_graph_output(g, y, F32, NULL);
    }
    write_model(path, m);
}

/* A GRU whose W (384 KiB) ends with a string_data field in the wrong wire
 * type (a varint instead of a length-delimited string): the framing is
 * sound, the content is not, and protobuf-c refuses it. W is larger than
 * the lazy threshold (64 KiB), so the loader leaves its data fields in the
 * file (lazy_scan.c) and protobuf-c never sees them. */
static void c_lazy_corrupt_initializer(const char *path, long n)
{
    (void)n;
    Onnx__ModelProto *m = new_model(17);
    rnn_spec spec = { .op = "GRU", .xdims = "T,B,256", .h = 128, .input = 256, .hidden_attr = 1,
                      .attr_value = 128 };
    add_rnn(m, &spec);
    Onnx__GraphProto *g = m->graph;
    /* take W out of the graph: it is appended by hand */
    Onnx__TensorProto *w = g->initializer[0];
    memmove(g->initializer, g->initializer + 1, (g->n_initializer - 1) * sizeof *g->initializer);
    g->n_initializer--;
    size_t wn = onnx__tensor_proto__get_packed_size(w);
    unsigned char *wbytes = xmalloc(wn + 2);
    onnx__tensor_proto__pack(w, wbytes);
    onnx__tensor_proto__free_unpacked(w, NULL);
    wbytes[wn++] = 6 << 3 | 0; /* field 6 (string_data), wire type 0 */
    wbytes[wn++] = 0;
    m->graph = NULL;
    size_t gn = onnx__graph_proto__get_packed_size(g), mn = onnx__model_proto__get_packed_size(m);
    wbuf b = { 0 };
    wb_bytes(&b, wbytes, wn);
    wb_wrap(&b, 5, wn); /* GraphProto.initializer */
    unsigned char *gbytes = xmalloc(gn);
    onnx__graph_proto__pack(g, gbytes);
    wb_bytes(&b, gbytes, gn);
    wb_wrap(&b, 7, wb_len(&b)); /* ModelProto.graph */
    unsigned char *mbytes = xmalloc(mn);
    onnx__model_proto__pack(m, mbytes);
    wb_bytes(&b, mbytes, mn);
    write_wbuf(path, &b);
    free(wbytes);
    free(gbytes);
    free(mbytes);
    onnx__graph_proto__free_unpacked(g, NULL);
    onnx__model_proto__free_unpacked(m, NULL);
}

/* ---- big graphs, for the linear-time checks --------------------------------- */

/* X -> N Relu nodes -> a GRU whose X is the end of the chain; initial_h ->
 * N Identity nodes from a zero constant. Both chains are walked by the
 * analysis (batch inference, state tracing). */
static void c_chain(const char *path, long n)
{
    long count = n ? n : 100000;
    Onnx__ModelProto *m = new_model(17);
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "X", F32, "T,B,4");
    char in[32], out[32];
    snprintf(in, sizeof in, "X");
    for (long i = 0; i < count; i++) {
        snprintf(out, sizeof out, "x%ld", i);
        mb_graph_node(g, "Relu", out, in, out);
        snprintf(in, sizeof in, "%s", out);
    }
    char x_end[32];
    snprintf(x_end, sizeof x_end, "%s", in);
    int64_t zero_dims[3] = { 1, 1, 8 };
    add_init_f32(g, "h_zero", 3, zero_dims, 0.0f, 0.0f);
    snprintf(in, sizeof in, "h_zero");
    for (long i = 0; i < count; i++) {
        snprintf(out, sizeof out, "h%ld", i);
        mb_graph_node(g, "Identity", out, in, out);
        snprintf(in, sizeof in, "%s", out);
    }
    int64_t wd[3] = { 1, 24, 4 }, rd[3] = { 1, 24, 8 };
    add_init_f32(g, "W", 3, wd, 0.01f, 0.001f);
    add_init_f32(g, "R", 3, rd, 0.01f, 0.001f);
    char inputs[128];
    snprintf(inputs, sizeof inputs, "%s,W,R,,,%s", x_end, in);
    Onnx__NodeProto *gru = mb_graph_node(g, "GRU", "gru", inputs, "Y");
    mb_attr_int(gru, "hidden_size", 8);
    mb_graph_output(g, "Y", F32, NULL);
    write_model(path, m);
}

/* A model with input X [T, batch, 4] and the W [1,24,4] and R [1,24,8] of a
 * GRU of hidden size 8, for the big-graph cases to add nodes to. */
static Onnx__ModelProto *gru_base_model(const char *batch)
{
    Onnx__ModelProto *m = new_model(17);
    char xdims[32];
    snprintf(xdims, sizeof xdims, "T,%s,4", batch);
    mb_graph_input(m->graph, "X", F32, xdims);
    int64_t wd[3] = { 1, 24, 4 }, rd[3] = { 1, 24, 8 };
    add_init_f32(m->graph, "W", 3, wd, 0.01f, 0.001f);
    add_init_f32(m->graph, "R", 3, rd, 0.01f, 0.001f);
    return m;
}

/* A GRU of hidden size 8 in g. */
static Onnx__NodeProto *gru8(Onnx__GraphProto *g, const char *name, const char *inputs,
                             const char *outputs)
{
    Onnx__NodeProto *node = mb_graph_node(g, "GRU", name, inputs, outputs);
    mb_attr_int(node, "hidden_size", 8);
    return node;
}

/* Ends the main graph with GRU "gru" reading `inputs`, its Y the graph's
 * output, and writes the model. */
static void write_ending_in_gru(const char *path, Onnx__ModelProto *m, const char *inputs)
{
    gru8(m->graph, "gru", inputs, "Y");
    mb_graph_output(m->graph, "Y", F32, NULL);
    write_model(path, m);
}

enum { GRUS_SAME_NAME = 1, GRUS_UNUSED_YH_IN_VALUE_INFO = 2 };

/* N GRU nodes side by side, all reading X, sharing W and R: N state pairs to
 * add and name. With GRUS_SAME_NAME, every node is called "g" (for the
 * {name} name template); with GRUS_UNUSED_YH_IN_VALUE_INFO, each names a
 * Y_h that nothing reads and value_info declares. */
static void many_grus(const char *path, long n, int flags)
{
    long count = n ? n : 20000;
    Onnx__ModelProto *m = gru_base_model("2");
    Onnx__GraphProto *g = m->graph;
    for (long i = 0; i < count; i++) {
        char name[32], outs[64], y[32], yh[32];
        snprintf(name, sizeof name, flags & GRUS_SAME_NAME ? "g" : "gru%ld", i);
        snprintf(y, sizeof y, "y%ld", i);
        snprintf(yh, sizeof yh, "yh%ld", i);
        snprintf(outs, sizeof outs, flags & GRUS_UNUSED_YH_IN_VALUE_INFO ? "%s,%s" : "%s", y, yh);
        gru8(g, name, "X,W,R", outs);
        mb_graph_output(g, y, F32, NULL);
        if (flags & GRUS_UNUSED_YH_IN_VALUE_INFO)
            PUSH(g->value_info, g->n_value_info, mb_value_info_new(yh, F32, "1,2,8"));
    }
    write_model(path, m);
}

static void c_many_grus(const char *path, long n)
{
    many_grus(path, n, 0);
}

static void c_many_grus_same_name(const char *path, long n)
{
    many_grus(path, n, GRUS_SAME_NAME);
}

/* N GRUs side by side whose Y_h nothing reads but value_info declares: each
 * is renamed, and its value_info entry removed. */
static void c_value_info_grus(const char *path, long n)
{
    many_grus(path, n, GRUS_UNUSED_YH_IN_VALUE_INFO);
}

/* initial_h from a chain of N Concat(c, c) nodes over a zero constant: a walk
 * that revisits both inputs at every level takes 2^N steps. */
static void c_concat_chain(const char *path, long n)
{
    long count = n ? n : 30;
    Onnx__ModelProto *m = gru_base_model("1");
    int64_t zero_dims[3] = { 1, 1, 8 };
    add_init_f32(m->graph, "c0", 3, zero_dims, 0.0f, 0.0f);
    char in[64], out[32], name[32];
    for (long i = 0; i < count; i++) {
        snprintf(in, sizeof in, "c%ld,c%ld", i, i);
        snprintf(out, sizeof out, "c%ld", i + 1);
        snprintf(name, sizeof name, "concat%ld", i);
        mb_attr_int(mb_graph_node(m->graph, "Concat", name, in, out), "axis", 2);
    }
    char inputs[96];
    snprintf(inputs, sizeof inputs, "X,W,R,,,c%ld", count);
    write_ending_in_gru(path, m, inputs);
}

/* ---- names that collide under an unkeyed hash --------------------------------- */

/* FNV-1a, 64 bits, unseeded: what the name tables used to hash with. Its low
 * k bits depend only on the low k bits of the state and the input, so names
 * colliding in the low 20 bits (any table of up to 2^19 names probes them
 * all in one run) can be built one by one: a prefix that makes each name
 * unique, then four bytes found by meeting in the middle (two bytes forward
 * from the prefix's state, two backward from the target). */
#define FNV_PRIME 1099511628211ULL
#define LOW20 0xfffffu
static const char name_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

static uint32_t fnv_step(uint32_t h, unsigned char c)
{
    return (uint32_t)(((uint64_t)(h ^ c) * FNV_PRIME) & LOW20);
}

/* The inverse of FNV_PRIME modulo 2^64 (Newton's iteration). */
static uint64_t fnv_prime_inverse(void)
{
    uint64_t x = FNV_PRIME;
    for (int i = 0; i < 6; i++)
        x *= 2 - FNV_PRIME * x;
    return x;
}

typedef struct collider {
    int32_t *pair_before; /* per 20-bit state: two bytes (c3 * 64 + c4) leading to the target, or -1 */
} collider;

static void collider_init(collider *c, uint32_t target)
{
    uint64_t inv = fnv_prime_inverse();
    c->pair_before = xmalloc((LOW20 + 1) * sizeof *c->pair_before);
    memset(c->pair_before, 0xff, (LOW20 + 1) * sizeof *c->pair_before);
    for (int c4 = 0; c4 < 64; c4++) {
        uint32_t before4 = (uint32_t)((target * inv) & LOW20) ^ (unsigned char)name_alphabet[c4];
        for (int c3 = 0; c3 < 64; c3++) {
            uint32_t before3 =
                (uint32_t)((before4 * inv) & LOW20) ^ (unsigned char)name_alphabet[c3];
            c->pair_before[before3] = c3 * 64 + c4;
        }
    }
}

/* Appends four bytes to `name` (room for 5 more) so that its low 20 bits of
 * FNV-1a are the target; false when this prefix has no such suffix. */
static int collide_name(const collider *c, char *name)
{
    uint32_t h = (uint32_t)(1469598103934665603ULL & LOW20);
    for (const char *p = name; *p; p++)
        h = fnv_step(h, (unsigned char)*p);
    size_t len = strlen(name);
    for (int c1 = 0; c1 < 64; c1++) {
        uint32_t h1 = fnv_step(h, (unsigned char)name_alphabet[c1]);
        for (int c2 = 0; c2 < 64; c2++) {
            int32_t pair = c->pair_before[fnv_step(h1, (unsigned char)name_alphabet[c2])];
            if (pair < 0)
                continue;
            name[len] = name_alphabet[c1];
            name[len + 1] = name_alphabet[c2];
            name[len + 2] = name_alphabet[pair / 64];
            name[len + 3] = name_alphabet[pair % 64];
            name[len + 4] = '\0';
            return 1;
        }
    }
    return 0;
}

/* X -> N Identity nodes whose values and names all collide in the low 20
 * bits of FNV-1a -> a GRU. */
static void c_colliding_names(const char *path, long n)
{
    long count = n ? n : 32768;
    collider col;
    collider_init(&col, 0x5a5a5);
    Onnx__ModelProto *m = gru_base_model("1");
    char in[32] = "X", out[32];
    for (long i = 0, tries = 0; i < count; tries++) {
        snprintf(out, sizeof out, "v%ld_", tries);
        if (!collide_name(&col, out))
            continue;
        mb_graph_node(m->graph, "Identity", out, in, out);
        snprintf(in, sizeof in, "%s", out);
        i++;
    }
    free(col.pair_before);
    char inputs[64];
    snprintf(inputs, sizeof inputs, "%s,W,R", in);
    write_ending_in_gru(path, m, inputs);
}

/* ---- many subgraphs ----------------------------------------------------------- */

/* N If nodes side by side; each then_branch runs a GRU on the outer X whose
 * Y is the branch's output, the else_branch passes X through. Exposing each
 * Y_h threads it out of its If, which looks up the sibling branch's scope.
 * With zero_h0, each GRU's initial_h is a zero Constant in its branch: N
 * values to detach and clean up, each in its own scope. */
static void if_grus(const char *path, long n, int zero_h0)
{
    long count = n ? n : 20000;
    Onnx__ModelProto *m = gru_base_model("2");
    Onnx__GraphProto *g = m->graph;
    mb_graph_input(g, "cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    for (long i = 0; i < count; i++) {
        char y[32], gru_name[32], if_name[32], out[32], else_out[32], h0[32], zero[32];
        char gru_in[64] = "X,W,R";
        snprintf(y, sizeof y, "y%ld", i);
        snprintf(gru_name, sizeof gru_name, "gru%ld", i);
        snprintf(if_name, sizeof if_name, "if%ld", i);
        snprintf(out, sizeof out, "out%ld", i);
        snprintf(else_out, sizeof else_out, "x%ld", i);
        Onnx__NodeProto *node = mb_graph_node(g, "If", if_name, "cond", out);
        Onnx__GraphProto *then_g = mb_attr_graph(node, "then_branch", "then");
        if (zero_h0) {
            snprintf(h0, sizeof h0, "h0_%ld", i);
            snprintf(zero, sizeof zero, "zero%ld", i);
            mb_attr_tensor(mb_graph_node(then_g, "Constant", zero, NULL, h0), "value",
                           mb_tensor_filled("", F32, MB_DIMS(1, 2, 8), 0));
            snprintf(gru_in, sizeof gru_in, "X,W,R,,,%s", h0);
        }
        gru8(then_g, gru_name, gru_in, y);
        mb_graph_output(then_g, y, F32, NULL);
        mb_identity_branch(node, "else_branch", "else", NULL, "X", else_out);
        mb_graph_output(g, out, F32, NULL);
    }
    write_model(path, m);
}

static void c_if_grus(const char *path, long n)
{
    if_grus(path, n, 0);
}

static void c_if_grus_zero_h0(const char *path, long n)
{
    if_grus(path, n, 1);
}

/* ---- random bytes ------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: deterministic for a seed, on every platform */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static void seed_rng(long seed)
{
    rng_state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)seed * 0xBF58476D1CE4E5B9ULL;
    if (!rng_state)
        rng_state = 1;
}

/* N: the seed. Plain random bytes, 1 to 16 KiB. */
static void c_random(const char *path, long n)
{
    seed_rng(n);
    size_t size = 1 + rng() % 16384;
    unsigned char *buf = xmalloc(size);
    for (size_t i = 0; i < size; i++)
        buf[i] = (unsigned char)rng();
    write_bytes(path, buf, size);
    free(buf);
}

/* Random fields of random wire types, nested up to `depth` (well-formed
 * framing, nonsense content): gets past the wire-format scan to protobuf-c. */
static void random_fields(wbuf *b, int depth)
{
    int fields = 1 + (int)(rng() % 6);
    for (int f = 0; f < fields; f++) {
        unsigned field = 1 + (unsigned)(rng() % 24);
        switch (rng() % 5) {
        case 0: wb_int(b, field, rng() >> (rng() % 64)); break;
        case 1: {
            unsigned char v[8];
            for (int i = 0; i < 8; i++)
                v[i] = (unsigned char)rng();
            wb_bytes(b, v, 8);
            wb_varint(b, (uint64_t)field << 3 | 1);
            break;
        }
        case 2: {
            char s[16];
            size_t len = rng() % sizeof s;
            for (size_t i = 0; i < len; i++)
                s[i] = (char)('a' + rng() % 26);
            wb_bytes(b, s, len);
            wb_wrap(b, field, len);
            break;
        }
        default:
            if (depth > 0) {
                size_t before = wb_len(b);
                random_fields(b, depth - 1);
                wb_wrap(b, field, wb_len(b) - before);
            }
        }
    }
}

static void c_random_wire(const char *path, long n)
{
    seed_rng(n);
    wbuf b = { 0 };
    random_fields(&b, 6);
    if (rng() % 2) {
        wb_model_around_graph(&b);
    }
    write_wbuf(path, &b);
}

/* ---- table ------------------------------------------------------------------ */

typedef struct case_def {
    const char *name;
    case_fn fn;
    int sized;            /* takes N; left out of --all */
    const rnn_spec *spec; /* without fn: the case is this one node */
} case_def;

/* A case that is one recurrent node as add_rnn() builds it. */
#define SPEC_CASE(name, ...) { name, NULL, 0, &(const rnn_spec){ __VA_ARGS__ } }

static const case_def cases[] = {
    { "tensor-proto", c_tensor, 0, NULL },
    { "no-graph", c_no_graph, 0, NULL },
    { "no-ir-version", c_no_ir_version, 0, NULL },
    { "exabyte-length", c_exabyte, 0, NULL },
    { "inner-length-overrun", c_inner_overrun, 0, NULL },
    { "overlong-varint", c_overlong_varint, 0, NULL },
    { "nested-if", c_nested_if, 1, NULL },
    { "nested-sequence", c_nested_seq, 1, NULL },
    { "nested-if-ok", c_nested_if_ok, 1, NULL },
    { "huge-dims", c_huge_dims, 0, NULL },
    { "huge-overflow", c_huge_overflow, 0, NULL },
    { "huge-hidden", c_huge_hidden, 0, NULL },
    { "hidden-int64-max", c_hidden_int64_max, 0, NULL },
    { "hidden-negative", c_hidden_negative, 0, NULL },
    { "hidden-negative-r-known", c_hidden_negative_r_known, 0, NULL },
    { "hidden-zero", c_hidden_zero, 0, NULL },
    { "hidden-missing", c_hidden_missing, 0, NULL },
    { "hidden-from-r", c_hidden_from_r, 0, NULL },
    { "r-negative-dim", c_r_negative_dim, 0, NULL },
    /* X declared with negative and absurd dims */
    SPEC_CASE("x-negative-dims", .op = "LSTM", .xdims = "-5,-3,4", .h = 8, .input = 4,
              .hidden_attr = 1, .attr_value = 8),
    SPEC_CASE("x-no-shape", .op = "RNN", .xdims = NULL, .h = 8, .input = 4, .hidden_attr = 1,
              .attr_value = 8),
    SPEC_CASE("x-rank1", .op = "GRU", .xdims = "7", .h = 8, .input = 4, .hidden_attr = 1,
              .attr_value = 8),
    { "x-no-type", c_x_no_type, 0, NULL },
    SPEC_CASE("too-few-inputs", .op = "LSTM", .xdims = "T,2,4", .h = 8, .input = 4,
              .hidden_attr = 1, .attr_value = 8, .inputs = "X,W"),
    { "no-inputs", c_no_inputs, 0, NULL },
    SPEC_CASE("empty-x", .op = "LSTM", .xdims = "T,2,4", .h = 8, .input = 4, .hidden_attr = 1,
              .attr_value = 8, .inputs = ",W,R"),
    { "no-outputs", c_no_outputs, 0, NULL },
    { "wrong-attr-types", c_wrong_attr_types, 0, NULL },
    { "attr-type-mismatch", c_attr_type_mismatch, 0, NULL },
    { "direction-bogus", c_direction_bogus, 0, NULL },
    { "null-strings", c_null_strings, 0, NULL },
    { "dup-value", c_dup_value, 0, NULL },
    { "dup-input", c_dup_input, 0, NULL },
    { "dup-initializer", c_dup_initializer, 0, NULL },
    { "dup-output", c_dup_output, 0, NULL },
    { "node-overwrites-input", c_node_overwrites_input, 0, NULL },
    { "collide", c_collide, 0, NULL },
    { "collide-twice", c_collide_twice, 0, NULL },
    { "collide-subgraph", c_collide_subgraph, 0, NULL },
    { "dup-value-in-branch", c_dup_value_in_branch, 0, NULL },
    { "if-branch-outputs-differ", c_if_branch_outputs_differ, 0, NULL },
    { "cycle-self", c_cycle_self, 0, NULL },
    { "cycle-identity", c_cycle_identity, 0, NULL },
    { "initializer-bad-data", c_initializer_bad_data, 0, NULL },
    { "initializer-huge-dims", c_initializer_huge_dims, 0, NULL },
    { "initializer-external", c_initializer_external, 0, NULL },
    { "external-absolute", c_external_absolute, 0, NULL },
    { "external-missing", c_external_missing, 0, NULL },
    { "initializer-wrong-type", c_initializer_wrong_type, 0, NULL },
    { "constant-huge-shape", c_constant_huge_shape, 0, NULL },
    { "no-opset", c_no_opset, 0, NULL },
    { "old-opset", c_old_opset, 0, NULL },
    { "rnn-in-subgraph", c_rnn_in_subgraph, 0, NULL },
    { "if-missing-else", c_if_missing_else, 0, NULL },
    { "if-missing-else-nested", c_if_missing_else_nested, 0, NULL },
    { "unknown-fields", c_unknown_fields, 0, NULL },
    { "hostile-names", c_hostile_names, 0, NULL },
    { "hostile-names-dup", c_hostile_names_dup, 0, NULL },
    { "good-gru", c_good_gru, 0, NULL },
    { "good-lstm", c_good_lstm, 0, NULL },
    { "big-weights", c_big_weights, 1, NULL },
    { "big-constant", c_big_constant, 1, NULL },
    { "lazy-corrupt-initializer", c_lazy_corrupt_initializer, 1, NULL },
    { "random", c_random, 1, NULL },
    { "random-wire", c_random_wire, 1, NULL },
    { "chain", c_chain, 1, NULL },
    { "many-grus", c_many_grus, 1, NULL },
    { "many-grus-same-name", c_many_grus_same_name, 1, NULL },
    { "concat-chain", c_concat_chain, 1, NULL },
    { "colliding-names", c_colliding_names, 1, NULL },
    { "if-grus", c_if_grus, 1, NULL },
    { "if-grus-zero-h0", c_if_grus_zero_h0, 1, NULL },
    { "value-info-grus", c_value_info_grus, 1, NULL },
};

static void write_case(const case_def *c, const char *path, long n)
{
    if (c->fn) {
        c->fn(path, n);
        return;
    }
    Onnx__ModelProto *m = new_model(17);
    add_rnn(m, c->spec);
    write_model(path, m);
}

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                die("out of memory");
            buf = grown;
        }
    }
    fclose(f);
    *size = len;
    return buf;
}

/* Copies IN to OUT with bit `bit` of byte `pos` (modulo the size) inverted. */
static int flip_bit(const char *in, const char *out, unsigned long pos, int bit)
{
    size_t len;
    unsigned char *buf = read_file(in, &len);
    if (len)
        buf[pos % len] ^= (unsigned char)(1u << (bit & 7));
    write_bytes(out, buf, len);
    free(buf);
    return 0;
}

static int print_names(const char *path)
{
    size_t len;
    unsigned char *buf = read_file(path, &len);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!m || !m->graph)
        die("%s: not a model", path);
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; i < g->n_input; i++)
        printf("input %s\n", g->input[i]->name ? g->input[i]->name : "");
    for (size_t i = 0; i < g->n_output; i++)
        printf("output %s\n", g->output[i]->name ? g->output[i]->name : "");
    for (size_t i = 0; i < g->n_initializer; i++)
        printf("initializer %s\n", g->initializer[i]->name ? g->initializer[i]->name : "");
    for (size_t i = 0; i < g->n_node; i++)
        printf("node %s %s\n", g->node[i]->op_type ? g->node[i]->op_type : "",
               g->node[i]->name ? g->node[i]->name : "");
    for (size_t i = 0; i < m->n_metadata_props; i++)
        printf("metadata %s\t%s\n", m->metadata_props[i]->key ? m->metadata_props[i]->key : "",
               m->metadata_props[i]->value ? m->metadata_props[i]->value : "");
    onnx__model_proto__free_unpacked(m, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n_cases = sizeof cases / sizeof cases[0];
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < n_cases; i++)
            printf("%s%s\n", cases[i].name, cases[i].sized ? " N" : "");
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "--flip"))
        return flip_bit(argv[2], argv[3], strtoul(argv[4], NULL, 10), atoi(argv[5]));
    if (argc == 3 && !strcmp(argv[1], "--names"))
        return print_names(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--all")) {
        for (size_t i = 0; i < n_cases; i++) {
            if (cases[i].sized)
                continue;
            size_t need = strlen(argv[2]) + strlen(cases[i].name) + 8;
            char *path = xmalloc(need);
            snprintf(path, need, "%s/%s.onnx", argv[2], cases[i].name);
            write_case(&cases[i], path, 0);
            free(path);
        }
        return 0;
    }
    if (argc == 3 || argc == 4) {
        for (size_t i = 0; i < n_cases; i++) {
            if (strcmp(cases[i].name, argv[1]) != 0)
                continue;
            long n = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
            write_case(&cases[i], argv[2], n);
            return 0;
        }
        die("unknown case '%s' (see --list)", argv[1]);
    }
    fprintf(stderr, "usage: make-bad-models --list | --all DIR | --names FILE | --flip IN OUT POS BIT | "
                    "CASE FILE [N]\n");
    return 2;
}
