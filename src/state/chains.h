/* state/chains: phase 1 across nodes (see state.h), run by plan_all_nodes()
 * once every slot is traced: relations between recurrent nodes that decide
 * whether a node is exposed. */
#ifndef RNNSTATE_STATE_CHAINS_H
#define RNNSTATE_STATE_CHAINS_H

#include <stdbool.h>

#include "state/plan.h"

/* In a model that carries state through its own inputs and outputs, nodes
 * that start from a fixed state at every call and whose final state goes
 * nowhere are left alone (status reset-each-call) unless an --include
 * pattern names them. */
void plan_mark_reset_nodes(rewrite_ctx *ctx, plan_list *list);

/* A node whose initial state is computed from another recurrent node's
 * outputs (an encoder handing its final state to a decoder) and that other
 * node are both skipped, with a model-level note. Returns false only when
 * memory runs out. */
bool plan_mark_handoffs(rewrite_ctx *ctx, plan_list *list);

#endif
