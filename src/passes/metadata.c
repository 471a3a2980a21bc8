/* The metadata pass: records the model's state pairs in metadata_props under
 * RNNSTATE_METADATA_KEY, as a JSON list, so that a runtime wrapper (or
 * OpenVINO's MakeStateful transformation, which takes the same input -> output
 * map) can find them without a report, and the time axes under
 * RNNSTATE_TIME_METADATA_KEY (a list of {"input", "axis"}; empty when no
 * recurrent node's sequence axis traces back to a graph input), and whether
 * it streams exactly under RNNSTATE_STREAM_METADATA_KEY (when it was
 * analysed). A model the
 * rewrite changed gets both entries, and so does every model with state pairs,
 * an already-stateful one too (it is then "annotated"). An entry that already
 * says the same is left alone, so a second run changes nothing and a model
 * without pairs is written back byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "util/arena.h"

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

static char *stream_json(const rnnstate_report *r)
{
    strbuf sb = STRBUF_INIT;
    report_stream_json(&sb, r);
    return detach_json(&sb);
}

static Onnx__StringStringEntryProto *find_entry(Onnx__ModelProto *m, const char *key)
{
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (!strcmp(str_or_empty(m->metadata_props[i]->key), key))
            return m->metadata_props[i];
    return NULL;
}

static Onnx__StringStringEntryProto *new_entry(Onnx__ModelProto *m, const char *key)
{
    Onnx__StringStringEntryProto *e = string_entry_new(key);
    if (e && !APPEND_PTR(&m->metadata_props, &m->n_metadata_props, e)) {
        arena_message_free(&e->base);
        return NULL;
    }
    return e;
}

/* Sets metadata entry `key` to `json` (taking it; NULL: out of memory),
 * unless it already says the same; *written tells when it did not. */
static bool set_metadata(Onnx__ModelProto *m, const char *key, char *json, bool *written)
{
    if (!json)
        return false;
    Onnx__StringStringEntryProto *e = find_entry(m, key);
    if (e && !strcmp(str_or_empty(e->value), json)) {
        free(json);
        return true;
    }
    if (!e && !(e = new_entry(m, key))) {
        free(json);
        return false;
    }
    arena_piece_free(e->value); /* a parsed entry's may be in the arena */
    e->value = json;
    *written = true;
    return true;
}

rnnstate_status pass_metadata(rewrite_ctx *ctx)
{
    const rnnstate_report *r = ctx->report.report;
    if (!ctx->changed && !r->n_pairs)
        return RNNSTATE_OK;
    bool written = false;
    if (!set_metadata(ctx->model, RNNSTATE_METADATA_KEY, pairs_json(r), &written) ||
        !set_metadata(ctx->model, RNNSTATE_TIME_METADATA_KEY, time_axes_json(r), &written) ||
        (r->stream_verdict != RNNSTATE_STREAM_NOT_ANALYSED &&
         !set_metadata(ctx->model, RNNSTATE_STREAM_METADATA_KEY, stream_json(r), &written)))
        return ctx_oom(ctx);
    ctx->annotated = written && !ctx->changed;
    return RNNSTATE_OK;
}
