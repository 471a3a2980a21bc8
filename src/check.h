/* check: the structural checks of a model (check.c): rnnstate_model_check()
 * on a written model (rnnstate.h), and the names every rewrite needs to be
 * unique before it starts. */
#ifndef RNNSTATE_CHECK_H
#define RNNSTATE_CHECK_H

#include "model.h"
#include "scope.h"

/* Refuses a model whose names clash in any graph (a value produced twice,
 * duplicate inputs, outputs or initializers), as the indices of `tree`
 * found them, and If nodes whose branches disagree: the rewrite's analysis
 * assumes SSA. */
rnnstate_status validate_graph_names(const scope_tree *tree, const char *label, rnnstate_error *err);

#endif
