/* analysis/window: the sliding window of a Conv, ConvTranspose or pool
 * along one of its spatial axes, read from the node's attributes, and the
 * length of the output along that axis. The shape analysis uses it to infer
 * dimensions after convolutions, the stream analysis to classify them. */
#ifndef RNNSTATE_ANALYSIS_WINDOW_H
#define RNNSTATE_ANALYSIS_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "onnx_build.h"

typedef struct window {
    int64_t kernel, stride, dilation;
    int64_t begin, end; /* padding before and after, from pads (0 when absent) */
} window;

/* The window along spatial axis `i` (of `spatial`) of node `n`: the kernel
 * from kernel_shape, else `kernel` (the weight's dimension, or -1). False
 * when the kernel is not known or an attribute is not positive. */
bool window_along(const Onnx__NodeProto *n, int i, int spatial, int64_t kernel, window *out);

/* Applies auto_pad to *w for an input of length `len` along the axis (-1:
 * not known). False when the padding depends on a length that is not
 * known (SAME_* with a stride). */
bool window_resolve_auto_pad(const Onnx__NodeProto *n, int64_t len, window *w);

/* The output length along the axis for an input of length `len` (pools'
 * ceil_mode, ConvTranspose's output_padding and output_shape included), or
 * -1 when it cannot be told. Call window_resolve_auto_pad first. */
int64_t window_output_len(const Onnx__NodeProto *n, int i, const window *w, int64_t len);

#endif
