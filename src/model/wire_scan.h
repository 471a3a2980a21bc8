/* wire_scan: a check of a serialized ModelProto before protobuf-c unpacks it.
 *
 * protobuf-c recurses once per nested message and trusts length fields, so a
 * hostile file could exhaust the stack (thousands of nested If branches or
 * sequence types) or announce an absurd length. This scan walks the wire
 * format iteratively, guided by the generated descriptors, in one linear
 * pass: it refuses nesting deeper than a limit and any length that runs past
 * its enclosing message, and names the byte offset where the file goes
 * wrong. */
#ifndef RNNSTATE_WIRE_SCAN_H
#define RNNSTATE_WIRE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "rnnstate.h"
#include "model/wire.h"

/* Returns RNNSTATE_OK, or RNNSTATE_ERR_NOT_MODEL / RNNSTATE_ERR_INVALID with a
 * message naming `label`. */
rnnstate_status wire_scan_model(const unsigned char *data, size_t size, size_t max_depth,
                                const char *label, rnnstate_error *err);

/* The same check of a model that arrives as a stream (a pipe, a device):
 * `r` pulls the bytes through its refill as the check needs them, so garbage
 * is refused at the first byte that proves it, without waiting for the end of
 * the input or reading on to `limit`. The refill sets r->size when the input
 * ends (r->size starts at `limit`); a failure to read is the refill's owner's
 * to report. A top-level length past `limit` but within 2 GiB is reported as
 * a model larger than the limit. */
rnnstate_status wire_scan_stream(wire_reader *r, uint64_t limit, size_t max_depth,
                                 const char *label, rnnstate_error *err);

#endif
