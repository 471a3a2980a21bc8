/* state/types: the element type of every value of a model, where the model
 * does not declare it.
 *
 * Exporters often declare types for graph inputs and outputs only (no
 * value_info), and compute a recurrent node's W from initializers (Silero
 * VAD v5, paddle2onnx). The type is still knowable: it is declared (graph
 * input, value_info, output, initializer), set by the producer (Constant,
 * ConstantOfShape, Cast, Shape, comparisons, ...), or carried unchanged from
 * an input by ops that rearrange or compute on data of one type (Concat,
 * Reshape, Transpose, Add, ...); recurrent nodes force X, W, R and the states
 * to share one type; If, Loop and Scan outputs take their body's type.
 *
 * Invariants: one forward pass over every graph in node order, descending
 * into a subgraph at the node that holds it, so that its outer-scope values
 * are typed before it; one type per value of the scope's index, found by
 * position: linear in the size of the model. A declared type always wins over an inferred one. The result
 * describes the graphs as they were when elem_types_build() ran. */
#ifndef RNNSTATE_STATE_TYPES_H
#define RNNSTATE_STATE_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "scope.h"

typedef struct elem_types {
    const scope_tree *tree;
    /* per scope, in tree order: the TensorProto.DataType of each value of
     * the scope's index (0: not known), parallel to its entries */
    int32_t **types;
    size_t n;
    /* The node being typed and the values its inputs name (from the index),
     * so that typing in node order hashes no names. */
    const Onnx__NodeProto *current;
    const int *current_reads;
    size_t current_scope;
} elem_types;

/* Types every value of every scope of `tree`. False when out of memory. */
bool elem_types_build(elem_types *et, const scope_tree *tree);
void elem_types_free(elem_types *et);

/* The element type of `value` as seen from scope `s` (inner scopes first,
 * then outwards), or 0 when it cannot be known. */
int32_t elem_type_of(const elem_types *et, const scope *s, const char *value);

/* Why the type of `value` cannot be known, in `buf`: the value where
 * inference stopped and what produces it. */
void elem_type_blocker(const elem_types *et, const scope *s, const char *value, char *buf,
                       size_t size);

#endif
