/* lazy_scan: reading a model file without reading its weights.
 *
 * A model of several gigabytes is almost all initializer data, which the
 * rewrite never looks at. The scan walks the file's wire format with pread()
 * and builds a "skeleton": the same ModelProto bytes, except that each
 * initializer of the main graph whose data (raw_data or the typed arrays)
 * reaches `min_bytes` is replaced by a stub holding only its other fields
 * (name, dims, data type, ...). The skeleton is what protobuf-c unpacks; the
 * file ranges of the replaced initializers are kept in `lazy`, and the writer
 * copies them straight from the file (copy_file_range) when saving. Memory
 * use therefore follows the size of the graph's structure, not the weights.
 *
 * The scan is iterative and checks every length against its enclosing
 * message, like wire_scan. */
#ifndef RNNSTATE_LAZY_SCAN_H
#define RNNSTATE_LAZY_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "rnnstate.h"

/* An initializer left in the file: its whole field (tag, length, TensorProto)
 * spans [offset, offset + length); it is the `index`-th initializer of the
 * main graph in the skeleton. */
typedef struct lazy_range {
    size_t index;
    uint64_t offset;
    uint64_t length;
} lazy_range;

typedef struct lazy_scan {
    unsigned char *skeleton; /* mapped (mmap), exactly skeleton_len bytes */
    size_t skeleton_len;
    lazy_range *lazy;
    size_t n_lazy;
} lazy_scan;

rnnstate_status lazy_scan_file(int fd, uint64_t size, size_t min_bytes, const char *label,
                               lazy_scan *out, rnnstate_error *err);
void lazy_scan_free(lazy_scan *scan);

#endif
