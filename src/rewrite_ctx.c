#include "rewrite_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/strbuf.h"

rnnstate_status ctx_oom(rewrite_ctx *ctx)
{
    return set_error(ctx->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", ctx->label);
}

bool ctx_detach(rewrite_ctx *ctx, scope *sc, const char *name)
{
    char *copy = strdup(name);
    detached_value *grown = copy ? owned_array_grow(ctx->detached, ctx->n_detached, sizeof *grown)
                                 : NULL;
    if (!grown) {
        free(copy);
        return false;
    }
    grown[ctx->n_detached++] = (detached_value){ sc, copy };
    ctx->detached = grown;
    return true;
}

void ctx_free(rewrite_ctx *ctx)
{
    scope_tree_free(&ctx->scopes);
    name_registry_free(&ctx->names);
    for (size_t i = 0; i < ctx->n_detached; i++)
        free(ctx->detached[i].name);
    free(ctx->detached);
    strmap_free(&ctx->dropped);
    for (size_t i = 0; i < ctx->n_time_traces; i++) {
        free(ctx->time_traces[i].input);
        free(ctx->time_traces[i].label);
        free(ctx->time_traces[i].node_name);
    }
    free(ctx->time_traces);
    free(ctx->time_sources);
    stream_analysis_free(&ctx->stream);
    report_builder_discard(&ctx->report);
}

/* The literal text between placeholders is copied a run at a time, and {k}
 * written without printf: the state pass expands the template twice per
 * state pair, tens of thousands of times in a chained model. */
char *expand_name_template(const char *tmpl, const char *op, int k, const char *node_name,
                           const char *slot)
{
    strbuf sb = STRBUF_INIT;
    char digits[INT_DIGITS_SIZE];
    size_t n_digits;
    const char *number = int_digits(digits, k, &n_digits);
    const char *p = tmpl ? tmpl : RNNSTATE_DEFAULT_NAME_TEMPLATE;
    while (*p) {
        const char *run = p;
        while (*p && *p != '{')
            p++;
        sb_add(&sb, run, (size_t)(p - run));
        if (!*p)
            break;
        if (!strncmp(p, "{op}", 4)) {
            sb_adds(&sb, op);
            p += 4;
        } else if (!strncmp(p, "{k}", 3)) {
            sb_add(&sb, number, n_digits);
            p += 3;
        } else if (!strncmp(p, "{name}", 6)) {
            sb_adds(&sb, node_name);
            p += 6;
        } else if (!strncmp(p, "{slot}", 6)) {
            sb_adds(&sb, slot);
            p += 6;
        } else {
            sb_add(&sb, p++, 1);
        }
    }
    if (sb.oom) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb);
}
