/* Sliding windows (analysis/window.h). The output lengths follow the ONNX
 * operator specifications: Conv and the pools
 *   out = floor((len + begin + end - dilation * (kernel - 1) - 1) / stride) + 1
 * (ceil instead of floor for a pool's ceil_mode), SAME_* padding giving
 * ceil(len / stride); ConvTranspose
 *   out = stride * (len - 1) + output_padding + dilation * (kernel - 1) + 1 - begin - end
 * unless output_shape sets it. */
#include "analysis/window.h"

#include <string.h>

#include "analysis/shape.h"

static int64_t int_at(const Onnx__NodeProto *n, const char *attr, int i, int64_t fallback)
{
    const Onnx__AttributeProto *a = node_attr(n, attr);
    return a && i >= 0 && (size_t)i < a->n_ints ? a->ints[i] : fallback;
}

bool window_along(const Onnx__NodeProto *n, int i, int spatial, int64_t kernel, window *out)
{
    *out = (window){
        .kernel = int_at(n, "kernel_shape", i, kernel),
        .stride = int_at(n, "strides", i, 1),
        .dilation = int_at(n, "dilations", i, 1),
    };
    const Onnx__AttributeProto *p = node_attr(n, "pads");
    if (p && (size_t)(i + spatial) < p->n_ints) {
        out->begin = p->ints[i];
        out->end = p->ints[i + spatial];
    }
    return out->kernel > 0 && out->stride > 0 && out->dilation > 0 && out->begin >= 0 &&
           out->end >= 0;
}

bool window_resolve_auto_pad(const Onnx__NodeProto *n, int64_t len, window *w)
{
    char buf[16];
    const char *mode = node_attr_string(n, "auto_pad", buf, sizeof buf);
    if (!mode || !*mode || !strcmp(mode, "NOTSET"))
        return true;
    if (!strcmp(mode, "VALID")) {
        w->begin = w->end = 0;
        return true;
    }
    int64_t span = (w->kernel - 1) * w->dilation, total = span;
    if (w->stride != 1) { /* total = max(0, (ceil(len / stride) - 1) * stride + span + 1 - len) */
        if (len < 0)
            return false;
        total = ((len + w->stride - 1) / w->stride - 1) * w->stride + span + 1 - len;
        total = total < 0 ? 0 : total;
    }
    bool lower = !strcmp(mode, "SAME_LOWER");
    w->begin = lower ? total - total / 2 : total / 2;
    w->end = total - w->begin;
    return true;
}

int64_t window_output_len(const Onnx__NodeProto *n, int i, const window *w, int64_t len)
{
    if (len < 0)
        return -1;
    int64_t span = (w->kernel - 1) * w->dilation;
    if (node_op_is(n, "ConvTranspose")) {
        int64_t set = int_at(n, "output_shape", i, -1);
        if (set >= 0)
            return set;
        return w->stride * (len - 1) + int_at(n, "output_padding", i, 0) + span + 1 - w->begin -
               w->end;
    }
    int64_t reach = len + w->begin + w->end - span - 1;
    if (reach < 0)
        return -1;
    if (!node_attr_int(n, "ceil_mode", 0))
        return reach / w->stride + 1;
    int64_t out = (reach + w->stride - 1) / w->stride + 1;
    /* the last window must start inside the input or its left padding */
    return (out - 1) * w->stride >= len + w->begin ? out - 1 : out;
}
