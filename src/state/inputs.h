/* state/inputs: phase 2 of the state pass, input side (see state.h). */
#ifndef RNNSTATE_STATE_INPUTS_H
#define RNNSTATE_STATE_INPUTS_H

#include <stdbool.h>

#include "state/plan.h"

/* Phase 2, input side: makes the slot read a state input. *input_name gets
 * the input (new or existing), *optional whether it has a default, *added
 * whether it is new. */
rnnstate_status expose_input_side(rewrite_ctx *ctx, node_plan *plan, int slot, char **input_name,
                                  bool *optional, bool *added);

#endif
