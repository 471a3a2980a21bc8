/* The command line's small helpers: memory that must not fail, lists of
 * strings, and its messages (usage errors, a job's own errors). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "cli/cli.h"

_Noreturn void die_oom(void)
{
    fprintf(stderr, "rnnstate-rewrite: out of memory\n");
    exit(EXIT_MODEL_FAILED);
}

char *xstrdup(const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        die_oom();
    return copy;
}

void list_push(string_list *l, char *item)
{
    char **grown = owned_array_grow(l->items, l->n, sizeof *grown);
    if (!grown)
        die_oom();
    grown[l->n++] = item;
    l->items = grown;
}

void list_free(string_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
}

/* A file name from a directory is as untrusted as a model
 * (docs/reliability.md): escaped like the names in the reports. */
char *shown(const char *text)
{
    char *escaped = rnnstate_escape_text(text);
    if (!escaped)
        die_oom();
    return escaped;
}

int usage_error(const char *fmt, const char *arg)
{
    char *escaped = shown(arg);
    fprintf(stderr, "rnnstate-rewrite: ");
    fprintf(stderr, fmt, escaped);
    rnnstate_string_free(escaped);
    fprintf(stderr, "\nTry 'rnnstate-rewrite --help' for more information.\n");
    return EXIT_USAGE;
}

rnnstate_status job_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return err->status = status;
}
