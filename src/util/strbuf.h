/* strbuf: a growable, NUL-terminated string buffer (after git's strbuf).
 *
 * Invariants: `buf` is never NULL and always NUL-terminated once initialised
 * with STRBUF_INIT or sb_init(); `len` excludes the terminator. An allocation
 * failure does not abort: it sets the sticky `oom` flag and later appends are
 * ignored, so a caller builds a whole string and checks `oom` once at the end.
 * Ownership: the buffer owns `buf` until sb_detach() hands it to the caller
 * (who frees it with free()) or sb_release() frees it. */
#ifndef RNNSTATE_STRBUF_H
#define RNNSTATE_STRBUF_H

#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef struct strbuf {
    char *buf;
    size_t len;
    size_t alloc;
    bool oom;
    FILE *sink;     /* sb_init_sink(): appends are written through to it */
    int sink_error; /* the errno of the sink's first failed write, or 0 */
} strbuf;

extern char strbuf_empty[];
#define STRBUF_INIT { strbuf_empty, 0, 0, false, NULL, 0 }

void sb_init(strbuf *sb);
/* A strbuf that never allocates: appends go to the caller's `buf` of `size`
 * bytes (size > 1), which is written to `out` whenever it fills and by
 * sb_sink_flush(); what does not fit is written straight through. For
 * writing a report when memory has run out. sb_release() leaves `buf` alone. */
void sb_init_sink(strbuf *sb, char *buf, size_t size, FILE *out);
/* Writes what a sink holds; false (errno set) when a write failed. */
bool sb_sink_flush(strbuf *sb);
void sb_release(strbuf *sb);
/* Returns the malloc'd string (never NULL unless out of memory) and resets sb. */
char *sb_detach(strbuf *sb);
void sb_reset(strbuf *sb);
void sb_add(strbuf *sb, const char *data, size_t n);
void sb_adds(strbuf *sb, const char *s);
void sb_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A new malloc'd string formatted from `fmt` and `ap` (which it consumes),
 * or NULL when memory runs out. */
char *str_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* k in decimal, written at the end of `digits` without printf (names are
 * numbered tens of thousands of times in a chained model); returns where
 * it starts, its length in *len. */
#define INT_DIGITS_SIZE 16
const char *int_digits(char digits[INT_DIGITS_SIZE], int k, size_t *len);
/* Names from a model are untrusted bytes; these are the only ways they are
 * printed (docs/reliability.md). Text: a backslash becomes \\, newline,
 * return and tab \n \r \t, other ASCII controls and each byte that is not
 * part of well-formed UTF-8 \xHH, C1 controls, U+2028/9 and bidirectional
 * controls \uHHHH; the result is printable UTF-8 and the original can be
 * recovered from it. */
void sb_add_escaped(strbuf *sb, const char *s);
/* Appends s as a JSON string literal, quotes included; NULL becomes null. The
 * result is valid UTF-8: controls and the code points above are \u escapes
 * (they decode to the original), a byte that is not UTF-8 becomes the four
 * characters \xHH of the decoded string. */
void sb_add_json_string(strbuf *sb, const char *s);
/* sb_add_escaped() into a fixed buffer of `size` bytes (size > 0),
 * truncated if need be before a UTF-8 character, not inside it. Out of
 * memory, the text is copied with every byte below 0x20 or above 0x7e made
 * a "?" (a message says what failed all the same). */
void escape_into(char *out, size_t size, const char *s);

#endif
