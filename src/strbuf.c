#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char strbuf_empty[1];

void sb_init(strbuf *sb)
{
    sb->buf = strbuf_empty;
    sb->len = 0;
    sb->alloc = 0;
    sb->oom = false;
}

void sb_release(strbuf *sb)
{
    if (sb->alloc)
        free(sb->buf);
    sb_init(sb);
}

void sb_reset(strbuf *sb)
{
    sb->len = 0;
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
    if (!sb_grow(sb, n))
        return;
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
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || !sb_grow(sb, (size_t)need))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, (size_t)need + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)need;
}

void sb_add_json_string(strbuf *sb, const char *s)
{
    if (!s) {
        sb_adds(sb, "null");
        return;
    }
    sb_adds(sb, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_adds(sb, "\\\""); break;
        case '\\': sb_adds(sb, "\\\\"); break;
        case '\n': sb_adds(sb, "\\n"); break;
        case '\r': sb_adds(sb, "\\r"); break;
        case '\t': sb_adds(sb, "\\t"); break;
        default:
            if (*p < 0x20)
                sb_addf(sb, "\\u%04x", *p);
            else
                sb_add(sb, (const char *)p, 1);
        }
    }
    sb_adds(sb, "\"");
}
