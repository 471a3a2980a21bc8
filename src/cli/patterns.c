#include "cli/patterns.h"

#include <fnmatch.h>
#include <stdlib.h>

bool pattern_hits_init(pattern_hits *h, const rnnstate_options *options)
{
    size_t n = options->n_include + options->n_exclude;
    h->options = options;
    h->hit = calloc(n ? n : 1, sizeof *h->hit);
    if (!h->hit)
        return false;
    for (size_t i = 0; i < n; i++)
        atomic_init(&h->hit[i], false);
    return true;
}

void pattern_hits_free(pattern_hits *h)
{
    free(h->hit);
    h->hit = NULL;
}

static void mark_list(atomic_bool *hit, const char *const *patterns, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!atomic_load(&hit[i]) && fnmatch(patterns[i], name, 0) == 0)
            atomic_store(&hit[i], true);
}

void pattern_hits_mark(pattern_hits *h, const rnnstate_report *report)
{
    const rnnstate_options *o = h->options;
    if (!report || !h->hit)
        return;
    for (size_t k = 0; k < report->n_nodes; k++) {
        const char *name = report->nodes[k].name ? report->nodes[k].name : "";
        mark_list(h->hit, o->include, o->n_include, name);
        mark_list(h->hit + o->n_include, o->exclude, o->n_exclude, name);
    }
}

static size_t report_list(const atomic_bool *hit, const char *const *patterns, size_t n,
                          const char *option, const char *effect, FILE *out, bool quiet)
{
    size_t missed = 0;
    for (size_t i = 0; i < n; i++) {
        if (atomic_load(&hit[i]))
            continue;
        missed++;
        if (!quiet)
            fprintf(out,
                    "rnnstate-rewrite: warning: %s '%s' matched the name of no recurrent node: "
                    "%s (the report above names every recurrent node)\n",
                    option, patterns[i], effect);
    }
    return missed;
}

size_t pattern_hits_report(const pattern_hits *h, FILE *out, bool quiet)
{
    const rnnstate_options *o = h->options;
    if (!h->hit)
        return 0;
    return report_list(h->hit, o->include, o->n_include, "--include",
                       "it selected nothing", out, quiet) +
           report_list(h->hit + o->n_include, o->exclude, o->n_exclude, "--exclude",
                       "it left nothing out", out, quiet);
}
