/* The report: what the rewrite did to each recurrent node, as a structure for
 * library users and as text or JSON for the command line. */
#include "util/array.h"
#include "report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "model/tensor_util.h"

/* A fixed word appended without measuring it: the reports and the metadata
 * append a dozen per state pair, tens of thousands in a chained model. */
#define SB_LIT(sb, lit) sb_add((sb), "" lit, sizeof(lit) - 1)

static void string_list_free(size_t n, const char *const *items)
{
    for (size_t i = 0; i < n; i++)
        free((char *)items[i]);
    free((void *)items);
}

static bool push_string(report_builder *rb, size_t *n, const char *const **items, char *s)
{
    if (!s) {
        rb->oom = true;
        return false;
    }
    char **grown = owned_array_grow((void *)*items, *n, sizeof *grown);
    if (!grown) {
        free(s);
        rb->oom = true;
        return false;
    }
    grown[(*n)++] = s;
    *items = (const char *const *)grown;
    return true;
}

bool report_builder_init(report_builder *rb)
{
    rb->oom = false;
    rb->skip_decisions = false;
    rb->pair_keys = (strmap)STRMAP_INIT;
    rb->report = calloc(1, sizeof *rb->report);
    return rb->report != NULL;
}

bool report_builder_failed(const report_builder *rb)
{
    return rb->oom;
}

rnnstate_report *report_builder_finish(report_builder *rb)
{
    rnnstate_report *r = rb->report;
    rb->report = NULL;
    strmap_free(&rb->pair_keys);
    return r;
}

void report_builder_discard(report_builder *rb)
{
    strmap_free(&rb->pair_keys);
    rnnstate_report_free(rb->report);
    rb->report = NULL;
}

static rnnstate_node_report *node_at(report_builder *rb, size_t node)
{
    return (rnnstate_node_report *)&rb->report->nodes[node];
}

size_t report_add_node(report_builder *rb, const char *graph, const char *op, const char *name)
{
    rnnstate_report *r = rb->report;
    rnnstate_node_report *grown = owned_array_grow((void *)r->nodes, r->n_nodes, sizeof *grown);
    if (!grown) {
        rb->oom = true;
        return SIZE_MAX;
    }
    r->nodes = grown;
    rnnstate_node_report *n = &grown[r->n_nodes];
    memset(n, 0, sizeof *n);
    n->graph = strdup(graph);
    n->op = strdup(op);
    n->name = strdup(name);
    n->status = RNNSTATE_NODE_ALREADY_EXPOSED;
    n->fixed_sequence_length = -1;
    if (!n->graph || !n->op || !n->name) {
        free((char *)n->graph);
        free((char *)n->op);
        free((char *)n->name);
        rb->oom = true;
        return SIZE_MAX;
    }
    return r->n_nodes++;
}

void report_node_set_sequence_length(report_builder *rb, size_t node, int64_t length)
{
    if (node != SIZE_MAX)
        node_at(rb, node)->fixed_sequence_length = length;
}

void report_node_set_status(report_builder *rb, size_t node, rnnstate_node_status status)
{
    if (node != SIZE_MAX)
        node_at(rb, node)->status = status;
}

#define FORMAT_INTO(var, fmt)                                                                      \
    va_list ap;                                                                                    \
    va_start(ap, fmt);                                                                             \
    char *var = str_vformat(fmt, ap);                                                                  \
    va_end(ap)

void report_node_set_reason(report_builder *rb, size_t node, const char *fmt, ...)
{
    FORMAT_INTO(text, fmt);
    if (node == SIZE_MAX || !text) {
        rb->oom |= !text;
        free(text);
        return;
    }
    rnnstate_node_report *n = node_at(rb, node);
    free((char *)n->reason);
    n->reason = text;
}

/* The per-node lists of strings a pass appends to. */
typedef enum node_list { NODE_WARNINGS, NODE_DECISIONS, NODE_INPUTS_ADDED, NODE_OUTPUTS_ADDED } node_list;

/* Appends `text` (owned; NULL when its allocation failed) to one list of a
 * node; the unknown node SIZE_MAX takes nothing. */
static void push_node_string(report_builder *rb, size_t node, node_list which, char *text)
{
    if (node == SIZE_MAX) {
        free(text);
        return;
    }
    rnnstate_node_report *n = node_at(rb, node);
    switch (which) {
    case NODE_WARNINGS: push_string(rb, &n->n_warnings, &n->warnings, text); break;
    case NODE_DECISIONS: push_string(rb, &n->n_decisions, &n->decisions, text); break;
    case NODE_INPUTS_ADDED: push_string(rb, &n->n_inputs_added, &n->inputs_added, text); break;
    case NODE_OUTPUTS_ADDED: push_string(rb, &n->n_outputs_added, &n->outputs_added, text); break;
    }
}

void report_node_warn(report_builder *rb, size_t node, const char *fmt, ...)
{
    FORMAT_INTO(text, fmt);
    push_node_string(rb, node, NODE_WARNINGS, text);
}

void report_node_decide(report_builder *rb, size_t node, const char *fmt, ...)
{
    if (rb->skip_decisions)
        return; /* not formatted: nobody reads it */
    FORMAT_INTO(text, fmt);
    push_node_string(rb, node, NODE_DECISIONS, text);
}

void report_node_input_added(report_builder *rb, size_t node, const char *name)
{
    push_node_string(rb, node, NODE_INPUTS_ADDED, node == SIZE_MAX ? NULL : strdup(name));
}

void report_node_output_added(report_builder *rb, size_t node, const char *name)
{
    push_node_string(rb, node, NODE_OUTPUTS_ADDED, node == SIZE_MAX ? NULL : strdup(name));
}

void report_note(report_builder *rb, const char *fmt, ...)
{
    FORMAT_INTO(text, fmt);
    push_string(rb, &rb->report->n_notes, &rb->report->notes, text);
}

static void pair_free(rnnstate_state_pair *p)
{
    free((char *)p->input);
    free((char *)p->output);
    for (size_t i = 0; p->shape && i < p->rank; i++)
        free((char *)p->shape[i].param);
    free((void *)p->shape);
}

void report_add_pair(report_builder *rb, const char *input, const char *output,
                     const dim_info *dims, size_t rank, int32_t elem_type, int batch_axis,
                     bool optional, bool added, rnnstate_pair_kind kind)
{
    rnnstate_report *r = rb->report;
    /* the key "input\x1foutput", on the stack when it fits; looked up and
     * stored in one probe (the pair's index is stored: an older index means
     * the pair is there already) */
    size_t n_in = strlen(input), n_out = strlen(output), len = n_in + 1 + n_out;
    char local[256];
    char *key = len < sizeof local ? local : malloc(len + 1);
    if (!key) {
        rb->oom = true;
        return;
    }
    memcpy(key, input, n_in);
    key[n_in] = '\x1f';
    memcpy(key + n_in + 1, output, n_out + 1);
    int fresh = (int)r->n_pairs;
    int at = strmap_intern_hashed(&rb->pair_keys, key, len, strmap_key_hash(key, len), fresh);
    if (key != local)
        free(key);
    bool seen = at >= 0 && at != fresh;
    if (at < 0)
        rb->oom = true;
    if (seen || rb->oom)
        return;
    rnnstate_state_pair *grown = owned_array_grow((void *)r->pairs, r->n_pairs, sizeof *grown);
    if (!grown) {
        rb->oom = true;
        return;
    }
    r->pairs = grown;
    rnnstate_state_pair p = { .input = strdup(input), .output = strdup(output), .rank = rank,
                              .dtype = dtype_name(elem_type), .batch_axis = batch_axis,
                              .optional = optional,
                              .added = added, .kind = kind };
    rnnstate_dim *shape = calloc(rank ? rank : 1, sizeof *shape);
    p.shape = shape;
    bool ok = p.input && p.output && shape;
    for (size_t i = 0; ok && i < rank; i++) {
        shape[i].value = dims[i].known && !dims[i].param ? dims[i].value : -1;
        if (dims[i].param)
            ok = (shape[i].param = strdup(dims[i].param)) != NULL;
    }
    if (!ok) {
        pair_free(&p);
        rb->oom = true;
        return;
    }
    grown[r->n_pairs++] = p;
}

void report_add_time_axis(report_builder *rb, const char *input, size_t axis)
{
    rnnstate_report *r = rb->report;
    for (size_t i = 0; i < r->n_time_axes; i++)
        if (r->time_axes[i].axis == axis && !strcmp(r->time_axes[i].input, input))
            return;
    if (rb->oom)
        return;
    rnnstate_time_axis *grown = owned_array_grow((void *)r->time_axes, r->n_time_axes, sizeof *grown);
    char *copy = grown ? strdup(input) : NULL;
    if (grown)
        r->time_axes = grown;
    if (!copy) {
        rb->oom = true;
        return;
    }
    grown[r->n_time_axes++] = (rnnstate_time_axis){ .input = copy, .axis = axis };
}

void report_set_stream(report_builder *rb, rnnstate_stream_verdict verdict, size_t chunk_multiple)
{
    rb->report->stream_verdict = verdict;
    rb->report->chunk_multiple = chunk_multiple;
}

static void blocker_free(rnnstate_stream_blocker *b)
{
    free((char *)b->graph);
    free((char *)b->op);
    free((char *)b->name);
    free((char *)b->reason);
}

void report_add_blocker(report_builder *rb, const char *graph, const char *op, const char *name,
                        const char *fmt, ...)
{
    FORMAT_INTO(reason, fmt);
    rnnstate_report *r = rb->report;
    rnnstate_stream_blocker b = { strdup(graph), strdup(op), strdup(name), reason };
    rnnstate_stream_blocker *grown =
        b.graph && b.op && b.name && b.reason
            ? owned_array_grow((void *)r->blockers, r->n_blockers, sizeof *grown)
            : NULL;
    if (!grown) {
        blocker_free(&b);
        rb->oom = true;
        return;
    }
    grown[r->n_blockers++] = b;
    r->blockers = grown;
}

void rnnstate_report_free(rnnstate_report *report)
{
    if (!report)
        return;
    for (size_t i = 0; i < report->n_nodes; i++) {
        const rnnstate_node_report *n = &report->nodes[i];
        free((char *)n->graph);
        free((char *)n->op);
        free((char *)n->name);
        free((char *)n->reason);
        string_list_free(n->n_warnings, n->warnings);
        string_list_free(n->n_inputs_added, n->inputs_added);
        string_list_free(n->n_outputs_added, n->outputs_added);
        string_list_free(n->n_decisions, n->decisions);
    }
    free((void *)report->nodes);
    for (size_t i = 0; i < report->n_pairs; i++)
        pair_free((rnnstate_state_pair *)&report->pairs[i]);
    free((void *)report->pairs);
    for (size_t i = 0; i < report->n_time_axes; i++)
        free((char *)report->time_axes[i].input);
    free((void *)report->time_axes);
    string_list_free(report->n_notes, report->notes);
    for (size_t i = 0; i < report->n_blockers; i++)
        blocker_free((rnnstate_stream_blocker *)&report->blockers[i]);
    free((void *)report->blockers);
    free(report);
}

/* ---- text -------------------------------------------------------------- */

rnnstate_model_status rnnstate_report_model_status(const rnnstate_report *r)
{
    return r->changed     ? RNNSTATE_MODEL_REWRITTEN
           : r->annotated ? RNNSTATE_MODEL_ANNOTATED
                          : RNNSTATE_MODEL_UNCHANGED;
}

/* The status's word in the text and JSON reports. */
static const char *model_status_word(const rnnstate_report *r)
{
    switch (rnnstate_report_model_status(r)) {
    case RNNSTATE_MODEL_REWRITTEN: return "rewritten";
    case RNNSTATE_MODEL_ANNOTATED: return "annotated";
    default: return "unchanged";
    }
}

static const char *status_word(rnnstate_node_status s)
{
    switch (s) {
    case RNNSTATE_NODE_UPDATED: return "updated";
    case RNNSTATE_NODE_ALREADY_EXPOSED: return "already-exposed";
    case RNNSTATE_NODE_RESET_EACH_CALL: return "reset-each-call";
    default: return "skipped";
    }
}

/* A decimal integer, without printf: the metadata pass writes one JSON entry
 * per state pair, tens of thousands in a chained model. */
static void add_int(strbuf *sb, long long v)
{
    char digits[24];
    size_t n = sizeof digits;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        digits[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[--n] = '-';
    sb_add(sb, digits + n, sizeof digits - n);
}

/* Every string in the text report comes from the model or its path, so each
 * goes through sb_add_escaped(); only the fixed words around them do not. */
/* A pair's shape: [1,batch,16] in text, [1, "batch", 16] in JSON; an
 * unknown dimension is ? or null. */
static void add_shape(strbuf *sb, const rnnstate_state_pair *p, bool json)
{
    SB_LIT(sb, "[");
    for (size_t d = 0; d < p->rank; d++) {
        if (d)
            sb_adds(sb, json ? ", " : ",");
        if (p->shape[d].param && json)
            sb_add_json_string(sb, p->shape[d].param);
        else if (p->shape[d].param)
            sb_add_escaped(sb, p->shape[d].param);
        else if (p->shape[d].value >= 0)
            add_int(sb, (long long)p->shape[d].value);
        else
            sb_adds(sb, json ? "null" : "?");
    }
    SB_LIT(sb, "]");
}

static void add_names_text(strbuf *sb, const char *what, size_t n, const char *const *names)
{
    if (!n)
        return;
    SB_LIT(sb, "; ");
    sb_adds(sb, what);
    SB_LIT(sb, " ");
    for (size_t i = 0; i < n; i++) {
        sb_adds(sb, i ? ", " : "");
        sb_add_escaped(sb, names[i]);
    }
}

/* Appends each of the n `values`, escaped (they come from the model or its
 * path), followed by the fixed words after[i]. */
static void add_escaped_between(strbuf *sb, size_t n, const char *const values[],
                                const char *const after[])
{
    for (size_t i = 0; i < n; i++) {
        sb_add_escaped(sb, values[i]);
        sb_adds(sb, after[i]);
    }
}

/* One line: the label and `text`, escaped, with the fixed words `before` between. */
static void add_line_text(strbuf *sb, const char *label, const char *before, const char *text)
{
    sb_add_escaped(sb, label);
    sb_adds(sb, before);
    sb_add_escaped(sb, text);
    SB_LIT(sb, "\n");
}

static void add_node_text(strbuf *sb, const rnnstate_node_report *n, const char *label,
                          bool verbose)
{
    const char *const values[] = { label, n->graph, n->op, n->name };
    const char *const after[] = { ": ", " ", " '", "': " };
    add_escaped_between(sb, 4, values, after);
    sb_adds(sb, status_word(n->status));
    if (n->reason) {
        SB_LIT(sb, " (");
        sb_add_escaped(sb, n->reason);
        SB_LIT(sb, ")");
    }
    add_names_text(sb, "inputs added", n->n_inputs_added, n->inputs_added);
    add_names_text(sb, "outputs added", n->n_outputs_added, n->outputs_added);
    SB_LIT(sb, "\n");
    for (size_t w = 0; w < n->n_warnings; w++)
        add_line_text(sb, label, ":   warning: ", n->warnings[w]);
    for (size_t d = 0; verbose && d < n->n_decisions; d++)
        add_line_text(sb, label, ":   ", n->decisions[d]);
}

static void add_pair_text(strbuf *sb, const rnnstate_state_pair *p, const char *label)
{
    const char *const values[] = { label, p->input, p->output };
    const char *const after[] = { ": state ", " -> ", " " };
    add_escaped_between(sb, 3, values, after);
    add_shape(sb, p, false);
    SB_LIT(sb, " ");
    sb_adds(sb, p->dtype);
    sb_adds(sb, p->optional ? ", optional" : ", required");
    sb_adds(sb, p->added ? "" : ", already in the model");
    sb_adds(sb, p->kind == RNNSTATE_PAIR_CONTEXT ? ", context\n" : "\n");
}

static void add_time_axis_text(strbuf *sb, const rnnstate_time_axis *t, const char *label)
{
    sb_add_escaped(sb, label);
    SB_LIT(sb, ": time axis ");
    sb_add_escaped(sb, t->input);
    sb_addf(sb, ":%zu (the sequence axis of the recurrent nodes)\n", t->axis);
}

static void add_blocker_text(strbuf *sb, const rnnstate_stream_blocker *b, const char *label)
{
    const char *const values[] = { label, b->graph, b->op, b->name, b->reason };
    const char *const after[] = { ":   blocked by ", " ", " '", "': ", "\n" };
    add_escaped_between(sb, 5, values, after);
}

/* One line for the verdict, one per blocker. */
static void add_stream_text(strbuf *sb, const rnnstate_report *r, const char *label)
{
    sb_add_escaped(sb, label);
    switch (r->stream_verdict) {
    case RNNSTATE_STREAM_EXACT:
        if (r->chunk_multiple > 1)
            sb_addf(sb, ": stream: exact: chunks whose length along the time axis is a multiple of "
                        "%zu frames, every state pair fed back, give the whole-sequence outputs\n",
                    r->chunk_multiple);
        else
            SB_LIT(sb, ": stream: exact: chunks of any length, every state pair fed back, give the "
                        "whole-sequence outputs\n");
        break;
    case RNNSTATE_STREAM_NONE:
        SB_LIT(sb, ": stream: none: feeding the state pairs back will NOT reproduce the "
                    "whole-sequence outputs\n");
        break;
    default:
        SB_LIT(sb, ": stream: unknown: the analysis cannot tell whether feeding the state pairs "
                    "back reproduces the whole-sequence outputs\n");
        break;
    }
    for (size_t i = 0; i < r->n_blockers; i++)
        add_blocker_text(sb, &r->blockers[i], label);
}

char *rnnstate_escape_text(const char *text)
{
    strbuf sb = STRBUF_INIT;
    sb_add_escaped(&sb, text);
    if (sb.oom) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb);
}

void rnnstate_string_free(char *text)
{
    free(text);
}

static void add_report_text(strbuf *sb, const rnnstate_report *report, const char *label,
                            bool verbose)
{
    size_t counts[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < report->n_nodes; i++) {
        counts[report->nodes[i].status]++;
        add_node_text(sb, &report->nodes[i], label, verbose);
    }
    for (size_t i = 0; i < report->n_pairs; i++)
        add_pair_text(sb, &report->pairs[i], label);
    for (size_t i = 0; i < report->n_time_axes; i++)
        add_time_axis_text(sb, &report->time_axes[i], label);
    if (report->stream_verdict != RNNSTATE_STREAM_NOT_ANALYSED)
        add_stream_text(sb, report, label);
    for (size_t i = 0; i < report->n_notes; i++)
        add_line_text(sb, label, ": note: ", report->notes[i]);
    if (report->n_nodes == 0)
        add_line_text(sb, label, ": ", "no recurrent (RNN, GRU, LSTM) nodes found");
    sb_add_escaped(sb, label);
    sb_addf(sb, ": %zu recurrent node%s: %zu updated, %zu already exposed, %zu skipped",
            report->n_nodes, report->n_nodes == 1 ? "" : "s", counts[RNNSTATE_NODE_UPDATED],
            counts[RNNSTATE_NODE_ALREADY_EXPOSED], counts[RNNSTATE_NODE_SKIPPED]);
    if (counts[RNNSTATE_NODE_RESET_EACH_CALL])
        sb_addf(sb, ", %zu reset at every call", counts[RNNSTATE_NODE_RESET_EACH_CALL]);
    sb_addf(sb, "; model %s\n", model_status_word(report));
}

char *rnnstate_report_text(const rnnstate_report *report, const char *label, bool verbose)
{
    strbuf sb = STRBUF_INIT;
    add_report_text(&sb, report, label, verbose);
    if (sb.oom) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb);
}

bool rnnstate_report_write_text(const rnnstate_report *report, const char *label, bool verbose,
                                FILE *out)
{
    char *text = rnnstate_report_text(report, label, verbose);
    if (text) {
        /* flushed, so that a write error shows now rather than at fclose() */
        bool ok = fputs(text, out) >= 0 && fflush(out) == 0 && !ferror(out);
        free(text);
        return ok;
    }
    /* out of memory: written through a fixed buffer instead */
    char buf[4096];
    strbuf sink;
    sb_init_sink(&sink, buf, sizeof buf, out);
    add_report_text(&sink, report, label, verbose);
    return sb_sink_flush(&sink);
}

/* ---- JSON -------------------------------------------------------------- */

static void add_json_names(strbuf *sb, size_t n, const char *const *names)
{
    SB_LIT(sb, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            SB_LIT(sb, ", ");
        sb_add_json_string(sb, names[i]);
    }
    SB_LIT(sb, "]");
}

static void add_json_node(strbuf *sb, const rnnstate_node_report *n)
{
    const struct { const char *key, *value; } strings[] = {
        { "graph", n->graph }, { "op", n->op }, { "name", n->name },
    };
    const struct { const char *key; size_t n; const char *const *names; } lists[] = {
        { "warnings", n->n_warnings, n->warnings },
        { "inputs_added", n->n_inputs_added, n->inputs_added },
        { "outputs_added", n->n_outputs_added, n->outputs_added },
        { "decisions", n->n_decisions, n->decisions },
    };
    /* the keys and words appended as they are: one entry per recurrent node */
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        sb_adds(sb, i ? ", \"" : "{\"");
        sb_adds(sb, strings[i].key);
        SB_LIT(sb, "\": ");
        sb_add_json_string(sb, strings[i].value);
    }
    SB_LIT(sb, ", \"status\": \"");
    sb_adds(sb, status_word(n->status));
    SB_LIT(sb, "\", \"reason\": ");
    sb_add_json_string(sb, n->reason);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        SB_LIT(sb, ", \"");
        sb_adds(sb, lists[i].key);
        SB_LIT(sb, "\": ");
        add_json_names(sb, lists[i].n, lists[i].names);
    }
    SB_LIT(sb, ", \"fixed_sequence_length\": ");
    if (n->fixed_sequence_length >= 0)
        add_int(sb, (long long)n->fixed_sequence_length);
    else
        SB_LIT(sb, "null");
    SB_LIT(sb, "}");
}

void report_pair_json(strbuf *sb, const rnnstate_state_pair *p, bool with_added)
{
    SB_LIT(sb, "{\"input\": ");
    sb_add_json_string(sb, p->input);
    SB_LIT(sb, ", \"output\": ");
    sb_add_json_string(sb, p->output);
    SB_LIT(sb, ", \"shape\": ");
    add_shape(sb, p, true);
    SB_LIT(sb, ", \"dtype\": \"");
    sb_adds(sb, p->dtype);
    SB_LIT(sb, "\", \"batch_axis\": ");
    if (p->batch_axis >= 0)
        add_int(sb, p->batch_axis);
    else
        SB_LIT(sb, "null");
    sb_adds(sb, p->optional ? ", \"optional\": true" : ", \"optional\": false");
    sb_adds(sb, p->kind == RNNSTATE_PAIR_CONTEXT ? ", \"kind\": \"context\""
                                                 : ", \"kind\": \"recurrent\"");
    if (with_added)
        sb_adds(sb, p->added ? ", \"added\": true" : ", \"added\": false");
    SB_LIT(sb, "}");
}

void report_time_axes_json(strbuf *sb, const rnnstate_report *r)
{
    SB_LIT(sb, "[");
    for (size_t i = 0; r && i < r->n_time_axes; i++) {
        sb_adds(sb, i ? ", {\"input\": " : "{\"input\": ");
        sb_add_json_string(sb, r->time_axes[i].input);
        SB_LIT(sb, ", \"axis\": ");
        add_int(sb, (long long)r->time_axes[i].axis);
        SB_LIT(sb, "}");
    }
    SB_LIT(sb, "]");
}

static const char *verdict_word(rnnstate_stream_verdict v)
{
    switch (v) {
    case RNNSTATE_STREAM_EXACT: return "exact";
    case RNNSTATE_STREAM_NONE: return "none";
    case RNNSTATE_STREAM_UNKNOWN: return "unknown";
    default: return NULL;
    }
}

void report_stream_json(strbuf *sb, const rnnstate_report *r)
{
    const char *verdict = r ? verdict_word(r->stream_verdict) : NULL;
    if (!verdict) {
        SB_LIT(sb, "null");
        return;
    }
    sb_addf(sb, "{\"verdict\": \"%s\", \"chunk_multiple\": %zu, \"blockers\": [", verdict,
            r->chunk_multiple);
    for (size_t i = 0; i < r->n_blockers; i++) {
        const rnnstate_stream_blocker *b = &r->blockers[i];
        sb_adds(sb, i ? ", {\"graph\": " : "{\"graph\": ");
        sb_add_json_string(sb, b->graph);
        SB_LIT(sb, ", \"op\": ");
        sb_add_json_string(sb, b->op);
        SB_LIT(sb, ", \"name\": ");
        sb_add_json_string(sb, b->name);
        SB_LIT(sb, ", \"reason\": ");
        sb_add_json_string(sb, b->reason);
        SB_LIT(sb, "}");
    }
    SB_LIT(sb, "]}");
}

static void add_json_model(strbuf *sb, const rnnstate_model_result *m)
{
    const rnnstate_report *r = m->report;
    const char *status = r ? model_status_word(r) : "error";
    SB_LIT(sb, "    {\"input\": ");
    sb_add_json_string(sb, m->input);
    SB_LIT(sb, ", \"output\": ");
    sb_add_json_string(sb, m->output);
    sb_addf(sb, ", \"status\": \"%s\", \"error\": ", status);
    sb_add_json_string(sb, m->error);
    SB_LIT(sb, ",\n     \"nodes\": [");
    for (size_t i = 0; r && i < r->n_nodes; i++) {
        sb_adds(sb, i ? ",\n       " : "\n       ");
        add_json_node(sb, &r->nodes[i]);
    }
    SB_LIT(sb, "],\n     \"state\": [");
    for (size_t i = 0; r && i < r->n_pairs; i++) {
        sb_adds(sb, i ? ",\n       " : "\n       ");
        report_pair_json(sb, &r->pairs[i], true);
    }
    SB_LIT(sb, "],\n     \"time_axes\": ");
    report_time_axes_json(sb, r);
    SB_LIT(sb, ",\n     \"stream\": ");
    report_stream_json(sb, r);
    SB_LIT(sb, ",\n     \"notes\": ");
    if (r)
        add_json_names(sb, r->n_notes, r->notes);
    else
        SB_LIT(sb, "[]");
    SB_LIT(sb, "}");
}

/* Writes what sb holds to the stream's file (and flushes it, with `flush`),
 * then empties sb; the first failure (of memory while formatting, or of the
 * write) is remembered, and nothing is written after it. */
static void json_write_part(rnnstate_json_stream *s, strbuf *sb, bool flush)
{
    if (!s->error && sb->oom) {
        s->error = ENOMEM;
    } else if (!s->error) {
        errno = 0;
        if (fwrite(sb->buf, 1, sb->len, s->out) != sb->len || (flush && fflush(s->out) != 0) ||
            ferror(s->out))
            s->error = errno ? errno : EIO;
    }
    sb_release(sb);
}

static void json_write_fixed(rnnstate_json_stream *s, const char *text)
{
    errno = 0;
    if (!s->error && (fputs(text, s->out) < 0 || fflush(s->out) != 0 || ferror(s->out)))
        s->error = errno ? errno : EIO;
}

void rnnstate_json_stream_begin(rnnstate_json_stream *s, FILE *out)
{
    *s = (rnnstate_json_stream){ .out = out };
    /* the head and the summary are written without allocating: only an
     * entry can fail for want of memory */
    json_write_fixed(s, "{\"tool\": \"rnnstate-rewrite\", \"version\": \"" RNNSTATE_VERSION_STRING
                        "\",\n  \"models\": [\n");
}

/* One entry; flushed with `flush` (a stream's reader sees it at once, while
 * rnnstate_report_write_json() writes the whole document and flushes once). */
static void json_add(rnnstate_json_stream *s, const rnnstate_model_result *result, bool flush)
{
    const rnnstate_report *r = result->report;
    rnnstate_model_status status = r ? rnnstate_report_model_status(r) : RNNSTATE_MODEL_UNCHANGED;
    s->errors += !r;
    s->rewritten += r && status == RNNSTATE_MODEL_REWRITTEN;
    s->annotated += r && status == RNNSTATE_MODEL_ANNOTATED;
    s->unchanged += r && status == RNNSTATE_MODEL_UNCHANGED;
    bool first = s->models++ == 0;
    if (s->error)
        return; /* nothing more is written: the counts are all that is kept */
    strbuf sb = STRBUF_INIT;
    if (!first)
        SB_LIT(&sb, ",\n");
    add_json_model(&sb, result);
    if (sb.oom) {
        /* out of memory: the entry goes out through a fixed buffer instead,
         * so that the report is whole all the same */
        char buf[4096];
        sb_release(&sb);
        sb_init_sink(&sb, buf, sizeof buf, s->out);
        if (!first)
            SB_LIT(&sb, ",\n");
        add_json_model(&sb, result);
        if (!s->error && !sb_sink_flush(&sb))
            s->error = errno;
        return;
    }
    json_write_part(s, &sb, flush);
}

void rnnstate_json_stream_add(rnnstate_json_stream *s, const rnnstate_model_result *result)
{
    json_add(s, result, true);
}

bool rnnstate_json_stream_end(rnnstate_json_stream *s)
{
    char tail[256];
    snprintf(tail, sizeof tail,
             "\n  ],\n  \"summary\": {\"models\": %zu, \"rewritten\": %zu, \"annotated\": %zu, "
             "\"unchanged\": %zu, \"errors\": %zu}\n}\n",
             s->models, s->rewritten, s->annotated, s->unchanged, s->errors);
    json_write_fixed(s, tail);
    return !s->error;
}

bool rnnstate_report_write_json(const rnnstate_model_result *results, size_t n, FILE *out)
{
    rnnstate_json_stream s;
    rnnstate_json_stream_begin(&s, out);
    for (size_t i = 0; i < n; i++)
        json_add(&s, &results[i], false);
    return rnnstate_json_stream_end(&s);
}
