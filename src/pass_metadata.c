/* The metadata pass: records the model's state pairs in metadata_props under
 * RNNSTATE_METADATA_KEY, as a JSON list, so that a runtime wrapper (or
 * OpenVINO's MakeStateful transformation, which takes the same input -> output
 * map) can find them without a report, and the time axes under
 * RNNSTATE_TIME_METADATA_KEY (a list of {"input", "axis"}; empty when no
 * recurrent node's sequence axis traces back to a graph input). Only a model
 * the rewrite changed gets the entries, so an unchanged model is written back
 * byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The built string, or NULL when building it ran out of memory. */
static char *detach_json(strbuf *sb)
{
    if (sb->oom) {
        sb_release(sb);
        return NULL;
    }
    return sb_detach(sb);
}

static char *pairs_json(const rnnstate_report *r)
{
    strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "[");
    for (size_t i = 0; i < r->n_pairs; i++) {
        if (i)
            sb_adds(&sb, ", ");
        report_pair_json(&sb, &r->pairs[i], false);
    }
    sb_adds(&sb, "]");
    return detach_json(&sb);
}

static char *time_axes_json(const rnnstate_report *r)
{
    strbuf sb = STRBUF_INIT;
    report_time_axes_json(&sb, r);
    return detach_json(&sb);
}

static Onnx__StringStringEntryProto *metadata_entry(Onnx__ModelProto *m, const char *key)
{
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (!strcmp(str_or_empty(m->metadata_props[i]->key), key))
            return m->metadata_props[i];
    Onnx__StringStringEntryProto *e = string_entry_new(key);
    if (e && !APPEND_PTR(&m->metadata_props, &m->n_metadata_props, e)) {
        protobuf_c_message_free_unpacked(&e->base, NULL);
        return NULL;
    }
    return e;
}

/* Sets metadata entry `key` to `json` (taking it; NULL: out of memory). */
static bool set_metadata(Onnx__ModelProto *m, const char *key, char *json)
{
    Onnx__StringStringEntryProto *e = json ? metadata_entry(m, key) : NULL;
    if (!e) {
        free(json);
        return false;
    }
    free(e->value);
    e->value = json;
    return true;
}

rnnstate_status pass_metadata(rewrite_ctx *ctx)
{
    if (!ctx->changed)
        return RNNSTATE_OK;
    const rnnstate_report *r = ctx->report.report;
    if (!set_metadata(ctx->model, RNNSTATE_METADATA_KEY, pairs_json(r)) ||
        !set_metadata(ctx->model, RNNSTATE_TIME_METADATA_KEY, time_axes_json(r)))
        return ctx_oom(ctx);
    return RNNSTATE_OK;
}
