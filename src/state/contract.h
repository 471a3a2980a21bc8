/* state/contract: what every state pair promises, checked before a node is
 * exposed. A caller feeds a pair's output back as its input at the next call,
 * so the two must have one element type and one shape; and to stream several
 * streams side by side the caller must know which axis is the batch.
 *
 * A mismatch is a bug in the analysis (the pass would pair values that
 * cannot be fed back): the node is then left alone with a reason that says
 * so, and the pair is never reported. */
#ifndef RNNSTATE_STATE_CONTRACT_H
#define RNNSTATE_STATE_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>

#include "state/plan.h"

/* What one end of a pair will look like: declared by the model, or the
 * node's state shape for an input or output the pass creates. */
typedef struct pair_end {
    const char *name; /* NULL for one the pass creates */
    bool undeclared;  /* named, with no shape declared: the node's state shape */
    int32_t elem_type;
    size_t rank;      /* 0 with no declared shape */
    dim_info dims[8]; /* owned: pair_end_clear() frees them */
} pair_end;

/* The declared type and shape of a main-graph input or output; a rank above
 * 8, or no shape, counts as no shape (rank 0). */
void pair_end_declared(const rewrite_ctx *ctx, const char *name, bool output, pair_end *end);
void pair_end_clear(pair_end *end);

/* Why slot `slot` of the plan would make a pair that breaks the contract
 * (written into buf), or NULL. With `alone`, the output side is the node's
 * own final state even where the plan would reach a model output (a view of
 * an input exposed on its own). */
const char *pair_contract_problem(const rewrite_ctx *ctx, const node_plan *p, int slot,
                                  bool alone, char *buf, size_t size);

/* The batch axis of a pair whose input has `dims`: the state layout's for an
 * input the pass creates or one that feeds the slot directly or in slices of
 * its first axis (`same_layout`); else the axis named like the node's
 * symbolic batch; else the layout's when the input is a stack of states
 * (rank 3, the hidden size last); else -1 (a packed cache). */
int pair_batch_axis(const recurrent_shape *rs, const dim_info *dims, size_t rank,
                    bool same_layout);

#endif
