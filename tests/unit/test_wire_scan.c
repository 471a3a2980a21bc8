/* wire_scan: the check of a serialized model before protobuf-c sees it. Each
 * case is a few hand-written bytes of wire format and the exact verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/wire_scan.h"

/* ModelProto.graph is field 7, GraphProto.node 1, NodeProto.attribute 5,
 * AttributeProto.g 6; ModelProto.producer_name 2, ir_version 1. */
#define GRAPH "\x3a"     /* field 7, length-delimited */
#define NODE "\x0a"      /* field 1, length-delimited */
#define ATTRIBUTE "\x2a" /* field 5, length-delimited */
#define SUBGRAPH "\x32"  /* field 6, length-delimited */

typedef struct scan_case {
    const char *why;
    const char *bytes;
    size_t size;
    size_t max_depth;
    rnnstate_status status;
    const char *message; /* after "m: " */
} scan_case;

#define BYTES(s) s, sizeof(s) - 1
static const scan_case cases[] = {
    { "no bytes: an empty ModelProto", BYTES(""), 8, RNNSTATE_OK, NULL },
    { "ir_version 8", BYTES("\x08\x08"), 8, RNNSTATE_OK, NULL },
    { "a graph holding an empty node", BYTES(GRAPH "\x02" NODE "\x00"), 8, RNNSTATE_OK, NULL },
    { "a string field is not descended", BYTES("\x12\x03\xff\xff\x07"), 8, RNNSTATE_OK, NULL },
    { "unknown fixed32 and fixed64 fields",
      BYTES("\xa5\x06\x01\x02\x03\x04\xa1\x06\x01\x02\x03\x04\x05\x06\x07\x08"), 8, RNNSTATE_OK,
      NULL },
    { "wire type 6", BYTES("\x0e"), 8, RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: unexpected wire type 6 at byte 0" },
    { "wire type 7 after a valid field", BYTES("\x08\x08\x0f"), 8, RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: unexpected wire type 7 at byte 2" },
    { "a length past the end", BYTES(GRAPH "\x64\x00\x00"), 8, RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: truncated or corrupt (a length field at byte 0 claims 100 bytes, past "
      "the end of its message)" },
    { "a node longer than its graph", BYTES(GRAPH "\x04" NODE "\x0a\x00\x00\x00\x00\x00\x00"), 8,
      RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: truncated or corrupt (a length field at byte 2 claims 10 bytes, past "
      "the end of its message)" },
    { "a varint cut by the end", BYTES("\x08\x80"), 8, RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: truncated or corrupt (a field is cut off at byte 0 of 2)" },
    { "a varint of 11 bytes", BYTES("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), 8,
      RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: truncated or corrupt (a field is cut off at byte 0 of 12)" },
    /* zeros (a blank file, /dev/zero on stdin) fail at their first byte */
    { "a key naming field 0", BYTES("\x00\x00"), 8, RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: it starts with a zero byte, which no protobuf message does (a blank or "
      "zero-filled file, or not protobuf at all)" },
    { "a key naming field 0 after a valid field", BYTES("\x08\x08\x00"), 8,
      RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: corrupt at byte 2 (a field numbered 0, which protobuf does not allow)" },
    { "a fixed64 cut short", BYTES("\xa1\x06\x01\x02"), 8, RNNSTATE_ERR_NOT_MODEL,
      "not an ONNX model: truncated or corrupt (a field is cut off at byte 0 of 4)" },
    /* model > graph > node > attribute > graph: five levels */
    { "five levels with a limit of five",
      BYTES(GRAPH "\x06" NODE "\x04" ATTRIBUTE "\x02" SUBGRAPH "\x00"), 5, RNNSTATE_OK, NULL },
    { "five levels with a limit of four",
      BYTES(GRAPH "\x06" NODE "\x04" ATTRIBUTE "\x02" SUBGRAPH "\x00"), 4, RNNSTATE_ERR_INVALID,
      "nested too deeply: more than 4 levels of nested messages (subgraphs or types)" },
};

static void test_scan_case(void **state)
{
    const scan_case *c = *state;
    rnnstate_error err = { 0 };
    rnnstate_status st =
        wire_scan_model((const unsigned char *)c->bytes, c->size, c->max_depth, "m", &err);
    if (st != c->status)
        fail_msg("%s: status %d, expected %d (%s)", c->why, (int)st, (int)c->status,
                 st == RNNSTATE_OK ? "" : err.message);
    if (c->message) {
        char want[512];
        snprintf(want, sizeof want, "m: %s", c->message);
        assert_string_equal(err.message, want);
    }
}

#define N_CASES (sizeof cases / sizeof cases[0])

int main(void)
{
    struct CMUnitTest tests[N_CASES];
    for (size_t i = 0; i < N_CASES; i++)
        tests[i] = (struct CMUnitTest){ .name = cases[i].why, .test_func = test_scan_case,
                                        .initial_state = (void *)&cases[i] };
    return _cmocka_run_group_tests("wire_scan", tests, N_CASES, NULL, NULL);
}
