/* Inputs never replaced by accident: an output that is an input of the run
 * (the same device and inode, however the path reaches it) is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "cli/cli.h"

static int compare_files(const void *a, const void *b)
{
    const input_file *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The inputs' identities, sorted for a binary search per output. Taken the
 * first time an output already exists, not before the run: a batch into a
 * new directory never needs them, and a stat() per input is serial work.
 * (An input that an earlier job of the run has written by then is noted
 * too, which only protects more.) The caller holds rs->lock. */
static void note_inputs_once(run_state *rs)
{
    struct stat st;
    if (rs->inputs_noted)
        return;
    for (size_t i = 0; i < rs->n_jobs; i++) {
        const job *j = &rs->jobs[i];
        if (!strcmp(j->input, "-") || stat(j->input, &st) != 0)
            continue;
        input_file *grown = owned_array_grow(rs->inputs, rs->n_inputs, sizeof *grown);
        if (!grown)
            die_oom();
        grown[rs->n_inputs++] = (input_file){ st.st_dev, st.st_ino, j->input };
        rs->inputs = grown;
    }
    if (rs->n_inputs > 1)
        qsort(rs->inputs, rs->n_inputs, sizeof *rs->inputs, compare_files);
    rs->inputs_noted = true;
}

output_target look_at_output(const char *output)
{
    output_target t = { .exists = false };
    if (strcmp(output, "-") != 0)
        t.exists = lstat(output, &t.st) == 0;
    return t;
}

/* An output that is an input of the run (the same file, however it is
 * reached: -d onto the input's directory, a symbolic link, "..", a hard
 * link) is not written, unless the user named it with -o. */
rnnstate_status refuse_replacing_an_input(const cli *c, const job *j, const output_target *at,
                                          run_state *rs, rnnstate_error *err)
{
    struct stat st = at->st;
    if (c->output || !at->exists || (S_ISLNK(st.st_mode) && stat(j->output, &st) != 0))
        return RNNSTATE_OK;
    pthread_mutex_lock(&rs->lock);
    note_inputs_once(rs);
    pthread_mutex_unlock(&rs->lock);
    if (!rs->n_inputs)
        return RNNSTATE_OK;
    input_file key = { st.st_dev, st.st_ino, NULL };
    const input_file *same =
        bsearch(&key, rs->inputs, rs->n_inputs, sizeof *rs->inputs, compare_files);
    if (!same)
        return RNNSTATE_OK;
    char *input = shown(j->input), *output = shown(j->output), *other = shown(same->path);
    rnnstate_status status =
        job_error(err, RNNSTATE_ERR_ARGUMENT,
                  "%s: not written: the output %s is the input %s (the same file); only -o "
                  "rewrites a model in place",
                  input, output, other);
    rnnstate_string_free(input);
    rnnstate_string_free(output);
    rnnstate_string_free(other);
    return status;
}

