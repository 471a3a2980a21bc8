/* The pipeline: index the graph, run the passes in order, hand back the report. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options.h"
#include "passes/passes.h"

static const rewrite_pass passes[] = {
    pass_layout0,  /* only with options.to_layout0: makes layout=1 nodes runnable */
    pass_time_axis_trace, /* finds the input axis each recurrent node runs along */
    pass_stream_analyse, /* follows those axes forward; needs the graph before the state pass */
    pass_state,    /* exposes the states; leaves per-frame recurrent nodes reset */
    pass_cleanup,  /* removes what fed the replaced initial states */
    pass_context_cache, /* caches the context of causal convolutions and pools */
    pass_time_axis, /* records those axes, for the nodes left running across time */
    pass_stream_verdict, /* the verdict; needs the node statuses and the caches */
    pass_metadata, /* records the state pairs; needs the final report */
};

void rnnstate_options_init(rnnstate_options *options)
{
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
    options->state_inputs = RNNSTATE_STATE_INPUTS_OPTIONAL;
    options->context_caches = true;
}

/* Beside the options it checks; expand_name_template() (rewrite_ctx.c)
 * replaces the placeholders this requires. */
bool rnnstate_name_template_valid(const char *tmpl)
{
    return !tmpl || (strstr(tmpl, "{slot}") && (strstr(tmpl, "{k}") || strstr(tmpl, "{name}")));
}

rnnstate_status rnnstate_rewrite(rnnstate_model *model, const rnnstate_options *options,
                                 rnnstate_report **report, rnnstate_error *err)
{
    *report = NULL;
    rewrite_ctx ctx = { .model = model->proto, .graph = model->proto->graph,
                        .label = model->label, .err = err };
    name_registry_init(&ctx.names, &ctx.scopes);
    rnnstate_options_init(&ctx.options);
    rnnstate_status st =
        options_read(&ctx.options, sizeof ctx.options, options, "rnnstate_options", err);
    if (st != RNNSTATE_OK)
        return st;
    if (!rnnstate_name_template_valid(ctx.options.name_template))
        return set_error(err, RNNSTATE_ERR_ARGUMENT,
                         "name template '%s' must contain {slot} and one of {k} or {name}",
                         ctx.options.name_template);
    oom_clear();
    if (!report_builder_init(&ctx.report) || !scope_tree_build(&ctx.scopes, model))
        st = ctx_oom(&ctx);
    ctx.report.skip_decisions = ctx.options.no_decisions;
    if (st == RNNSTATE_OK)
        st = validate_graph_names(&ctx.scopes, ctx.label, err);
    /* an analysis that failed to allocate noted it (error.h): its answers,
     * and so the pass's work, are not to be trusted */
    for (size_t i = 0; st == RNNSTATE_OK && i < sizeof passes / sizeof passes[0]; i++)
        if ((st = passes[i](&ctx)) == RNNSTATE_OK && oom_noted())
            st = ctx_oom(&ctx);
    if (st == RNNSTATE_OK && report_builder_failed(&ctx.report))
        st = ctx_oom(&ctx);
    if (st == RNNSTATE_OK) {
        ctx.report.report->changed = ctx.changed;
        ctx.report.report->annotated = ctx.annotated;
        *report = report_builder_finish(&ctx.report);
    }
    ctx_free(&ctx);
    oom_clear();
    return st;
}
