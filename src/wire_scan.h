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

#include "rnnstate.h"

/* Returns RNNSTATE_OK, or RNNSTATE_ERR_NOT_MODEL / RNNSTATE_ERR_INVALID with a
 * message naming `label`. */
rnnstate_status wire_scan_model(const unsigned char *data, size_t size, size_t max_depth,
                                const char *label, rnnstate_error *err);

#endif
