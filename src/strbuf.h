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
#include <stddef.h>

typedef struct strbuf {
    char *buf;
    size_t len;
    size_t alloc;
    bool oom;
} strbuf;

extern char strbuf_empty[];
#define STRBUF_INIT { strbuf_empty, 0, 0, false }

void sb_init(strbuf *sb);
void sb_release(strbuf *sb);
/* Returns the malloc'd string (never NULL unless out of memory) and resets sb. */
char *sb_detach(strbuf *sb);
void sb_reset(strbuf *sb);
void sb_add(strbuf *sb, const char *data, size_t n);
void sb_adds(strbuf *sb, const char *s);
void sb_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. NULL becomes null. */
void sb_add_json_string(strbuf *sb, const char *s);

#endif
