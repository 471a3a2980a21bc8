/* fuzz_rewrite: the libFuzzer target (and, linked with replay_main.c, a
 * replayer that any compiler builds).
 *
 * One input is the bytes of a model. It goes through the whole library in
 * memory: load -> rewrite -> report (text and JSON, to /dev/null) -> save ->
 * load the saved bytes again -> verify them against the report -> rewrite
 * that model once more. Everything is freed, so the sanitizers see leaks.
 *
 * Two bits of the input's last byte choose the route (the byte stays part
 * of the model, so a crash file is itself the model that reproduces it):
 *   bit 0: the state-input mode (1: required, 0: optional);
 *   bit 1: how the model is loaded: 0 from memory (rnnstate_model_load_memory),
 *          1 from a file (a memfd, through rnnstate_model_load_file) with a
 *          lazy-tensor threshold of 16 bytes, so that the lazy scan
 *          (lazy_scan.c) leaves most initializers in the file and the save
 *          copies them from it.
 * Reproduce with the command line (tests/fuzz/repro.sh picks the options):
 *     rnnstate-rewrite crash-... -o /tmp/out.onnx --state-inputs=MODE
 * The seed corpus holds every model with all four endings
 * (tests/fuzz/make_corpus.sh appends an unknown field 99 = 0..3).
 *
 * Besides crashes, leaks and undefined behaviour, these are bugs and abort:
 * a failed load that returns a model or no message; a rewrite that fails
 * with anything but a refusal (RNNSTATE_ERR_INVALID, _ARGUMENT, _NOMEM);
 * a rewritten model that cannot be serialized, or whose serialized bytes the
 * library refuses to load again, or that fails rnnstate_model_check against
 * its own report when the input passed the same structural check (a graph
 * out of order or reading undefined values stays so: the rewrite does not
 * sort graphs); a second rewrite of the re-loaded model that fails. */
#define _GNU_SOURCE /* memfd_create */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rnnstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const rnnstate_error *err)
{
    fprintf(stderr, "fuzz_rewrite: BUG: %s%s%s\n", what, err ? ": " : "",
            err ? err->message : "");
    abort();
}

static FILE *devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}

/* Reads every string of the report, so that ASan sees a dangling one. */
static size_t touch_report(const rnnstate_report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_nodes; i++) {
        const rnnstate_node_report *node = &r->nodes[i];
        n += strlen(node->graph) + strlen(node->op) + strlen(node->name);
        if (node->reason)
            n += strlen(node->reason);
        for (size_t k = 0; k < node->n_warnings; k++)
            n += strlen(node->warnings[k]);
        for (size_t k = 0; k < node->n_inputs_added; k++)
            n += strlen(node->inputs_added[k]);
        for (size_t k = 0; k < node->n_outputs_added; k++)
            n += strlen(node->outputs_added[k]);
        for (size_t k = 0; k < node->n_decisions; k++)
            n += strlen(node->decisions[k]);
    }
    for (size_t i = 0; i < r->n_pairs; i++) {
        const rnnstate_state_pair *p = &r->pairs[i];
        n += strlen(p->input) + strlen(p->output) + strlen(p->dtype);
        for (size_t k = 0; k < p->rank; k++)
            if (p->shape[k].param)
                n += strlen(p->shape[k].param);
    }
    for (size_t i = 0; i < r->n_notes; i++)
        n += strlen(r->notes[i]);
    return n;
}

static void write_reports(const rnnstate_report *report)
{
    FILE *out = devnull();
    if (!out)
        return;
    rnnstate_report_write_text(report, "<fuzz>", true, out);
    rnnstate_model_result result = { "<fuzz>", "<fuzz-out>", report, NULL };
    rnnstate_report_write_json(&result, 1, out);
}

static int refusal(rnnstate_status st)
{
    return st == RNNSTATE_ERR_INVALID || st == RNNSTATE_ERR_ARGUMENT ||
           st == RNNSTATE_ERR_NOMEM;
}

/* Loads through a file: a memfd holding the bytes, opened by path. */
static rnnstate_status load_via_file(const uint8_t *data, size_t size,
                                     const rnnstate_limits *limits, rnnstate_model **model,
                                     rnnstate_error *err)
{
    int fd = memfd_create("fuzz-model", MFD_CLOEXEC);
    if (fd < 0) {
        perror("memfd_create");
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            perror("write");
            abort();
        }
        done += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    rnnstate_status st = rnnstate_model_load_file(path, limits, model, err);
    close(fd); /* the model keeps its own descriptor while it needs one */
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    rnnstate_error err = { 0 };
    rnnstate_model *model = (rnnstate_model *)1; /* must be reset to NULL on failure */
    unsigned char route = size ? data[size - 1] : 0;
    rnnstate_status st;
    if (route & 2) {
        limits.lazy_tensor_bytes = 16;
        st = load_via_file(data, size, &limits, &model, &err);
    } else {
        st = rnnstate_model_load_memory(data, size, "<fuzz>", &limits, &model, &err);
    }
    if (st != RNNSTATE_OK) {
        if (model)
            bug("a failed load returned a model", &err);
        if (!err.message[0] || err.status != st)
            bug("a failed load left no message or a different status", &err);
        return 0;
    }

    rnnstate_options options;
    rnnstate_options_init(&options);
    options.state_inputs =
        route & 1 ? RNNSTATE_STATE_INPUTS_REQUIRED : RNNSTATE_STATE_INPUTS_OPTIONAL;
    const rnnstate_report no_pairs = { 0 };
    bool input_well_formed = rnnstate_model_check(model, &no_pairs, &err) == RNNSTATE_OK;
    rnnstate_report *report = NULL;
    st = rnnstate_rewrite(model, &options, &report, &err);
    if (st != RNNSTATE_OK) {
        if (!refusal(st) || report || !err.message[0])
            bug("the rewrite failed without a proper refusal", &err);
        rnnstate_model_free(model);
        return 0;
    }
    touch_report(report);
    write_reports(report);

    unsigned char *saved = NULL;
    size_t saved_size = 0;
    st = rnnstate_model_save_memory(model, &saved, &saved_size, &err);
    rnnstate_model_free(model);
    if (st != RNNSTATE_OK) {
        if (st != RNNSTATE_ERR_NOMEM)
            bug("the rewritten model cannot be serialized", &err);
        rnnstate_report_free(report);
        return 0;
    }

    rnnstate_model *again = NULL;
    st = rnnstate_model_load_memory(saved, saved_size, "<fuzz-out>", &limits, &again, &err);
    rnnstate_buffer_free(saved);
    if (st != RNNSTATE_OK)
        bug("the library refuses to load the model it wrote", &err);
    st = rnnstate_model_check(again, report, &err);
    if (st != RNNSTATE_OK && input_well_formed)
        bug("the written model fails --check against its own report", &err);
    rnnstate_report_free(report);

    /* a second rewrite of the output: must not fail, nor break the model */
    rnnstate_report *report2 = NULL;
    st = rnnstate_rewrite(again, &options, &report2, &err);
    if (st != RNNSTATE_OK && st != RNNSTATE_ERR_NOMEM)
        bug("rewriting the rewritten model failed", &err);
    if (st == RNNSTATE_OK) {
        touch_report(report2);
        rnnstate_report_free(report2);
    }
    rnnstate_model_free(again);
    return 0;
}
