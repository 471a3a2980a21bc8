/* state/contract: the promise of every state pair (see contract.h). */
#include "state/contract.h"

#include <stdio.h>
#include <string.h>

#include "util/strbuf.h"
#include "model/tensor_util.h"

void pair_end_clear(pair_end *end)
{
    for (size_t d = 0; d < end->rank; d++)
        dim_info_clear(&end->dims[d]);
    end->rank = 0;
}

void pair_end_declared(const rewrite_ctx *ctx, const char *name, bool output, pair_end *end)
{
    memset(end, 0, sizeof *end);
    end->name = name;
    const value_entry *e = graph_index_find(&ctx->scopes.scopes[0]->index, name);
    int at = !e ? -1 : output ? e->graph_output : e->graph_input;
    if (at < 0)
        return;
    const Onnx__ValueInfoProto *vi = output ? ctx->graph->output[at] : ctx->graph->input[at];
    end->elem_type = value_info_elem_type(vi);
    const Onnx__TensorShapeProto *shape = value_info_shape(vi);
    if (!shape || shape->n_dim > 8)
        return;
    end->rank = shape->n_dim;
    for (size_t d = 0; d < end->rank; d++)
        dim_from_proto(shape->dim[d], &end->dims[d]);
}

/* The end the pass creates: the node's state type and shape. Its params
 * are the plan's (not owned): clear only the declared ends. */
static void pair_end_created(const recurrent_shape *rs, pair_end *end)
{
    memset(end, 0, sizeof *end);
    end->elem_type = rs->elem_type;
    end->rank = 3;
    recurrent_state_dims(rs, end->dims);
}

/* *end as the node's state: the end the pass creates (declared NULL), or a
 * declared end without a shape, which keeps its name and any type it
 * declares. */
static void state_shaped(const recurrent_shape *rs, const pair_end *declared, pair_end *end)
{
    const char *name = declared ? declared->name : NULL;
    int32_t elem_type = declared ? declared->elem_type : 0;
    pair_end_created(rs, end);
    end->name = name;
    end->undeclared = name != NULL;
    if (elem_type)
        end->elem_type = elem_type;
}

/* Two shapes conflict when both are declared and differ in rank, or in a
 * dimension both fix. A symbolic dimension binds at run time and fits any. */
static bool shapes_conflict(const pair_end *a, const pair_end *b)
{
    if (!a->rank || !b->rank)
        return false;
    if (a->rank != b->rank)
        return true;
    for (size_t d = 0; d < a->rank; d++) {
        const dim_info *x = &a->dims[d], *y = &b->dims[d];
        if (x->known && !x->param && y->known && !y->param && x->value != y->value)
            return true;
    }
    return false;
}

static void describe_end(strbuf *sb, const pair_end *end, const char *what)
{
    sb_addf(sb, "%s %s%s%s%s is %s [", what, end->name ? "'" : "(new)", end->name ? end->name : "",
            end->name ? "'" : "", end->undeclared ? " (no shape declared: the node's state)" : "",
            dtype_name(end->elem_type));
    for (size_t d = 0; d < end->rank; d++) {
        const dim_info *x = &end->dims[d];
        if (x->param)
            sb_addf(sb, "%s%s", d ? "," : "", x->param);
        else if (x->known)
            sb_addf(sb, "%s%lld", d ? "," : "", (long long)x->value);
        else
            sb_addf(sb, "%s?", d ? "," : "");
    }
    sb_adds(sb, "]");
}

const char *pair_contract_problem(const rewrite_ctx *ctx, const node_plan *p, int slot,
                                  bool alone, char *buf, size_t size)
{
    const slot_plan *sp = &p->slots[slot];
    bool model_fed = sp->reset_of || sp->source.kind == SOURCE_GRAPH_INPUT ||
                     sp->source.kind == SOURCE_VIEW_OF_INPUT;
    const char *reached = alone ? NULL : model_fed ? sp->reached : sp->reached_direct;
    pair_end in, out;
    bool in_declared = model_fed, out_declared = reached != NULL;
    if (in_declared)
        pair_end_declared(ctx, sp->reset_of ? sp->reset_of : sp->source.input, false, &in);
    if (out_declared)
        pair_end_declared(ctx, reached, true, &out);
    /* An end that declares no shape and that the node reads or writes as it
     * is (not a view of a stack of states) has the node's state shape, which
     * the report gives for the pair: the other end must fit that. A type it
     * declares stays. */
    bool in_is_state = !sp->reset_of && sp->source.kind == SOURCE_GRAPH_INPUT;
    bool out_is_state = reached && sp->reached_direct && !strcmp(reached, sp->reached_direct);
    if (in_declared && !in.rank && in_is_state) {
        pair_end_clear(&in);
        in_declared = false;
    }
    if (out_declared && !out.rank && out_is_state) {
        pair_end_clear(&out);
        out_declared = false;
    }
    /* An input the node reads a view of (a slice of a packed cache, a layer
     * of a stack) and that declares no shape: only the output it comes back
     * from can say what the caller feeds (record_pair reports that shape).
     * With no shape there either, there is no shape to promise. */
    bool shapeless_view = in_declared && !in.rank && !in_is_state && !(out_declared && out.rank);
    if (!in_declared)
        state_shaped(&p->rs, model_fed ? &in : NULL, &in);
    if (!out_declared)
        state_shaped(&p->rs, reached ? &out : NULL, &out);
    bool types_differ = in.elem_type && out.elem_type && in.elem_type != out.elem_type;
    const char *problem = NULL;
    if (shapeless_view) {
        snprintf(buf, size,
                 "the state pair of initial_%s has no shape to promise: the node reads a view of "
                 "input '%s', which declares no shape, and %s%s%s",
                 slot_letter[slot], in.name, reached ? "output '" : "",
                 reached ? reached : "",
                 reached ? "' declares none either" : "no model output carries its final state");
        problem = buf;
    } else if (types_differ || shapes_conflict(&in, &out)) {
        strbuf sb = STRBUF_INIT;
        sb_addf(&sb, "the state pair of initial_%s would not fit: ", slot_letter[slot]);
        describe_end(&sb, &in, "input");
        describe_end(&sb, &out, ", output");
        sb_adds(&sb, alone ? "; the views of the input do not tile it, so no output can carry it"
                           : "; not exposed");
        snprintf(buf, size, "%s", sb.oom ? "the state pair would not fit" : sb.buf);
        sb_release(&sb);
        problem = buf;
    }
    if (in_declared)
        pair_end_clear(&in);
    if (out_declared)
        pair_end_clear(&out);
    return problem;
}

int pair_batch_axis(const recurrent_shape *rs, const dim_info *dims, size_t rank,
                    bool same_layout)
{
    int layout_axis = rs->batch_first ? 0 : 1;
    if (same_layout)
        return rank == 3 ? layout_axis : -1;
    for (size_t d = 0; rs->batch.param && d < rank; d++)
        if (dims[d].param && !strcmp(dims[d].param, rs->batch.param))
            return (int)d;
    /* a stack of states in the node's layout ([layers * directions, batch,
     * hidden], Silero's h and c): its last axis is the hidden size */
    const dim_info *last = rank == 3 ? &dims[2] : NULL;
    if (last && last->known && !last->param && last->value == rs->hidden)
        return layout_axis;
    return -1;
}
