#include "util/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char strbuf_empty[1];

void sb_init(strbuf *sb)
{
    *sb = (strbuf){ strbuf_empty, 0, 0, false, NULL, 0 };
}

void sb_init_sink(strbuf *sb, char *buf, size_t size, FILE *out)
{
    *sb = (strbuf){ buf, 0, size, false, out, 0 };
    buf[0] = '\0';
}

/* Writes n bytes to the sink, remembering the first failure. */
static void sink_write(strbuf *sb, const char *data, size_t n)
{
    errno = 0;
    if (!sb->sink_error && n && fwrite(data, 1, n, sb->sink) != n)
        sb->sink_error = errno ? errno : EIO;
}

bool sb_sink_flush(strbuf *sb)
{
    sink_write(sb, sb->buf, sb->len);
    sb->len = 0;
    sb->buf[0] = '\0';
    if (!sb->sink_error && (fflush(sb->sink) != 0 || ferror(sb->sink)))
        sb->sink_error = errno ? errno : EIO;
    errno = sb->sink_error;
    return !sb->sink_error;
}

void sb_release(strbuf *sb)
{
    if (sb->alloc && !sb->sink)
        free(sb->buf);
    sb_init(sb);
}

void sb_reset(strbuf *sb)
{
    sb->len = 0;
    if (sb->alloc) /* strbuf_empty is shared by every thread: never written */
        sb->buf[0] = '\0';
}

char *sb_detach(strbuf *sb)
{
    char *out = sb->alloc ? sb->buf : strdup("");
    sb_init(sb);
    return out;
}

static bool sb_grow(strbuf *sb, size_t extra)
{
    if (sb->oom)
        return false;
    if (sb->len + extra + 1 <= sb->alloc)
        return true;
    if (sb->sink) { /* empty the buffer; false: write the rest straight through */
        sink_write(sb, sb->buf, sb->len);
        sb->len = 0;
        sb->buf[0] = '\0';
        return extra + 1 <= sb->alloc;
    }
    if (extra > ((size_t)-1) / 2 - sb->len) {
        sb->oom = true;
        return false;
    }
    size_t want = sb->alloc ? sb->alloc : 64;
    while (want < sb->len + extra + 1)
        want *= 2;
    char *grown = realloc(sb->alloc ? sb->buf : NULL, want);
    if (!grown) {
        sb->oom = true;
        return false;
    }
    if (!sb->alloc)
        grown[0] = '\0';
    sb->buf = grown;
    sb->alloc = want;
    return true;
}

void sb_add(strbuf *sb, const char *data, size_t n)
{
    if (!sb_grow(sb, n)) {
        if (sb->sink)
            sink_write(sb, data, n);
        return;
    }
    memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sb_adds(strbuf *sb, const char *s)
{
    sb_add(sb, s, strlen(s));
}

void sb_addf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    /* formatted once where it fits the room left (the usual case), and
     * measured first only when it may not */
    if (!sb->oom && !sb->sink && sb->alloc > sb->len + 1) {
        size_t room = sb->alloc - sb->len;
        va_start(ap, fmt);
        int n = vsnprintf(sb->buf + sb->len, room, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            sb->len += (size_t)n;
            return;
        }
        sb->buf[sb->len] = '\0'; /* what did not fit is dropped */
    }
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need >= 0 && !sb_grow(sb, (size_t)need) && sb->sink) {
        va_start(ap, fmt);
        errno = 0;
        if (!sb->sink_error && vfprintf(sb->sink, fmt, ap) != need)
            sb->sink_error = errno ? errno : EIO;
        va_end(ap);
        return;
    }
    if (need < 0 || !sb_grow(sb, (size_t)need))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, (size_t)need + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)need;
}

/* ---- escaping names from a model -------------------------------------------
 * Names come from untrusted files: they may hold terminal control sequences
 * (ESC, BEL, OSC), newlines, bidirectional overrides or bytes that are not
 * UTF-8. Both escapes below read the same classification, so the text report
 * and the JSON report agree on what a name is. */

/* The length (1-4) of the well-formed UTF-8 sequence at p, storing its code
 * point, or 0 when p does not start one (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, a cut sequence). */
static size_t utf8_sequence(const unsigned char *p, uint32_t *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
    if (!len || p[0] > 0xf4)
        return 0;
    uint32_t v = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) /* also stops at the terminator */
            return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    static const uint32_t smallest[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (v < smallest[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Code points a terminal or a reader could act on: C0 controls, DEL, C1
 * controls (U+009B is CSI to some terminals), the line and paragraph
 * separators, and the bidirectional embeddings, overrides and isolates that
 * can make a name display as another. */
static bool is_unsafe_code_point(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The short escape shared by text and JSON, or NULL. */
static const char *short_escape(uint32_t cp)
{
    switch (cp) {
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return NULL;
    }
}

/* Appends s with every byte that is not plain printable UTF-8 escaped, in
 * the style of the text report (json: in a JSON string's style). */
static void add_escaped(strbuf *sb, const char *s, bool json)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *run = p;
        uint32_t cp = 0;
        size_t n;
        for (;;) {
            /* printable ASCII but for the two that may be escaped: kept as
             * is, in both styles, without decoding (names mostly are) */
            while (*p >= 0x20 && *p < 0x7f && *p != '\\' && *p != '"')
                p++;
            if (!(n = utf8_sequence(p, &cp)) || is_unsafe_code_point(cp) || short_escape(cp) ||
                (json && cp == '"'))
                break;
            p += n;
        }
        sb_add(sb, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        if (!n) /* not UTF-8: the byte's value, as text even in JSON */
            sb_addf(sb, json ? "\\\\x%02x" : "\\x%02x", *p++);
        else if (short_escape(cp))
            sb_adds(sb, short_escape(cp)), p += n;
        else if (cp == '"')
            sb_adds(sb, "\\\""), p += n;
        else if (!json && cp < 0x80)
            sb_addf(sb, "\\x%02x", (unsigned)cp), p += n;
        else
            sb_addf(sb, "\\u%04x", (unsigned)cp), p += n;
    }
}

static size_t plain_length(const char *s);

void sb_add_escaped(strbuf *sb, const char *s)
{
    size_t n = plain_length(s);
    if (n != SIZE_MAX)
        sb_add(sb, s, n); /* nothing to escape */
    else
        add_escaped(sb, s, false);
}

/* 1 for a byte that is plain printable ASCII that neither style escapes
 * (0x20-0x7e but for '"' and '\\'): one load per byte instead of four
 * comparisons, the reports and metadata quoting tens of thousands of names. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The length of s when every byte of it is plain printable ASCII that
 * neither style escapes (names mostly are), else SIZE_MAX. */
static size_t plain_length(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (plain_byte[*p])
        p++;
    return *p ? SIZE_MAX : (size_t)(p - (const unsigned char *)s);
}

void sb_add_json_string(strbuf *sb, const char *s)
{
    if (!s) {
        sb_add(sb, "null", 4);
        return;
    }
    size_t n = plain_length(s);
    if (n != SIZE_MAX && !sb->sink && sb_grow(sb, n + 2)) {
        /* a plain name: quoted and copied in one step */
        char *at = sb->buf + sb->len;
        at[0] = '"';
        memcpy(at + 1, s, n);
        at[n + 1] = '"';
        at[n + 2] = '\0';
        sb->len += n + 2;
        return;
    }
    sb_add(sb, "\"", 1);
    add_escaped(sb, s, true);
    sb_add(sb, "\"", 1);
}

void escape_into(char *out, size_t size, const char *s)
{
    strbuf sb = STRBUF_INIT;
    sb_add_escaped(&sb, s);
    if (sb.oom) {
        /* out of memory: the message still says what failed, with every
         * byte a terminal could take for a control replaced */
        size_t i = 0;
        for (; s[i] && i + 1 < size; i++)
            out[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
        out[i] = '\0';
        sb_release(&sb);
        return;
    }
    size_t n = sb.len < size ? sb.len : size - 1;
    /* cut before a multi-byte character rather than through it */
    while (n > 0 && n < sb.len && ((unsigned char)sb.buf[n] & 0xc0) == 0x80)
        n--;
    memcpy(out, sb.buf, n);
    out[n] = '\0';
    sb_release(&sb);
}

const char *int_digits(char digits[INT_DIGITS_SIZE], int k, size_t *len)
{
    size_t at = INT_DIGITS_SIZE;
    unsigned u = k < 0 ? 0u - (unsigned)k : (unsigned)k;
    do {
        digits[--at] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (k < 0)
        digits[--at] = '-';
    *len = INT_DIGITS_SIZE - at;
    return digits + at;
}

char *str_vformat(const char *fmt, va_list ap)
{
    /* formatted once into a block on the stack when it fits (messages and
     * report lines mostly do), measured first otherwise */
    char local[256];
    va_list copy;
    va_copy(copy, ap);
    int need = vsnprintf(local, sizeof local, fmt, copy);
    va_end(copy);
    if (need < 0)
        return NULL;
    char *out = malloc((size_t)need + 1);
    if (out && (size_t)need < sizeof local)
        memcpy(out, local, (size_t)need + 1);
    else if (out)
        vsnprintf(out, (size_t)need + 1, fmt, ap);
    return out;
}
