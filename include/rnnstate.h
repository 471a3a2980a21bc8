/* rnnstate: expose the hidden state of ONNX recurrent layers (RNN, GRU, LSTM)
 * as explicit graph inputs and outputs, so that a stateless runtime can run
 * the model chunk by chunk with the state fed back.
 *
 * Typical use:
 *
 *     rnnstate_error err;
 *     rnnstate_model *model;
 *     rnnstate_report *report;
 *     if (rnnstate_model_load_file("in.onnx", NULL, &model, &err) == RNNSTATE_OK) {
 *         if (rnnstate_rewrite(model, NULL, &report, &err) == RNNSTATE_OK) {
 *             rnnstate_model_save_file(model, "out.onnx", NULL, &err);
 *             rnnstate_report_free(report);
 *         }
 *         rnnstate_model_free(model);
 *     }
 *
 * Ownership rule, for everything in this header: an object the library hands
 * out through an out-parameter (a model, a report, a serialized buffer) belongs
 * to the caller, who releases it with the matching rnnstate_*_free function.
 * Every string and array reachable from a returned object belongs to that
 * object and stays valid until the object is freed; a string returned as a
 * function's result (rnnstate_escape_text()) is the caller's, freed with
 * rnnstate_string_free(). The library keeps no
 * pointer to caller memory after a call returns (a JSON stream, which the
 * caller owns, holds the caller's FILE between calls), and has no global state: a
 * model may be used from one thread at a time, different models from
 * different threads at once; the save functions do not modify the model, so
 * several threads may save the same model at once.
 *
 * Errors: every function that can fail returns an rnnstate_status and, when
 * `err` is not NULL, fills it with the same status and a one-line message that
 * names the file (or buffer) and the problem. Each function lists the statuses
 * it can return. Pointer arguments must not be NULL unless the function says
 * so; `err` and every options pointer may always be NULL (options: the
 * defaults).
 *
 * Options structs (rnnstate_limits, rnnstate_save_options, rnnstate_options)
 * can gain fields in later versions without breaking programs compiled
 * against this header. Their first field, `struct_size`, is the size of the
 * struct as the caller knows it; the matching *_init() function sets it and
 * every other field's default. Always fill an options struct with its
 * *_init() function, then change the fields you need. The library reads only
 * the fields that fit in `struct_size`: fields a newer library added after
 * them keep their defaults. A struct_size of 0 (a struct never initialised) or
 * larger than the library knows (a header newer than the library) is refused
 * with RNNSTATE_ERR_ARGUMENT.
 *
 * Compile and link with `pkg-config --cflags --libs rnnstate`, or in CMake
 * find_package(rnnstate) and target_link_libraries(app PRIVATE
 * rnnstate::rnnstate). Only the rnnstate_* functions below are exported. */
#ifndef RNNSTATE_H
#define RNNSTATE_H

#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rnnstate_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the exported functions: the library is compiled with hidden
 * visibility, so nothing else leaves it. */
#if defined(__GNUC__)
#define RNNSTATE_API __attribute__((visibility("default")))
#else
#define RNNSTATE_API
#endif

/* The version of the library the program runs with, e.g. "0.2.0" (the
 * header's is RNNSTATE_VERSION_STRING, from rnnstate_version.h). */
RNNSTATE_API const char *rnnstate_version(void);

/* The same version as one number, MAJOR * 10000 + MINOR * 100 + PATCH (0.2.0
 * is 200), for comparing at run time with RNNSTATE_VERSION_NUMBER, the
 * version the program was compiled against: a program that needs a function
 * added in a later release checks `rnnstate_version_number() >= N`. */
RNNSTATE_API int rnnstate_version_number(void);

typedef enum rnnstate_status {
    RNNSTATE_OK = 0,
    RNNSTATE_ERR_IO,        /* the file could not be read or written */
    RNNSTATE_ERR_NOT_MODEL, /* the bytes are not an ONNX ModelProto */
    RNNSTATE_ERR_INVALID,   /* an ONNX model the rewriter cannot work on */
    RNNSTATE_ERR_NOMEM,     /* an allocation failed */
    RNNSTATE_ERR_ARGUMENT   /* the caller passed a bad argument */
} rnnstate_status;

typedef struct rnnstate_error {
    rnnstate_status status;
    char message[512];
} rnnstate_error;

/* ---- models ------------------------------------------------------------ */

typedef struct rnnstate_model rnnstate_model;

/* What the loader accepts. Hostile input is refused with a message rather
 * than crashing, hanging or exhausting memory. */
typedef struct rnnstate_limits {
    size_t struct_size;     /* set by rnnstate_limits_init(), see "Options structs" */
    /* Zero in any of the fields below means its default. */
    /* Larger files are refused (default and maximum 2 GiB, protobuf's own
     * limit). */
    size_t max_model_bytes;
    /* Nested messages: subgraphs, types (default 256, maximum
     * RNNSTATE_MAX_NESTING). */
    size_t max_nesting;
    /* Reading a file (or a pipe, which is copied into a temporary file),
     * initializers of the main graph with at least this many bytes of data
     * are not read: the writer copies them from the file, after the graph's
     * other fields (default 128 bytes: every weight, while the small
     * constants the analyses read, shapes, axes, pads, stay parsed;
     * SIZE_MAX reads everything; a model loaded from memory is read whole).
     * The file must then stay unchanged until the model is saved. */
    size_t lazy_tensor_bytes;
} rnnstate_limits;

#define RNNSTATE_DEFAULT_MAX_MODEL_BYTES ((size_t)2 << 30)
#define RNNSTATE_DEFAULT_MAX_NESTING ((size_t)256)
#define RNNSTATE_MAX_NESTING ((size_t)1024)
#define RNNSTATE_DEFAULT_LAZY_TENSOR_BYTES ((size_t)128)

/* Fills `limits` with the defaults and sets its struct_size. Every load
 * function takes NULL for the defaults, and refuses a field above its maximum
 * with RNNSTATE_ERR_ARGUMENT. */
RNNSTATE_API void rnnstate_limits_init(rnnstate_limits *limits);

/* Reads and parses an ONNX model. `path` is opened read-only and never
 * modified; large initializers are left in the file until the model is saved
 * (see rnnstate_limits), so the file stays open until rnnstate_model_free().
 * On success *model is a new model the caller frees with
 * rnnstate_model_free(); on failure *model is NULL. `limits` may be NULL.
 *
 * Returns RNNSTATE_OK; RNNSTATE_ERR_IO when the file cannot be opened or read
 * (or is a directory); RNNSTATE_ERR_NOT_MODEL when its bytes are not an ONNX
 * model (empty, truncated, corrupt, no graph); RNNSTATE_ERR_INVALID when it
 * is larger than limits->max_model_bytes or nests deeper than
 * limits->max_nesting; RNNSTATE_ERR_NOMEM (also while parsing);
 * RNNSTATE_ERR_ARGUMENT when `limits` was not initialised (see "Options
 * structs") or a field is above its maximum. The same for the two functions
 * below. */
RNNSTATE_API rnnstate_status rnnstate_model_load_file(const char *path, const rnnstate_limits *limits,
                                         rnnstate_model **model, rnnstate_error *err);

/* Reads a model from an open file descriptor until end of file (e.g. 0 for
 * standard input); `label` names it in messages. The descriptor stays open.
 * A regular file at offset 0 is read like a file; a pipe or device is read
 * as it streams, its wire format checked as the bytes arrive (garbage fails
 * at the first byte that proves it, without waiting for the end), kept in an
 * anonymous memory file up to 64 MiB and spooled to an unnamed temporary
 * file in $TMPDIR (or /tmp) beyond, then read like a file; where that
 * directory is missing, or full (also when it fills up midway), the stream
 * stays in memory. */
RNNSTATE_API rnnstate_status rnnstate_model_load_fd(int fd, const char *label, const rnnstate_limits *limits,
                                       rnnstate_model **model, rnnstate_error *err);

/* Parses an ONNX model from `size` bytes at `data` (copied as needed; the
 * caller keeps ownership of `data`). `label` names the buffer in messages
 * (e.g. "<stdin>"). RNNSTATE_ERR_IO does not occur. */
RNNSTATE_API rnnstate_status rnnstate_model_load_memory(const void *data, size_t size, const char *label,
                                           const rnnstate_limits *limits, rnnstate_model **model,
                                           rnnstate_error *err);

/* External data files when a model is saved into another directory than the
 * one it was loaded from (their locations are relative to the model's
 * directory, and ONNX Runtime reads none outside it). In the model's own
 * directory nothing is done in any mode. */
typedef enum rnnstate_external_data {
    /* Each file is copied beside the output, at the same relative location
     * (subdirectories made as needed), so the output's directory holds all
     * the model needs and shares nothing with the original; the locations
     * are unchanged. A file already there is kept when it is the same file
     * or has the same bytes, and refused otherwise. The copy is made under a
     * temporary name and named complete, before the model is written; a
     * save that fails removes the files it made. */
    RNNSTATE_EXTERNAL_DATA_COPY = 0,
    /* Like COPY, but a hard link to the file where the file system allows
     * one (a copy otherwise, e.g. across file systems): no time, no space,
     * but both models then share one file, and a program that writes into
     * it in place changes both. */
    RNNSTATE_EXTERNAL_DATA_LINK = 1,
    /* The files stay where they are and the locations are rewritten to
     * reach them from the output's directory; refused where a file would lie
     * outside that directory (RNNSTATE_ERR_INVALID). The files are never
     * read. */
    RNNSTATE_EXTERNAL_DATA_REFERENCE = 2,
} rnnstate_external_data;

typedef struct rnnstate_save_options {
    size_t struct_size; /* set by rnnstate_save_options_init(), see "Options structs" */
    /* fsync() the file before it takes the target's place, and its
     * directory once the name is made (after linkat() or rename()), so that
     * the new file survives a crash of the machine under its name. A file
     * system that cannot fsync a directory (fsync() fails with EINVAL: some
     * FUSE and network file systems) keeps the name as durably as it can;
     * that is not an error. When the directory's fsync fails otherwise (an
     * I/O error), the save fails: a new file is removed, a replaced file has
     * already been replaced. Default: false, like cp, compilers and
     * onnx.save: without it the output is still atomic for the programs that
     * read it, but after a machine crash soon after the save it may be empty
     * or partial; with it a save takes as long as the disk needs to write it
     * (seconds per gigabyte). */
    bool sync;
    /* When not NULL, the save stops (removing its temporary file) once
     * *cancel becomes non-zero, e.g. set by the caller's signal handler, and
     * fails with RNNSTATE_ERR_IO. Default: NULL. */
    const volatile sig_atomic_t *cancel;
    /* When not NULL, called with the complete temporary file, open for
     * reading at offset 0 (`path` names the target, for messages), before it
     * takes the target's place: a status other than RNNSTATE_OK fails the
     * save with it, and nothing is left at `path`. Not called for devices
     * and FIFOs, which are written in place. Default: NULL. */
    rnnstate_status (*verify)(int fd, const char *path, void *verify_arg, rnnstate_error *err);
    void *verify_arg;
    /* What a save into another directory than the model's does with the
     * files of initializers stored outside the model (external data, as for
     * models over 2 GB). Default: RNNSTATE_EXTERNAL_DATA_COPY. Since 0.2.0
     * (before, locations were always rewritten, as REFERENCE does). */
    rnnstate_external_data external_data;
} rnnstate_save_options;

/* Fills `options` with the defaults and sets its struct_size. */
RNNSTATE_API void rnnstate_save_options_init(rnnstate_save_options *options);

/* Serializes the model and writes it to `path` atomically: into an unnamed
 * temporary file in the same directory (O_TMPFILE; a named one where that is
 * not supported), then linked to `path` when nothing is there, or linked to a
 * temporary name and renamed over `path`. On any failure no file is left at
 * `path` (a previous file there is kept) and the temporary file is removed; a
 * process killed meanwhile leaves nothing, except in the instant between
 * naming a replacement and renaming it, whose temporary file
 * rnnstate_remove_stale_temp_files() removes later. A replaced file's mode,
 * extended attributes (POSIX ACLs among them) and, where this process may
 * set them, owner and group are kept (an attribute that cannot be set on
 * the new file fails the save with RNNSTATE_ERR_IO, naming it, and leaves
 * the file as it was); a new file
 * gets 0666 & ~umask. A symbolic link at `path` is replaced like mv does when
 * it points to a regular file or nowhere, refused when it points to anything
 * else; a device or FIFO is written in place. Nothing is created or written
 * when the output would exceed protobuf's 2 GiB limit. The model's large
 * initializers are copied from the file it was loaded from, which must be
 * unchanged (device, inode, size, modification time). Initializers stored in
 * external files keep resolving (initializers, sparse initializers, tensor
 * attributes, in every subgraph): in another directory, the files are copied
 * or linked beside the output, or their locations rewritten, as
 * options->external_data says.
 * The model is not modified, and no process-wide state is changed (umask,
 * signal dispositions or masks): a caller that wants Ctrl-C to remove the
 * temporary file handles the signal and sets *options->cancel, and one that
 * may run under a file-size limit (RLIMIT_FSIZE, ulimit -f) ignores SIGXFSZ,
 * as the command line does, so that an output over the limit fails with
 * RNNSTATE_ERR_IO ("File too large") instead of ending the process. `options` may
 * be NULL for the defaults.
 *
 * Returns RNNSTATE_OK; RNNSTATE_ERR_IO when the file cannot be written (or
 * `path` is a directory, or a symbolic link to something other than a
 * regular file), when the save was cancelled, when the model's source file
 * changed or cannot be read for its weights, or when an external data file
 * cannot be found, read, copied or linked, or another file is at its place
 * beside the output; RNNSTATE_ERR_INVALID when the model exceeds protobuf's
 * 2 GiB limit, when an external data file would lie outside the output's
 * directory (REFERENCE), or its location leaves the model's directory (COPY,
 * LINK: it cannot be placed beside the output); the verify callback's status; RNNSTATE_ERR_NOMEM;
 * RNNSTATE_ERR_ARGUMENT when `options` was not initialised. */
RNNSTATE_API rnnstate_status rnnstate_model_save_file(const rnnstate_model *model, const char *path,
                                                      const rnnstate_save_options *options,
                                                      rnnstate_error *err);

/* Removes the temporary files that saves into `dir` left when their process
 * was killed between naming a file and renaming it: files named
 * ".rnnstate.tmp-PID-RANDOM" that no process holds locked. A save holds its
 * temporary file locked from before the file has a name until it is
 * renamed, on every route, so a live save's file is never removed; the PID
 * in the name is not consulted (a save in another PID namespace may run
 * under a PID that is nobody here, and a run killed as a container's PID 1
 * leaves a PID that is always taken). Returns how many were removed. */
RNNSTATE_API size_t rnnstate_remove_stale_temp_files(const char *dir);

/* Writes the serialized model to an open file descriptor (a pipe, standard
 * output), streaming large initializers from the source file like
 * rnnstate_model_save_file(), but without its atomicity. `label` names the
 * destination in messages. The model is not modified.
 *
 * Returns RNNSTATE_OK; RNNSTATE_ERR_IO when writing fails or the model's
 * source file cannot be read for its weights; RNNSTATE_ERR_INVALID when the
 * model exceeds protobuf's 2 GiB limit; RNNSTATE_ERR_NOMEM. */
RNNSTATE_API rnnstate_status rnnstate_model_save_fd(const rnnstate_model *model, int fd,
                                                    const char *label, rnnstate_error *err);

/* Serializes the model into a new buffer *data of *size bytes, which the
 * caller frees with rnnstate_buffer_free(); on failure *data is NULL and
 * *size 0. The model is not modified.
 *
 * Returns RNNSTATE_OK; RNNSTATE_ERR_IO when the model's source file cannot be
 * read for its weights; RNNSTATE_ERR_INVALID when the model exceeds
 * protobuf's 2 GiB limit; RNNSTATE_ERR_NOMEM. */
RNNSTATE_API rnnstate_status rnnstate_model_save_memory(const rnnstate_model *model,
                                                        unsigned char **data, size_t *size,
                                                        rnnstate_error *err);

/* Free what the functions above hand out; NULL is accepted and ignored. */
RNNSTATE_API void rnnstate_model_free(rnnstate_model *model);
RNNSTATE_API void rnnstate_buffer_free(unsigned char *data);
/* Frees a string the library returned (rnnstate_escape_text()); NULL is
 * accepted and ignored. Use it rather than free(): the library and the
 * program may not share an allocator (a static C runtime, a debug heap). */
RNNSTATE_API void rnnstate_string_free(char *text);

/* ---- rewriting --------------------------------------------------------- */

typedef enum rnnstate_state_inputs {
    /* State inputs get a zero (or the exporter's constant) default, so a
     * caller may leave them out on the first call. */
    RNNSTATE_STATE_INPUTS_OPTIONAL = 0,
    /* State inputs are plain graph inputs without a default: the caller
     * always passes them (zeros on the first call). */
    RNNSTATE_STATE_INPUTS_REQUIRED
} rnnstate_state_inputs;

/* The sequence axis of the recurrent nodes' X, traced back to an axis of a
 * graph input (or declared in rnnstate_options): the axis along which a
 * caller cuts the sequence into chunks. */
typedef struct rnnstate_time_axis {
    const char *input;
    size_t axis;
} rnnstate_time_axis;

typedef struct rnnstate_options {
    size_t struct_size; /* set by rnnstate_options_init(), see "Options structs" */
    rnnstate_state_inputs state_inputs; /* default: RNNSTATE_STATE_INPUTS_OPTIONAL */
    /* Names of new state inputs and outputs. Placeholders: {op} (RNN, GRU,
     * LSTM), {k} (that op's count in graph order), {name} (the node's name),
     * {slot} (initial_h, initial_c, Y_h, Y_c). Must contain {slot} and one of
     * {k} or {name}. NULL: RNNSTATE_DEFAULT_NAME_TEMPLATE. */
    const char *name_template;
    /* Shell globs (fnmatch) on node names. A node is rewritten when it
     * matches an include pattern (or there are none) and no exclude pattern;
     * the others are reported as skipped. The arrays are borrowed for the
     * duration of the call. Default: none. */
    size_t n_include;
    const char *const *include;
    size_t n_exclude;
    const char *const *exclude;
    /* Rewrite layout=1 (batch-first) recurrent nodes to layout 0 between
     * Transpose nodes, which ONNX Runtime can run; their state is then
     * exposed in the layout-0 shape [num_directions, batch, hidden].
     * Default: false. */
    bool to_layout0;
    /* Time axes of graph inputs the caller declares ({input, axis}; borrowed
     * for the duration of the call), added to those found by tracing the
     * recurrent nodes' sequence axes back to the inputs. An input whose
     * dimension at a declared axis has the same symbolic name as the declared
     * one's follows. Needed for a model without recurrent nodes (a TCN).
     * Default: none. */
    size_t n_time_axes;
    const rnnstate_time_axis *time_axes;
    /* Give each causal convolution or pool along time a context cache (a
     * state pair of kind RNNSTATE_PAIR_CONTEXT) so that the model streams
     * exactly; false keeps the recurrent state only (such nodes then block
     * exact streaming). Default: true. */
    bool context_caches;
    /* Leave each node's decisions (rnnstate_node_report.decisions, which
     * the verbose text and the JSON report show) empty, for a caller that
     * shows neither: a chained model has one per state slot, each formatted
     * text. Default: false (the decisions are recorded). Since 0.2.0 */
    bool no_decisions;
} rnnstate_options;

#define RNNSTATE_DEFAULT_NAME_TEMPLATE "{op}_{k}_{slot}"

/* True when `name_template` (NULL: the default) is usable; rnnstate_rewrite()
 * refuses others with RNNSTATE_ERR_ARGUMENT. */
RNNSTATE_API bool rnnstate_name_template_valid(const char *name_template);

/* The metadata_props key under which a model lists its state pairs as JSON:
 * [{"input": ..., "output": ..., "shape": [...], "dtype": ..., "batch_axis":
 * ..., "optional": ...}], the map OpenVINO's MakeStateful transformation
 * takes. Every model with state pairs gets it, also one the rewrite did not
 * otherwise change (status annotated). */
#define RNNSTATE_METADATA_KEY "rnnstate.state"
/* The metadata_props key under which a model lists its time axes
 * (rnnstate_time_axis) as JSON: [{"input": "x", "axis": 1}]; written with
 * RNNSTATE_METADATA_KEY, on every rewritten or annotated model. */
#define RNNSTATE_TIME_METADATA_KEY "rnnstate.time"
/* The metadata_props key under which a model states whether it streams
 * exactly, as JSON: {"verdict": "exact" | "none" | "unknown",
 * "chunk_multiple": K, "blockers": [{"graph", "op", "name", "reason"}]};
 * written with RNNSTATE_TIME_METADATA_KEY when the model was analysed. */
#define RNNSTATE_STREAM_METADATA_KEY "rnnstate.stream"

/* Fills `options` with the defaults and sets its struct_size. */
RNNSTATE_API void rnnstate_options_init(rnnstate_options *options);

typedef enum rnnstate_node_status {
    RNNSTATE_NODE_UPDATED,         /* state inputs or outputs were added */
    RNNSTATE_NODE_ALREADY_EXPOSED, /* the model already carries this node's state */
    RNNSTATE_NODE_SKIPPED,         /* left unchanged; `reason` says why */
    /* left unchanged on purpose: it starts from a fixed state at every call
     * in a model that carries its other state itself; `reason` says so */
    RNNSTATE_NODE_RESET_EACH_CALL
} rnnstate_node_status;

/* One dimension of a state shape: a fixed size, or a symbolic name. */
typedef struct rnnstate_dim {
    int64_t value;     /* meaningful when param is NULL */
    const char *param; /* symbolic dimension name, or NULL */
} rnnstate_dim;

/* What a state pair carries from one call to the next. */
typedef enum rnnstate_pair_kind {
    RNNSTATE_PAIR_RECURRENT = 0, /* a recurrent node's hidden (or cell) state */
    RNNSTATE_PAIR_CONTEXT        /* the last frames a causal convolution or pool reads
                                  * again at the next call (a context cache) */
} rnnstate_pair_kind;

/* A state input and the output that carries its next value. */
typedef struct rnnstate_state_pair {
    const char *input;
    const char *output;
    size_t rank;
    const rnnstate_dim *shape;
    const char *dtype;  /* "float32", "float16", "float64", ... */
    bool optional;      /* the input has a default and may be left out */
    bool added;         /* the rewrite created this pair (false: the model had it) */
    int batch_axis;     /* the axis of `shape` that is the batch, or -1 when no axis
                         * is known to be (a packed cache, a fixed batch of views) */
    rnnstate_pair_kind kind;
} rnnstate_state_pair;

typedef struct rnnstate_node_report {
    const char *graph;  /* "main" for the model's top-level graph */
    const char *op;     /* "RNN", "GRU" or "LSTM" */
    const char *name;   /* the node's name ("" when it has none) */
    rnnstate_node_status status;
    const char *reason; /* why the node was skipped or left reset, or NULL */
    size_t n_warnings;
    const char *const *warnings;
    size_t n_inputs_added;
    const char *const *inputs_added;
    size_t n_outputs_added;
    const char *const *outputs_added;
    size_t n_decisions; /* one line per state slot: which rule applied and why */
    const char *const *decisions;
    /* The sequence length when it is a fixed constant (such a node often does
     * not run over time, e.g. a GRU across frequency bins), else -1. */
    int64_t fixed_sequence_length;
} rnnstate_node_report;


/* Whether feeding every state pair back streams the model exactly. */
typedef enum rnnstate_stream_verdict {
    RNNSTATE_STREAM_NOT_ANALYSED = 0, /* no recurrent node and no time axis given */
    /* chunks whose length along the time axes is a multiple of chunk_multiple,
     * with every state pair fed back, give the whole-sequence outputs */
    RNNSTATE_STREAM_EXACT,
    RNNSTATE_STREAM_NONE,   /* it cannot: the blockers say where and why */
    RNNSTATE_STREAM_UNKNOWN /* the analysis met what it does not know (the blockers) */
} rnnstate_stream_verdict;

/* A node that keeps the model from streaming exactly, and why, in words
 * ("looks 1 frame ahead: pads 1,1 along time"). */
typedef struct rnnstate_stream_blocker {
    const char *graph; /* "main" for the top-level graph */
    const char *op;
    const char *name;
    const char *reason;
} rnnstate_stream_blocker;

/* The report and its parts (rnnstate_report, rnnstate_node_report,
 * rnnstate_state_pair, rnnstate_dim, rnnstate_time_axis,
 * rnnstate_stream_blocker) are read by the caller through arrays of them:
 * unlike the options structs they carry no struct_size, so their size and
 * fields are frozen for the whole 0.x series: a field added to one of them
 * would move every element after the first, so it waits for 1.0 and a new
 * soname (docs/library.md, "Versions and growing options"). */
typedef struct rnnstate_report {
    bool changed;       /* the rewrite modified the graph (status rewritten) */
    size_t n_nodes;
    const rnnstate_node_report *nodes;
    size_t n_pairs;
    const rnnstate_state_pair *pairs;
    size_t n_notes;     /* model-level remarks, e.g. "ir_version raised from 3 to 4" */
    const char *const *notes;
    /* One entry per distinct input axis the nodes' sequence axes trace to; a
     * node whose sequence axis does not trace to a graph input gets a note. */
    size_t n_time_axes;
    const rnnstate_time_axis *time_axes;
    bool annotated;     /* only the state pairs and time axes were recorded in the
                         * metadata (status annotated): the graph is as it was */
    /* Streaming: the verdict, the chunk length every chunk must be a multiple
     * of (1 when any length streams), and what blocks it. */
    rnnstate_stream_verdict stream_verdict;
    size_t chunk_multiple;
    size_t n_blockers;
    const rnnstate_stream_blocker *blockers;
} rnnstate_report;

/* Rewrites `model` in place. `options` may be NULL for the defaults. On
 * success *report describes every recurrent node (free it with
 * rnnstate_report_free()); on failure *report is NULL.
 *
 * Returns RNNSTATE_OK; RNNSTATE_ERR_ARGUMENT when the name template is not
 * usable (see rnnstate_name_template_valid()) or `options` was not
 * initialised: the model is untouched; RNNSTATE_ERR_INVALID when the graph's
 * names clash (a value produced twice, duplicate inputs, outputs or
 * initializers), or an If node has a then_branch or else_branch twice or
 * branches with different numbers of outputs, all found before anything is
 * changed (a recurrent node inside an If that lacks a branch is not an
 * error: it is skipped, with the reason in its report entry);
 * RNNSTATE_ERR_IO when a weight left in the source file (see
 * rnnstate_limits) cannot be read; RNNSTATE_ERR_NOMEM. After a failure other
 * than RNNSTATE_ERR_ARGUMENT the model may be partly rewritten: free it
 * rather than save it. */
RNNSTATE_API rnnstate_status rnnstate_rewrite(rnnstate_model *model,
                                              const rnnstate_options *options,
                                              rnnstate_report **report, rnnstate_error *err);

/* NULL is accepted and ignored. */
RNNSTATE_API void rnnstate_report_free(rnnstate_report *report);

/* What the rewrite did to the model as a whole: the one rule behind the
 * "model ..." word of the text report, the "status" of each JSON entry and
 * the JSON summary's counts. */
typedef enum rnnstate_model_status {
    RNNSTATE_MODEL_UNCHANGED = 0, /* nothing changed, nothing recorded */
    RNNSTATE_MODEL_ANNOTATED,     /* only the metadata changed (report->annotated) */
    RNNSTATE_MODEL_REWRITTEN      /* the graph changed (report->changed) */
} rnnstate_model_status;

/* The status of the model whose rewrite `report` describes. */
RNNSTATE_API rnnstate_model_status rnnstate_report_model_status(const rnnstate_report *report);

/* Verifies the structure of a (re-loaded) rewritten model against the report
 * of its rewrite: graph input, output and initializer names are unique and
 * every value is produced once; every value a node reads is defined before it
 * (in its graph or, for a subgraph, in an enclosing graph before the node
 * holding it; "" is an absent optional input), so nodes are in topological
 * order; every graph output is defined; every state pair's input is a graph
 * input that something reads, declared with the pair's dtype and shape, and
 * its output a graph output that a node produces, of the same dtype and with
 * no fixed size that differs. Returns RNNSTATE_OK; RNNSTATE_ERR_INVALID with
 * the first problem found; RNNSTATE_ERR_NOMEM. */
RNNSTATE_API rnnstate_status rnnstate_model_check(const rnnstate_model *model,
                                                  const rnnstate_report *report,
                                                  rnnstate_error *err);

/* Writes the report as text, one line per recurrent node, each line prefixed
 * with `label` (usually the model's file name). With `verbose`, each node's
 * decisions follow it. Returns false on a write error (errno set); it does
 * not need memory (when none is left it writes through a fixed buffer). */
RNNSTATE_API bool rnnstate_report_write_text(const rnnstate_report *report, const char *label,
                                             bool verbose, FILE *out);

/* The text rnnstate_report_write_text() writes, as a malloc'd string (free()
 * it); NULL when memory runs out. */
RNNSTATE_API char *rnnstate_report_text(const rnnstate_report *report, const char *label,
                                        bool verbose);

/* Returns `text` (a name from a model, a path from a directory) escaped as
 * the reports print it: control bytes, backslashes and bytes that are not
 * UTF-8 become \n, \\, \xHH and the like (docs/reliability.md).
 * The strings of rnnstate_report are the model's bytes, unescaped; print
 * them through this or the report writers. The caller frees the result with
 * rnnstate_string_free(); NULL when memory runs out. */
RNNSTATE_API char *rnnstate_escape_text(const char *text);

/* The outcome of one model in a run over several, for the JSON report. */
typedef struct rnnstate_model_result {
    const char *input;
    const char *output;              /* NULL when nothing was written */
    const rnnstate_report *report;   /* NULL when the model failed */
    const char *error;               /* NULL unless the model failed */
} rnnstate_model_result;

/* Writes one JSON document describing `n` model results (the format of the
 * command line's --json). Returns false on a write error. */
RNNSTATE_API bool rnnstate_report_write_json(const rnnstate_model_result *results, size_t n,
                                             FILE *out);

/* The same document written one model at a time, so that a run over many
 * models need not keep every report until the end:
 * rnnstate_json_stream_begin() writes its head, rnnstate_json_stream_add()
 * one model's entry (in the order the entries are to appear) and flushes
 * it, so that a reader sees it at once and the result may be freed as soon
 * as the call returns; rnnstate_json_stream_end() writes the summary and
 * the tail. Together they write exactly what rnnstate_report_write_json()
 * writes for the same results.
 *
 * The stream is the caller's (on the stack, say): nothing is allocated that
 * outlives a call, and there is nothing to free. It holds `out`, which must
 * stay open until rnnstate_json_stream_end() (which flushes it and does not
 * close it); one stream is used by one thread at a time. The struct's size
 * and fields are fixed for this major version of the library. */
typedef struct rnnstate_json_stream {
    FILE *out;
    size_t models, rewritten, annotated, unchanged, errors; /* added so far */
    int error; /* 0, or the errno of the first write that failed (ENOMEM: memory
                  to format an entry ran out); nothing is written after it */
} rnnstate_json_stream;

RNNSTATE_API void rnnstate_json_stream_begin(rnnstate_json_stream *stream, FILE *out);
RNNSTATE_API void rnnstate_json_stream_add(rnnstate_json_stream *stream,
                                           const rnnstate_model_result *result);
/* False when any part of the document could not be written (stream->error
 * says why). */
RNNSTATE_API bool rnnstate_json_stream_end(rnnstate_json_stream *stream);

#ifdef __cplusplus
}
#endif

#endif
