/* state/trace: where a recurrent node's initial state comes from, where its
 * final state goes, and what shape the state has. Read-only analysis; values
 * are looked up through enclosing scopes, so a node inside an If branch is
 * traced into the graphs around it. The state pass decides what to do with
 * the answers. Shapes, types and constants: analysis/shape.h.
 *
 * The sources correspond to the cases of the state pass:
 *   a. ABSENT          the slot is empty
 *   b. GRAPH_INPUT     the slot is a graph input of the main graph already
 *   c. INITIALIZER     the slot is an initializer
 *   d. CONSTANT        an Expand of an initializer or Constant (via_expand)
 *   e. CONSTANT        a chain that only computes a uniform (zero) tensor
 *   f. VIEW_OF_INPUT   view ops (Slice, Gather, Squeeze, ...) of a graph input
 *   g. DATA_DEPENDENT  anything else; `node` is where tracing stopped (with
 *                      `too_far`, because the walk reached its bound of
 *                      MAX_TRACE_DEPTH nodes, not because of data) */
#ifndef RNNSTATE_STATE_TRACE_H
#define RNNSTATE_STATE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/shape.h"
#include "model/onnx_build.h"
#include "recurrent_ops.h"
#include "scope.h"

typedef enum state_source_kind {
    SOURCE_ABSENT,
    SOURCE_GRAPH_INPUT,
    SOURCE_INITIALIZER,
    SOURCE_CONSTANT,
    SOURCE_VIEW_OF_INPUT,
    SOURCE_DATA_DEPENDENT
} state_source_kind;

typedef struct state_source {
    state_source_kind kind;
    const char *input;              /* b, f: the graph input; c: the initializer */
    const scope *owner;             /* c: the scope holding the initializer */
    const Onnx__NodeProto *node;    /* CONSTANT: the node nearest the slot; g: the blocker */
    bool too_far;                   /* g: the walk stopped at its depth bound */
    bool via_expand;                /* CONSTANT: case d (Expand of a constant) */
    bool uniform;                   /* CONSTANT: every element equals `fill` */
    int32_t elem_type;              /* CONSTANT: element type of the value */
    unsigned char fill[16];         /* CONSTANT && uniform: one element */
    const Onnx__TensorProto *pattern; /* CONSTANT && !uniform: the Expand's data */
    char *chain;                    /* CONSTANT, f: the ops traced, source first (owned:
                                     * state_source_clear(); a pointer, not a block, since
                                     * a plan per node holds one per slot and most are empty) */
    bool oom;                       /* copying `chain` ran out of memory */
} state_source;

/* Frees what a source owns (its chain). */
void state_source_clear(state_source *s);

/* Classifies the value feeding an initial-state slot of a node in scope `s`
 * (`tree` holds every scope: views are followed into If branches). Returns
 * false only when memory runs out. */
bool trace_initial_state(const scope_tree *tree, const scope *s, const char *value,
                         state_source *out);

/* The main-graph output that `value` (in scope `s`) reaches through
 * data-movement ops only (Concat, Squeeze, Unsqueeze, Reshape, Transpose,
 * Identity, Cast, ScatterND, Expand), into If branches that read it and out
 * through If outputs, or NULL. With `direct`, no op may lie on the way: the
 * value itself must become that output. */
const char *trace_final_state(const scope_tree *tree, const scope *s, const char *value,
                              bool direct);

#endif
