/* model_builder: builds ONNX models in memory (model_builder.c, through the
 * library's onnx_build.c; also used by tests/tools/make_bad_models.c), runs
 * them through the public API (load -> rewrite -> save) and inspects the
 * graph that comes back (model_run.c, with cmocka).
 *
 * Everything a builder function attaches to a model is malloc'd, so
 * protobuf_c_message_free_unpacked() (or mb_free()) releases the whole model.
 * Builders never return NULL: running out of memory aborts.
 *
 * Shapes of value infos are written as strings: "T,batch,3" is a rank-3 shape
 * whose numeric dims are dim_values and the others dim_params; "?" is a
 * dimension with neither; "" is a scalar (rank 0); NULL means no shape at all.
 * Node inputs and outputs are comma-separated lists too: "X,W,R,,,h0" has six
 * inputs, the 4th and 5th empty (absent optional inputs); "" is no inputs.
 *
 * Accessors that return text (mb_shape_str, mb_node_io_str, ...) return a
 * pointer into a small ring of static buffers: valid for the next few calls,
 * which is what an assert needs. */
#ifndef RNNSTATE_MODEL_BUILDER_H
#define RNNSTATE_MODEL_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "onnx.pb-c.h"
#include "rnnstate.h"

/* Element types, short. */
#define MB_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define MB_FLOAT16 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16
#define MB_DOUBLE ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE
#define MB_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

/* The dims of a tensor: MB_DIMS(1, 2, 4); MB_SCALAR for rank 0. */
typedef struct mb_dims {
    size_t n;
    int64_t d[8];
} mb_dims;
#define MB_DIMS(...)                                                                               \
    ((mb_dims){ sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), { __VA_ARGS__ } })
#define MB_SCALAR ((mb_dims){ 0, { 0 } })

/* ---- building ------------------------------------------------------------ */

/* p, or abort when it is NULL; malloc that aborts instead of failing. */
void *mb_must(void *p);
void *mb_must_malloc(size_t n);

/* A model with a graph named "g", the given ir_version and one opset import
 * for the default domain. */
Onnx__ModelProto *mb_new(int64_t ir_version, int64_t opset);
void mb_free(Onnx__ModelProto *m);
/* An empty graph (for If branches and Loop bodies); `name` may be NULL. */
Onnx__GraphProto *mb_graph_new(const char *name);

/* `name` NULL leaves the name out, `elem_type` negative the whole type. */
Onnx__ValueInfoProto *mb_value_info_new(const char *name, int32_t elem_type, const char *dims);
Onnx__ValueInfoProto *mb_input(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                               const char *dims);
Onnx__ValueInfoProto *mb_output(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                                const char *dims);
/* An input or output of any graph (e.g. a subgraph). */
Onnx__ValueInfoProto *mb_graph_input(Onnx__GraphProto *g, const char *name, int32_t elem_type,
                                     const char *dims);
Onnx__ValueInfoProto *mb_graph_output(Onnx__GraphProto *g, const char *name, int32_t elem_type,
                                      const char *dims);
Onnx__ValueInfoProto *mb_value_info(Onnx__ModelProto *m, const char *name, int32_t elem_type,
                                    const char *dims);

/* A tensor with name, type and dims and no data. */
Onnx__TensorProto *mb_tensor_shell(const char *name, int32_t elem_type, mb_dims dims);
/* Tensors, stored as raw_data (little-endian) like PyTorch writes them. */
Onnx__TensorProto *mb_tensor(const char *name, int32_t elem_type, mb_dims dims,
                             const void *data, size_t size);
Onnx__TensorProto *mb_tensor_float(const char *name, mb_dims dims, const float *values);
/* Every element `value` (float, float16 or double). */
Onnx__TensorProto *mb_tensor_filled(const char *name, int32_t elem_type, mb_dims dims,
                                    double value);
Onnx__TensorProto *mb_tensor_int64(const char *name, mb_dims dims, const int64_t *values);
/* Stored in float_data instead of raw_data. */
Onnx__TensorProto *mb_tensor_float_typed(const char *name, mb_dims dims, const float *values);

/* A float tensor of 2 elements whose data is in external file `location`. */
Onnx__TensorProto *mb_external_tensor(const char *name, const char *location);

Onnx__TensorProto *mb_initializer(Onnx__ModelProto *m, Onnx__TensorProto *t);
Onnx__TensorProto *mb_graph_initializer(Onnx__GraphProto *g, Onnx__TensorProto *t);
Onnx__TensorProto *mb_initializer_float(Onnx__ModelProto *m, const char *name, mb_dims dims,
                                        const float *values);
Onnx__TensorProto *mb_initializer_filled(Onnx__ModelProto *m, const char *name,
                                         int32_t elem_type, mb_dims dims, double value);
Onnx__TensorProto *mb_initializer_int64(Onnx__ModelProto *m, const char *name, mb_dims dims,
                                        const int64_t *values);

/* Appends a node to the graph (graph order = call order); `op` and `name`
 * may be NULL (the field is then absent). */
Onnx__NodeProto *mb_node(Onnx__ModelProto *m, const char *op, const char *name,
                         const char *inputs, const char *outputs);
Onnx__NodeProto *mb_graph_node(Onnx__GraphProto *g, const char *op, const char *name,
                               const char *inputs, const char *outputs);
/* A Constant node `name` whose value attribute is `t` (renamed to ""),
 * producing `output`. */
Onnx__NodeProto *mb_constant(Onnx__ModelProto *m, const char *name, const char *output,
                             Onnx__TensorProto *t);

/* An attribute of `type` with no value set (the caller sets one, or not). */
Onnx__AttributeProto *mb_attr(Onnx__NodeProto *n, const char *name,
                              Onnx__AttributeProto__AttributeType type);
Onnx__AttributeProto *mb_attr_int(Onnx__NodeProto *n, const char *name, int64_t value);
Onnx__AttributeProto *mb_attr_float(Onnx__NodeProto *n, const char *name, float value);
Onnx__AttributeProto *mb_attr_ints(Onnx__NodeProto *n, const char *name, size_t count,
                                   const int64_t *values);
Onnx__AttributeProto *mb_attr_string(Onnx__NodeProto *n, const char *name, const char *value);
Onnx__AttributeProto *mb_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t);
/* A graph attribute (If branches, Loop bodies); returns the new empty graph. */
Onnx__GraphProto *mb_attr_graph(Onnx__NodeProto *n, const char *name, const char *graph_name);
/* The same with a graph built beforehand, which the node takes. */
Onnx__GraphProto *mb_attr_graph_take(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g);

/* Recurrent nodes with the usual attributes: hidden_size always; direction
 * when not NULL. Inputs and outputs as for mb_node. */
Onnx__NodeProto *mb_recurrent(Onnx__ModelProto *m, const char *op, const char *name,
                              int64_t hidden_size, const char *direction, const char *inputs,
                              const char *outputs);

/* Adds W `w`, R `r` (and no B) initializers for an op with `gates` gates
 * (RNN 1, GRU 3, LSTM 4), filled with `fill`. */
void mb_weights(Onnx__ModelProto *m, int32_t elem_type, const char *w, const char *r,
                int64_t directions, int64_t gates, int64_t hidden, int64_t input_size,
                double fill);

/* A branch of an If (`attr`: "then_branch" or "else_branch") named
 * `graph_name` whose one node, Identity `node_name`, reads `input` (often a
 * value of the enclosing graph) and writes the branch's output `output`. */
Onnx__GraphProto *mb_identity_branch(Onnx__NodeProto *if_node, const char *attr,
                                     const char *graph_name, const char *node_name,
                                     const char *input, const char *output);

/* The smallest model to rewrite: X [T,batch,3] -> `op` node `name` (hidden
 * size 4, weights W and R) -> Y [T,1,batch,4], IR 7, opset 14. */
Onnx__ModelProto *mb_small_model(const char *op, const char *name);

/* Attaches an unknown field (as from a newer ONNX schema) to any message:
 * field number `field`, wire type varint, value `value`. */
void mb_add_unknown_varint(ProtobufCMessage *msg, uint32_t field, uint64_t value);
/* The unknown field numbered `field` of a message, or NULL. */
const ProtobufCMessageUnknownField *mb_find_unknown(const ProtobufCMessage *msg, uint32_t field);

/* Serializes the model; the caller frees the result. */
unsigned char *mb_pack(const Onnx__ModelProto *m, size_t *size);

/* Serializes `m`, frees it, and loads the bytes as a model: the model, or
 * NULL with the loader's message in *err. */
rnnstate_model *mb_load(Onnx__ModelProto *m, rnnstate_error *err);

/* ---- running ------------------------------------------------------------- */

typedef struct mb_run {
    unsigned char *in;       /* the bytes given to rnnstate_model_load_memory */
    size_t in_size;
    unsigned char *out;      /* the bytes rnnstate_model_save_memory produced */
    size_t out_size;
    Onnx__ModelProto *model; /* `out` unpacked */
    Onnx__GraphProto *g;     /* model->graph */
    rnnstate_report *report;
} mb_run;

/* Packs `m` (which is then freed), loads it through the public API, rewrites
 * it with `options` (NULL: defaults), saves it to memory and unpacks the
 * result. Fails the running cmocka test on any error. */
void mb_rewrite(Onnx__ModelProto *m, const rnnstate_options *options, mb_run *run);
/* The same, from serialized bytes (copied). */
void mb_rewrite_bytes(const unsigned char *bytes, size_t size, const rnnstate_options *options,
                      mb_run *run);
void mb_run_free(mb_run *run);
/* Fails the running test unless `model` saves (to memory) to exactly `size`
 * bytes equal to `bytes`. */
void mb_assert_saves_as(const rnnstate_model *model, const unsigned char *bytes, size_t size);
/* Fails the running test unless the rewrite changed nothing: the report says
 * so and the model came out byte for byte as it went in. */
void mb_assert_unchanged(const mb_run *run);
/* Fails the running test unless the rewrite only annotated the model: the
 * report says so, the graph came out byte for byte as it went in, and the
 * metadata holds exactly `state_json` (rnnstate.state) and `time_json`
 * (rnnstate.time). */
void mb_assert_annotated(const mb_run *run, const char *state_json, const char *time_json);

/* ---- files ----------------------------------------------------------------- */

/* A new directory under $TMPDIR (or /tmp); the caller removes and frees it. */
char *mb_temp_dir(void);
/* "dir/name", malloc'd. */
char *mb_path_in(const char *dir, const char *name);
/* The first MiB of a file, malloc'd; *size its length. */
unsigned char *mb_read_file(const char *path, size_t *size);
void mb_write_file(const char *path, const void *data, size_t size);

/* ---- inspecting ---------------------------------------------------------- */

Onnx__ValueInfoProto *mb_find_input(const Onnx__GraphProto *g, const char *name);
Onnx__ValueInfoProto *mb_find_output(const Onnx__GraphProto *g, const char *name);
Onnx__ValueInfoProto *mb_find_value_info(const Onnx__GraphProto *g, const char *name);
Onnx__TensorProto *mb_find_initializer(const Onnx__GraphProto *g, const char *name);
Onnx__NodeProto *mb_find_node(const Onnx__GraphProto *g, const char *name);
/* The node producing `value`, or NULL. */
Onnx__NodeProto *mb_producer(const Onnx__GraphProto *g, const char *value);
/* Position of a node in the graph's node list, or -1. */
int mb_node_index(const Onnx__GraphProto *g, const Onnx__NodeProto *node);
/* How many nodes read `value` (one per input slot). */
size_t mb_count_readers(const Onnx__GraphProto *g, const char *value);
size_t mb_count_op(const Onnx__GraphProto *g, const char *op);

/* "name:shape" lists, for exact asserts on a whole section of the graph:
 * e.g. "X,GRU_0_initial_h" for inputs. */
const char *mb_input_names(const Onnx__GraphProto *g);
const char *mb_output_names(const Onnx__GraphProto *g);
const char *mb_initializer_names(const Onnx__GraphProto *g);
/* The op types of the nodes in graph order: "Shape,Gather,Concat,Expand,GRU". */
const char *mb_node_ops(const Onnx__GraphProto *g);
/* The names of the nodes in graph order. */
const char *mb_node_names(const Onnx__GraphProto *g);

/* The declared shape of a ValueInfo as "1,batch,4" ("?" for an unset dim,
 * "<none>" when it declares no shape). */
const char *mb_shape_str(const Onnx__ValueInfoProto *vi);
int32_t mb_elem_type(const Onnx__ValueInfoProto *vi);
/* A tensor's dims as "1,2,4". */
const char *mb_dims_str(const Onnx__TensorProto *t);
/* A node's inputs or outputs as "X,W,R,,,h0". */
const char *mb_inputs_str(const Onnx__NodeProto *n);
const char *mb_outputs_str(const Onnx__NodeProto *n);
const Onnx__AttributeProto *mb_find_attr(const Onnx__NodeProto *n, const char *name);

/* The tensor's elements as bytes (raw_data or the typed field); the caller
 * frees. Number of elements in *count. NULL for unsupported types. */
unsigned char *mb_tensor_bytes(const Onnx__TensorProto *t, size_t *count, size_t *elem_size);
/* The tensor's float elements; the caller frees. Fails the test unless the
 * tensor is float. */
float *mb_tensor_floats(const Onnx__TensorProto *t, size_t *count);
int64_t *mb_tensor_int64s(const Onnx__TensorProto *t, size_t *count);
/* True when every byte of the tensor's data is 0 (and it has `count` elements). */
bool mb_tensor_all_zero(const Onnx__TensorProto *t, size_t count);

/* Report accessors: the node entry with that name / the pair with that input. */
const rnnstate_node_report *mb_report_node(const rnnstate_report *r, const char *name);
const rnnstate_state_pair *mb_report_pair(const rnnstate_report *r, const char *input);
/* A pair's shape as "1,batch,4". */
const char *mb_pair_shape_str(const rnnstate_state_pair *p);
/* Every pair of the report, "input->output:shape:dtype:batch_axis", joined
 * with commas in report order. */
const char *mb_pairs_str(const rnnstate_report *r);
/* Joined string lists ("a,b"). */
const char *mb_join(size_t n, const char *const *items);
/* True when one of the strings contains `needle`. */
bool mb_any_contains(size_t n, const char *const *items, const char *needle);

/* Prints a graph, for debugging a failing test. */
void mb_print_graph(FILE *out, const Onnx__GraphProto *g);

#endif
