/* make_large_model: writes a large PyTorch-like stacked LSTM as an ONNX model.
 *
 *   make_large_model OUT.onnx LAYERS HIDDEN
 *   make_large_model --grus OUT.onnx COUNT HIDDEN
 *   make_large_model --small-grus OUT.onnx COUNT
 *   make_large_model --chain OUT.onnx NODES
 *   make_large_model --chain-exposed OUT.onnx NODES
 *   make_large_model --gru-chain OUT.onnx COUNT
 *   make_large_model --vi-grus OUT.onnx COUNT
 *   make_large_model --lstm-chain OUT.onnx NODES
 *   make_large_model --ifs OUT.onnx COUNT
 *
 * The graph is what torch.onnx.export (PyTorch 1.13, opset 14, dynamic axes)
 * emits for nn.LSTM(H, H, num_layers=L) called without a state:
 *
 *   x [T, batch, H]
 *   zeros = ConstantOfShape(Concat([L], Unsqueeze(Gather(Shape(x), 1)), [H]))
 *   per layer i: h0 = Slice(zeros, [i], [i+1], axes [0]), c0 = the same,
 *                Y = LSTM(in, W_i, R_i, B_i, '', h0, c0), in = Squeeze(Y, [1])
 *   y = the last Squeeze
 *
 * W [1,4H,H], R [1,4H,H] and B [1,8H] are float32 initializers whose raw_data
 * comes from a fast deterministic PRNG (values in [-0.05, 0.05)). The file is
 * about 32*L*H^2 bytes (L=8, H=2048: 1 GiB).
 *
 * With --grus, COUNT GRU nodes side by side instead, each reading x and its
 * own W [1,3H,H] and R [1,3H,H], its Y a graph output: many large weight
 * tensors (H=74: each W and R just over 64 KiB, the default lazy threshold;
 * 6,000 GRUs make 0.79 GB).
 *
 * With --small-grus, COUNT small GRUs (hidden 8) side by side sharing one W
 * and R: a graph of many recurrent nodes and no weight to speak of. With
 * --chain, a graph of NODES nodes: x through NODES/2 Relu nodes into a GRU
 * whose initial_h comes from a zero constant through NODES/2 Identity nodes.
 * That is further back than the analysis follows (64 nodes), so the GRU is
 * skipped ("initial_h comes through more than 64 nodes") and the model written
 * unchanged: a large graph loaded, indexed, analysed and written. With
 * --chain-exposed, the chain as PyTorch would export it: x through NODES-1
 * Relu nodes into a GRU whose initial_h is one Identity of the zero
 * constant; the GRU is exposed and the Identity removed, so the graph is
 * also indexed again after the state pass and its names collected.
 *
 * The shapes of issue 24, all on x [T, 2, 8] with hidden 8: --gru-chain,
 * COUNT GRUs in a chain (x -> GRU -> Squeeze -> GRU -> ...), each with its
 * own W, R and B initializers; --vi-grus, the same chain sharing one W, R and
 * B, with a value_info for every GRU's Y and every Squeeze's output;
 * --lstm-chain, NODES nodes: two LSTMs (each followed by a Squeeze), then
 * alternating Add(v, bias) and Identity; --ifs, a GRU and a Squeeze, then
 * COUNT If nodes in a chain, each choosing on the graph input `cond` between
 * an Identity and a Relu of the previous value (two one-node branches).
 *
 * The protobuf wire format is written by hand and the weights are streamed to
 * disk in 1 MiB chunks: memory use does not depend on the model's size. Every
 * message except the graph is small and built in memory; the graph's length is
 * computed up front from the initializers' sizes. Protobuf readers accept
 * fields in any order, so the graph is written as nodes, name, inputs,
 * outputs, then the initializers.
 *
 * On success, prints one line: "bytes=N weight_bytes=W structure_bytes=S"
 * (S = N - W: everything that is not initializer raw_data). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable byte buffer and the wire format ---------------------------- */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void die(const char *msg)
{
    fprintf(stderr, "make_large_model: %s\n", msg);
    exit(1);
}

static void put(buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            die("out of memory");
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_varint(buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (unsigned char)v;
    put(b, tmp, n);
}

enum { WT_VARINT = 0, WT_I32 = 5, WT_LEN = 2 };

static void put_tag(buf *b, unsigned field, unsigned wt) { put_varint(b, ((uint64_t)field << 3) | wt); }

static void put_int(buf *b, unsigned field, int64_t v)
{
    put_tag(b, field, WT_VARINT);
    put_varint(b, (uint64_t)v);
}

static void put_bytes(buf *b, unsigned field, const void *data, size_t n)
{
    put_tag(b, field, WT_LEN);
    put_varint(b, n);
    put(b, data, n);
}

static void put_str(buf *b, unsigned field, const char *s) { put_bytes(b, field, s, strlen(s)); }

/* Appends `sub` as a length-delimited field and empties it. */
static void put_msg(buf *b, unsigned field, buf *sub)
{
    put_bytes(b, field, sub->p, sub->n);
    free(sub->p);
    *sub = (buf){ 0 };
}

/* ---- ONNX messages (field numbers from onnx.proto) ------------------------- */

enum { FLOAT = 1, INT64 = 7 };              /* TensorProto.DataType */
enum { ATTR_INT = 2, ATTR_TENSOR = 4 };     /* AttributeProto.AttributeType */

/* A small TensorProto with raw_data. */
static void tensor(buf *t, const char *name, int32_t type, const int64_t *dims, size_t nd,
                   const void *raw, size_t raw_n)
{
    for (size_t i = 0; i < nd; i++)
        put_int(t, 1, dims[i]);
    put_int(t, 2, type);
    if (name)
        put_str(t, 8, name);
    put_bytes(t, 9, raw, raw_n);
}

typedef struct node_args {
    const char *op, *name;
    const char *in[8];
    const char *out[4];
    buf attrs[2];
    size_t n_attrs;
} node_args;

static void attr_int(node_args *a, const char *name, int64_t v)
{
    buf *x = &a->attrs[a->n_attrs++];
    put_str(x, 1, name);
    put_int(x, 3, v);
    put_int(x, 20, ATTR_INT);
}

static void attr_tensor(node_args *a, const char *name, buf *t)
{
    buf *x = &a->attrs[a->n_attrs++];
    put_str(x, 1, name);
    put_msg(x, 5, t);
    put_int(x, 20, ATTR_TENSOR);
}

static void node(buf *graph, node_args *a)
{
    buf n = { 0 };
    for (size_t i = 0; i < 8 && a->in[i]; i++)
        put_str(&n, 1, a->in[i][0] == '-' ? "" : a->in[i]); /* "-": an empty (absent) input */
    for (size_t i = 0; i < 4 && a->out[i]; i++)
        put_str(&n, 2, a->out[i]);
    put_str(&n, 3, a->name);
    put_str(&n, 4, a->op);
    for (size_t i = 0; i < a->n_attrs; i++)
        put_msg(&n, 5, &a->attrs[i]);
    put_msg(graph, 1, &n);
}

/* A Constant node holding an int64 tensor of `n` values (a scalar if !vector). */
static void constant_i64(buf *graph, const char *out, const int64_t *v, size_t n, int vector)
{
    int64_t dims[1] = { (int64_t)n };
    buf t = { 0 };
    tensor(&t, NULL, INT64, dims, vector ? 1 : 0, v, n * sizeof *v);
    node_args a = { .op = "Constant", .name = out, .out = { out } };
    attr_tensor(&a, "value", &t);
    node(graph, &a);
}

/* ValueInfoProto for a float tensor; dims[i] < 0 means the symbol syms[i]. */
static void value_info(buf *graph, unsigned field, const char *name, const int64_t *dims,
                       const char *const *syms, size_t nd)
{
    buf shape = { 0 }, tt = { 0 }, type = { 0 }, vi = { 0 };
    for (size_t i = 0; i < nd; i++) {
        buf d = { 0 };
        if (dims[i] < 0)
            put_str(&d, 2, syms[i]);
        else
            put_int(&d, 1, dims[i]);
        put_msg(&shape, 1, &d);
    }
    put_int(&tt, 1, FLOAT);
    put_msg(&tt, 2, &shape);
    put_msg(&type, 1, &tt);
    put_str(&vi, 1, name);
    put_msg(&vi, 2, &type);
    put_msg(graph, field, &vi);
}

/* ---- streamed initializers ------------------------------------------------- */

typedef struct init_spec {
    char name[32];
    int64_t dims[3];
    size_t nd;
    uint64_t raw_n; /* bytes of raw_data */
} init_spec;

/* The TensorProto up to and including raw_data's length prefix. */
static void init_header(buf *h, const init_spec *s)
{
    for (size_t i = 0; i < s->nd; i++)
        put_int(h, 1, s->dims[i]);
    put_int(h, 2, FLOAT);
    put_str(h, 8, s->name);
    put_tag(h, 9, WT_LEN);
    put_varint(h, s->raw_n);
}

/* Size of GraphProto.initializer entry (tag, length, message). */
static uint64_t init_field_len(const init_spec *s)
{
    buf h = { 0 };
    init_header(&h, s);
    uint64_t msg = h.n + s->raw_n;
    free(h.p);
    return 1 + varint_len(msg) + msg;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* xorshift64*: two floats in [-0.05, 0.05) per step. */
static void fill_floats(float *f, size_t n)
{
    uint64_t x = rng_state;
    for (size_t i = 0; i < n; i += 2) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545f4914f6cdd1du;
        uint32_t u[2] = { (uint32_t)(r >> 41) | 0x3f800000u, (uint32_t)(r >> 9 & 0x7fffffu) | 0x3f800000u };
        for (int k = 0; k < 2 && i + (size_t)k < n; k++) {
            float v;
            memcpy(&v, &u[k], sizeof v); /* [1, 2) */
            f[i + (size_t)k] = (v - 1.5f) * 0.1f;
        }
    }
    rng_state = x;
}

static void write_all(FILE *out, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, out) != n)
        die(strerror(errno));
}

static void stream_initializer(FILE *out, const init_spec *s, float *chunk, size_t chunk_floats)
{
    buf h = { 0 }, pre = { 0 };
    init_header(&h, s);
    put_tag(&pre, 5, WT_LEN);
    put_varint(&pre, h.n + s->raw_n);
    write_all(out, pre.p, pre.n);
    write_all(out, h.p, h.n);
    free(pre.p);
    free(h.p);
    for (uint64_t left = s->raw_n / sizeof(float); left;) {
        size_t n = left < chunk_floats ? (size_t)left : chunk_floats;
        fill_floats(chunk, n);
        write_all(out, chunk, n * sizeof(float)); /* little-endian hosts only */
        left -= n;
    }
}

/* ---- the model ------------------------------------------------------------- */

/* The stacked LSTM: everything in the graph but the initializers goes to g,
 * the initializers' specs to *inits (3 per layer). */
static void build_lstm(buf *graph, init_spec **inits_out, int64_t L, int64_t H)
{
    buf g = { 0 };
    char a[64], b[64], c[64];
    const int64_t one = 1, zero = 0, lv = L, hv = H;
    node(&g, &(node_args){ .op = "Shape", .name = "/rnn/Shape", .in = { "x" }, .out = { "/rnn/Shape_output_0" } });
    constant_i64(&g, "/rnn/Constant_output_0", &one, 1, 0);
    node(&g, &(node_args){ .op = "Gather", .name = "/rnn/Gather",
                           .in = { "/rnn/Shape_output_0", "/rnn/Constant_output_0" },
                           .out = { "/rnn/Gather_output_0" } });
    constant_i64(&g, "/rnn/Constant_1_output_0", &lv, 1, 1);
    constant_i64(&g, "onnx::Unsqueeze_16", &zero, 1, 1);
    node(&g, &(node_args){ .op = "Unsqueeze", .name = "/rnn/Unsqueeze",
                           .in = { "/rnn/Gather_output_0", "onnx::Unsqueeze_16" },
                           .out = { "/rnn/Unsqueeze_output_0" } });
    constant_i64(&g, "/rnn/Constant_2_output_0", &hv, 1, 1);
    {
        node_args n = { .op = "Concat", .name = "/rnn/Concat",
                        .in = { "/rnn/Constant_1_output_0", "/rnn/Unsqueeze_output_0", "/rnn/Constant_2_output_0" },
                        .out = { "/rnn/Concat_output_0" } };
        attr_int(&n, "axis", 0);
        node(&g, &n);
        buf t = { 0 };
        const float fz = 0.0f;
        tensor(&t, NULL, FLOAT, &one, 1, &fz, sizeof fz);
        node_args cs = { .op = "ConstantOfShape", .name = "/rnn/ConstantOfShape",
                         .in = { "/rnn/Concat_output_0" }, .out = { "/rnn/ConstantOfShape_output_0" } };
        attr_tensor(&cs, "value", &t);
        node(&g, &cs);
    }

    init_spec *inits = calloc((size_t)L * 3, sizeof *inits);
    if (!inits)
        die("out of memory");
    int konst = 3, slice = 0, init_id = 186;
    char prev[64] = "x";
    for (int64_t i = 0; i < L; i++) {
        char state[2][64];
        for (int s = 0; s < 2; s++) { /* initial_h, initial_c */
            int64_t lo = i, hi = i + 1;
            snprintf(a, sizeof a, "/rnn/Constant_%d_output_0", konst++);
            constant_i64(&g, a, &zero, 1, 1);
            snprintf(b, sizeof b, "/rnn/Constant_%d_output_0", konst++);
            constant_i64(&g, b, &lo, 1, 1);
            snprintf(c, sizeof c, "/rnn/Constant_%d_output_0", konst++);
            constant_i64(&g, c, &hi, 1, 1);
            char name[32];
            snprintf(name, sizeof name, slice ? "/rnn/Slice_%d" : "/rnn/Slice", slice);
            snprintf(state[s], sizeof state[s], "%s_output_0", name);
            slice++;
            node(&g, &(node_args){ .op = "Slice", .name = name,
                                   .in = { "/rnn/ConstantOfShape_output_0", b, c, a },
                                   .out = { state[s] } });
        }
        init_spec *w = &inits[3 * i], *r = w + 1, *bias = w + 2;
        snprintf(w->name, sizeof w->name, "onnx::LSTM_%d", init_id);
        snprintf(r->name, sizeof r->name, "onnx::LSTM_%d", init_id + 1);
        snprintf(bias->name, sizeof bias->name, "onnx::LSTM_%d", init_id + 2);
        init_id += 20;
        w->nd = r->nd = 3;
        w->dims[0] = r->dims[0] = 1;
        w->dims[1] = r->dims[1] = 4 * H;
        w->dims[2] = r->dims[2] = H;
        w->raw_n = r->raw_n = (uint64_t)(4 * H) * (uint64_t)H * 4;
        bias->nd = 2;
        bias->dims[0] = 1;
        bias->dims[1] = 8 * H;
        bias->raw_n = (uint64_t)(8 * H) * 4;

        char lstm[32], y[64], yh[64], yc[64], sq[64];
        snprintf(lstm, sizeof lstm, i ? "/rnn/LSTM_%" PRId64 : "/rnn/LSTM", i);
        snprintf(y, sizeof y, "%s_output_0", lstm);
        snprintf(yh, sizeof yh, "%s_output_1", lstm);
        snprintf(yc, sizeof yc, "%s_output_2", lstm);
        node_args n = { .op = "LSTM", .name = lstm,
                        .in = { prev, w->name, r->name, bias->name, "-", state[0], state[1] },
                        .out = { y, yh, yc } };
        attr_int(&n, "hidden_size", H);
        node(&g, &n);

        snprintf(a, sizeof a, "/rnn/Constant_%d_output_0", konst++);
        constant_i64(&g, a, &one, 1, 1);
        if (i == L - 1)
            snprintf(sq, sizeof sq, "y");
        else
            snprintf(sq, sizeof sq, i ? "/rnn/Squeeze_%" PRId64 "_output_0" : "/rnn/Squeeze_output_0", i);
        char sqname[64];
        snprintf(sqname, sizeof sqname, i ? "/rnn/Squeeze_%" PRId64 : "/rnn/Squeeze", i);
        node(&g, &(node_args){ .op = "Squeeze", .name = sqname, .in = { y, a }, .out = { sq } });
        snprintf(prev, sizeof prev, "%s", sq);
    }
    put_str(&g, 2, "main_graph");
    const int64_t io_dims[3] = { -1, -1, H };
    const char *const io_syms[3] = { "T", "batch", NULL };
    value_info(&g, 11, "x", io_dims, io_syms, 3);
    value_info(&g, 12, "y", io_dims, io_syms, 3);
    *graph = g;
    *inits_out = inits;
}

/* COUNT GRUs side by side on x, each with its own W and R (2 initializers each). */
static void build_grus(buf *graph, init_spec **inits_out, int64_t count, int64_t H)
{
    buf g = { 0 };
    init_spec *inits = calloc((size_t)count * 2, sizeof *inits);
    if (!inits)
        die("out of memory");
    const int64_t io_dims[3] = { -1, -1, H }, y_dims[4] = { -1, 1, -1, H };
    const char *const io_syms[3] = { "T", "batch", NULL };
    const char *const y_syms[4] = { "T", NULL, "batch", NULL };
    for (int64_t i = 0; i < count; i++) {
        init_spec *w = &inits[2 * i], *r = w + 1;
        snprintf(w->name, sizeof w->name, "W_%" PRId64, i);
        snprintf(r->name, sizeof r->name, "R_%" PRId64, i);
        w->nd = r->nd = 3;
        w->dims[0] = r->dims[0] = 1;
        w->dims[1] = r->dims[1] = 3 * H;
        w->dims[2] = r->dims[2] = H;
        w->raw_n = r->raw_n = (uint64_t)(3 * H) * (uint64_t)H * 4;
        char name[32], y[32];
        snprintf(name, sizeof name, "gru_%" PRId64, i);
        snprintf(y, sizeof y, "y_%" PRId64, i);
        node_args n = { .op = "GRU", .name = name, .in = { "x", w->name, r->name }, .out = { y } };
        attr_int(&n, "hidden_size", H);
        node(&g, &n);
    }
    put_str(&g, 2, "main_graph");
    value_info(&g, 11, "x", io_dims, io_syms, 3);
    for (int64_t i = 0; i < count; i++) {
        char y[32];
        snprintf(y, sizeof y, "y_%" PRId64, i);
        value_info(&g, 12, y, y_dims, y_syms, 4);
    }
    *graph = g;
    *inits_out = inits;
}

/* A small float initializer stored in the graph itself (field 5). */
static void small_initializer(buf *g, const char *name, const int64_t *dims, size_t nd,
                              int zeros)
{
    size_t count = 1;
    for (size_t i = 0; i < nd; i++)
        count *= (size_t)dims[i];
    float *values = calloc(count, sizeof *values);
    if (!values)
        die("out of memory");
    if (!zeros)
        fill_floats(values, count);
    buf t = { 0 };
    tensor(&t, name, FLOAT, dims, nd, values, count * sizeof *values);
    put_msg(g, 5, &t);
    free(values);
}

static void small_gru(buf *g, const char *name, const char *x, const char *h0, const char *y)
{
    node_args n = { .op = "GRU", .name = name, .in = { x, "W", "R", "-", "-", h0 }, .out = { y } };
    if (!h0)
        n.in[3] = NULL;
    attr_int(&n, "hidden_size", 8);
    node(g, &n);
}

/* COUNT GRUs, hidden 8, side by side on x [T, 2, 4]. */
static void build_small_grus(buf *graph, int64_t count)
{
    buf g = { 0 };
    const int64_t wd[3] = { 1, 24, 4 }, rd[3] = { 1, 24, 8 };
    small_initializer(&g, "W", wd, 3, 0);
    small_initializer(&g, "R", rd, 3, 0);
    for (int64_t i = 0; i < count; i++) {
        char name[32], y[32];
        snprintf(name, sizeof name, "gru_%" PRId64, i);
        snprintf(y, sizeof y, "y_%" PRId64, i);
        small_gru(&g, name, "x", NULL, y);
    }
    put_str(&g, 2, "main_graph");
    const int64_t x_dims[3] = { -1, 2, 4 }, y_dims[4] = { -1, 1, 2, 8 };
    const char *const syms[4] = { "T", NULL, NULL, NULL };
    value_info(&g, 11, "x", x_dims, syms, 3);
    for (int64_t i = 0; i < count; i++) {
        char y[32];
        snprintf(y, sizeof y, "y_%" PRId64, i);
        value_info(&g, 12, y, y_dims, syms, 4);
    }
    *graph = g;
}

/* x -> NODES - IDENTITIES Relu -> GRU <- IDENTITIES Identity <- zero initial_h. */
static void build_chain(buf *graph, int64_t nodes, int64_t identities)
{
    buf g = { 0 };
    const int64_t wd[3] = { 1, 24, 4 }, rd[3] = { 1, 24, 8 }, hd[3] = { 1, 2, 8 };
    small_initializer(&g, "W", wd, 3, 0);
    small_initializer(&g, "R", rd, 3, 0);
    small_initializer(&g, "h_zero", hd, 3, 1);
    char in[32] = "x", out[32];
    for (int64_t i = 0; i < nodes - identities; i++) {
        snprintf(out, sizeof out, "x%" PRId64, i);
        node(&g, &(node_args){ .op = "Relu", .name = out, .in = { in }, .out = { out } });
        snprintf(in, sizeof in, "%s", out);
    }
    char x_end[32], h[32] = "h_zero";
    snprintf(x_end, sizeof x_end, "%s", in);
    for (int64_t i = 0; i < identities; i++) {
        snprintf(out, sizeof out, "h%" PRId64, i);
        node(&g, &(node_args){ .op = "Identity", .name = out, .in = { h }, .out = { out } });
        snprintf(h, sizeof h, "%s", out);
    }
    small_gru(&g, "gru", x_end, h, "y");
    put_str(&g, 2, "main_graph");
    const int64_t x_dims[3] = { -1, 2, 4 }, y_dims[4] = { -1, 1, 2, 8 };
    const char *const syms[4] = { "T", NULL, NULL, NULL };
    value_info(&g, 11, "x", x_dims, syms, 3);
    value_info(&g, 12, "y", y_dims, syms, 4);
    *graph = g;
}

/* A GRU of hidden 8 reading x and its own (or shared) W, R, B; y its Y. */
static void gru8(buf *g, const char *name, const char *x, const char *w, const char *r,
                 const char *b, const char *y)
{
    node_args n = { .op = "GRU", .name = name, .in = { x, w, r, b }, .out = { y } };
    attr_int(&n, "hidden_size", 8);
    node(g, &n);
}

/* Squeeze(in, axes) -> out (opset 13+: the axes are an input). */
static void squeeze(buf *g, const char *name, const char *in, const char *axes, const char *out)
{
    node(g, &(node_args){ .op = "Squeeze", .name = name, .in = { in, axes }, .out = { out } });
}

static void axes_initializer(buf *g)
{
    const int64_t one = 1, d[1] = { 1 };
    buf t = { 0 };
    tensor(&t, "axes1", INT64, d, 1, &one, sizeof one);
    put_msg(g, 5, &t);
}

/* x [T, 2, 8] -> COUNT x (GRU -> Squeeze) -> y; every GRU with its own W, R
 * and B when `own`, else sharing one set; with `vi`, a value_info for every
 * GRU's Y and every Squeeze's output. */
static void build_gru_chain(buf *graph, int64_t count, int own, int vi)
{
    buf g = { 0 };
    const int64_t wd[3] = { 1, 24, 8 }, bd[2] = { 1, 48 };
    const int64_t x_dims[3] = { -1, 2, 8 }, y_dims[4] = { -1, 1, 2, 8 };
    const char *const syms[4] = { "T", NULL, NULL, NULL };
    axes_initializer(&g);
    if (!own) {
        small_initializer(&g, "W", wd, 3, 0);
        small_initializer(&g, "R", wd, 3, 0);
        small_initializer(&g, "B", bd, 2, 0);
    }
    char in[32] = "x";
    for (int64_t i = 0; i < count; i++) {
        char name[32], y[32], s[32], w[32] = "W", r[32] = "R", b[32] = "B";
        if (own) {
            snprintf(w, sizeof w, "W%" PRId64, i);
            snprintf(r, sizeof r, "R%" PRId64, i);
            snprintf(b, sizeof b, "B%" PRId64, i);
            small_initializer(&g, w, wd, 3, 0);
            small_initializer(&g, r, wd, 3, 0);
            small_initializer(&g, b, bd, 2, 0);
        }
        snprintf(name, sizeof name, "gru_%" PRId64, i);
        snprintf(y, sizeof y, "y_%" PRId64, i);
        snprintf(s, sizeof s, "s_%" PRId64, i);
        gru8(&g, name, in, w, r, b, y);
        snprintf(name, sizeof name, "sq_%" PRId64, i);
        squeeze(&g, name, y, "axes1", s);
        if (vi) {
            value_info(&g, 13, y, y_dims, syms, 4);
            value_info(&g, 13, s, x_dims, syms, 3);
        }
        snprintf(in, sizeof in, "%s", s);
    }
    put_str(&g, 2, "main_graph");
    value_info(&g, 11, "x", x_dims, syms, 3);
    value_info(&g, 12, in, x_dims, syms, 3);
    *graph = g;
}

/* x [T, 2, 8] -> LSTM -> Squeeze -> LSTM -> Squeeze, then NODES - 4 nodes
 * alternating Add(v, bias) and Identity -> y. */
static void build_lstm_chain(buf *graph, int64_t nodes)
{
    buf g = { 0 };
    const int64_t wd[3] = { 1, 32, 8 }, bd[2] = { 1, 64 }, biasd[1] = { 8 };
    const int64_t x_dims[3] = { -1, 2, 8 };
    const char *const syms[3] = { "T", NULL, NULL };
    axes_initializer(&g);
    small_initializer(&g, "W", wd, 3, 0);
    small_initializer(&g, "R", wd, 3, 0);
    small_initializer(&g, "B", bd, 2, 0);
    small_initializer(&g, "bias", biasd, 1, 0);
    char in[32] = "x", out[32];
    for (int i = 0; i < 2; i++) {
        char name[32], y[32];
        snprintf(name, sizeof name, "lstm_%d", i);
        snprintf(y, sizeof y, "ly_%d", i);
        node_args n = { .op = "LSTM", .name = name, .in = { in, "W", "R", "B" }, .out = { y } };
        attr_int(&n, "hidden_size", 8);
        node(&g, &n);
        snprintf(name, sizeof name, "lsq_%d", i);
        snprintf(out, sizeof out, "ls_%d", i);
        squeeze(&g, name, y, "axes1", out);
        snprintf(in, sizeof in, "%s", out);
    }
    for (int64_t i = 0; i + 4 < nodes; i++) {
        snprintf(out, sizeof out, "v%" PRId64, i);
        if (i % 2 == 0)
            node(&g, &(node_args){ .op = "Add", .name = out, .in = { in, "bias" }, .out = { out } });
        else
            node(&g, &(node_args){ .op = "Identity", .name = out, .in = { in }, .out = { out } });
        snprintf(in, sizeof in, "%s", out);
    }
    put_str(&g, 2, "main_graph");
    value_info(&g, 11, "x", x_dims, syms, 3);
    value_info(&g, 12, in, x_dims, syms, 3);
    *graph = g;
}

/* A branch graph: one node `op` of the outer value `in` -> out, its output. */
static void branch(buf *attr_graph, const char *name, const char *op, const char *in,
                   const char *out)
{
    buf b = { 0 };
    node(&b, &(node_args){ .op = op, .name = name, .in = { in }, .out = { out } });
    put_str(&b, 2, name);
    buf vi = { 0 };
    put_str(&vi, 1, out);
    put_msg(&b, 12, &vi);
    put_msg(attr_graph, 6, &b);
}

/* x [T, 2, 8] -> GRU -> Squeeze -> COUNT If nodes in a chain, each choosing on
 * the graph input `cond` between Identity and Relu of the previous value. */
static void build_ifs(buf *graph, int64_t count)
{
    buf g = { 0 };
    const int64_t wd[3] = { 1, 24, 8 }, bd[2] = { 1, 48 };
    const int64_t x_dims[3] = { -1, 2, 8 };
    const char *const syms[3] = { "T", NULL, NULL };
    axes_initializer(&g);
    small_initializer(&g, "W", wd, 3, 0);
    small_initializer(&g, "R", wd, 3, 0);
    small_initializer(&g, "B", bd, 2, 0);
    gru8(&g, "gru", "x", "W", "R", "B", "gy");
    squeeze(&g, "gsq", "gy", "axes1", "gs");
    char in[32] = "gs";
    for (int64_t i = 0; i < count; i++) {
        char name[32], out[32], t[32], e[32];
        snprintf(name, sizeof name, "if_%" PRId64, i);
        snprintf(out, sizeof out, "v%" PRId64, i);
        snprintf(t, sizeof t, "t%" PRId64, i);
        snprintf(e, sizeof e, "e%" PRId64, i);
        node_args n = { .op = "If", .name = name, .in = { "cond" }, .out = { out } };
        buf *a = &n.attrs[n.n_attrs++];
        put_str(a, 1, "then_branch");
        branch(a, t, "Identity", in, t);
        put_int(a, 20, 5); /* GRAPH */
        a = &n.attrs[n.n_attrs++];
        put_str(a, 1, "else_branch");
        branch(a, e, "Relu", in, e);
        put_int(a, 20, 5);
        node(&g, &n);
        snprintf(in, sizeof in, "%s", out);
    }
    put_str(&g, 2, "main_graph");
    value_info(&g, 11, "x", x_dims, syms, 3);
    buf cond = { 0 }, tt = { 0 }, type = { 0 }, shape = { 0 };
    put_int(&tt, 1, 9); /* BOOL */
    put_msg(&tt, 2, &shape);
    put_msg(&type, 1, &tt);
    put_str(&cond, 1, "cond");
    put_msg(&cond, 2, &type);
    put_msg(&g, 11, &cond);
    value_info(&g, 12, in, x_dims, syms, 3);
    *graph = g;
}

int main(int argc, char **argv)
{
    static const char *const modes[] = { "--gru-chain", "--vi-grus", "--lstm-chain", "--ifs" };
    int extra = -1;
    for (int i = 0; argc == 4 && i < 4; i++)
        if (!strcmp(argv[1], modes[i]))
            extra = i;
    int grus = argc == 5 && !strcmp(argv[1], "--grus");
    int chain = argc == 4 && (!strcmp(argv[1], "--chain") || !strcmp(argv[1], "--chain-exposed"));
    int small = extra >= 0 || chain || (argc == 4 && !strcmp(argv[1], "--small-grus"));
    if (argc != 4 && !grus && !small) {
        fprintf(stderr, "usage: make_large_model OUT.onnx LAYERS HIDDEN\n"
                        "       make_large_model --grus OUT.onnx COUNT HIDDEN\n"
                        "       make_large_model --small-grus OUT.onnx COUNT\n"
                        "       make_large_model --chain OUT.onnx NODES\n"
                        "       make_large_model --chain-exposed OUT.onnx NODES\n"
                        "       make_large_model --gru-chain OUT.onnx COUNT\n"
                        "       make_large_model --vi-grus OUT.onnx COUNT\n"
                        "       make_large_model --lstm-chain OUT.onnx NODES\n"
                        "       make_large_model --ifs OUT.onnx COUNT\n");
        return 2;
    }
    int shift = grus || small;
    const char *path = argv[1 + shift];
    long layers = strtol(argv[2 + shift], NULL, 10);
    long hidden = small ? 8 : strtol(argv[3 + shift], NULL, 10);
    if (layers < 1 || layers > (shift ? 100000000 : 1000) || hidden < 1 || hidden > 1 << 20)
        die("LAYERS must be 1..1000 (COUNT, NODES 1..10^8) and HIDDEN 1..1048576");
    const int64_t L = layers, H = hidden;
    int64_t n_inits = small ? 0 : grus ? 2 * L : 3 * L;
    buf g;
    init_spec *inits = NULL;
    if (extra == 0 || extra == 1)
        build_gru_chain(&g, L, extra == 0, extra == 1);
    else if (extra == 2)
        build_lstm_chain(&g, L);
    else if (extra == 3)
        build_ifs(&g, L);
    else if (chain)
        build_chain(&g, L, !strcmp(argv[1], "--chain") ? L / 2 : 1);
    else if (small)
        build_small_grus(&g, L);
    else if (grus)
        build_grus(&g, &inits, L, H);
    else
        build_lstm(&g, &inits, L, H);

    uint64_t graph_len = g.n, weights = 0;
    for (int64_t i = 0; i < n_inits; i++) {
        graph_len += init_field_len(&inits[i]);
        weights += inits[i].raw_n;
    }

    /* ModelProto: ir_version, producer, opset_import, then the graph. */
    buf m = { 0 }, op = { 0 };
    put_int(&m, 1, 8);
    put_str(&m, 2, "pytorch");
    put_str(&m, 3, "1.13.1");
    put_str(&op, 1, "");
    put_int(&op, 2, 14);
    put_msg(&m, 8, &op);
    put_tag(&m, 7, WT_LEN);
    put_varint(&m, graph_len);

    if (m.n + graph_len >= (1ull << 31))
        die("the model would exceed protobuf's 2 GiB limit");
    FILE *out = fopen(path, "wb");
    if (!out) {
        fprintf(stderr, "make_large_model: %s: %s\n", path, strerror(errno));
        return 1;
    }
    write_all(out, m.p, m.n);
    write_all(out, g.p, g.n);
    const size_t chunk_floats = 1 << 18; /* 1 MiB */
    float *chunk = malloc(chunk_floats * sizeof *chunk);
    if (!chunk)
        die("out of memory");
    for (int64_t i = 0; i < n_inits; i++)
        stream_initializer(out, &inits[i], chunk, chunk_floats);
    if (fclose(out) != 0)
        die(strerror(errno));
    uint64_t total = m.n + graph_len;
    printf("bytes=%" PRIu64 " weight_bytes=%" PRIu64 " structure_bytes=%" PRIu64 "\n", total, weights,
           total - weights);
    free(chunk);
    free(inits);
    free(m.p);
    free(g.p);
    return 0;
}
