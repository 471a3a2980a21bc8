/* analysis/dim_source: where a dimension comes from with the same size.
 * Two dimensions with the same source are equal whatever their size, which
 * lets the stream analysis compare sizes it cannot know. Read-only. */
#ifndef RNNSTATE_ANALYSIS_DIM_SOURCE_H
#define RNNSTATE_ANALYSIS_DIM_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/onnx_build.h"
#include "scope.h"

/* The value and axis reached by following dimension `axis` of `value` back
 * through ops that keep it (unary ops, Transpose, Squeeze, Unsqueeze, the
 * batch of convolutions, recurrent nodes, Reshape entries copied or taken
 * from a Shape). Never fails. */
void dim_source(const scope *s, const char *value, int64_t axis, const scope **os,
                const char **ovalue, int64_t *oaxis);

/* Entry `index` of a Reshape's target shape `shape` when it is a dimension
 * of a value taken with Shape (Concat of Unsqueeze(Gather(Shape(y), j))
 * pieces, as exporters write reshape(b, t, -1)): *ys, *y and *j, or false. */
bool shape_entry_source(const scope *s, const char *shape, int64_t index, const scope **ys,
                        const char **y, int64_t *j);

/* The axis of X that axis `axis` of a recurrent node's output `slot` (0: Y,
 * else Y_h/Y_c) is, or -1 (directions, hidden). */
int64_t recurrent_x_axis(const Onnx__NodeProto *p, int slot, int64_t axis);

#endif
