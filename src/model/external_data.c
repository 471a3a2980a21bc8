#define _DEFAULT_SOURCE /* realpath */
/* External data locations moved for the output's directory
 * (external_data.h). */
#include "model/external_data.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx_build.h"
#include "util/array.h"
#include "util/strbuf.h"

/* The length of the next path component at p (after any slashes). */
static size_t component(const char **p)
{
    while (**p == '/')
        (*p)++;
    return strcspn(*p, "/");
}

/* The relative path from directory `from` to file `to`, both absolute and
 * resolved (no "." or ".." components, no symbolic links). */
static char *relative_path(const char *from, const char *to)
{
    const char *f = from, *t = to;
    for (;;) {
        const char *fs = f, *ts = t;
        size_t fl = component(&fs), tl = component(&ts);
        if (!fl || fl != tl || strncmp(fs, ts, fl) != 0)
            break;
        f = fs + fl;
        t = ts + tl;
    }
    strbuf sb = STRBUF_INIT;
    for (const char *p = f; component(&p) > 0; p += strcspn(p, "/"))
        sb_adds(&sb, "../");
    while (*t == '/')
        t++;
    sb_adds(&sb, t);
    if (sb.oom) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb);
}

/* Keeps `block` (NULL: out of memory) for release_relocations(). */
static void *keep(relocations *r, void *block)
{
    void **grown = block ? owned_array_grow(r->blocks, r->n_blocks, sizeof *grown) : NULL;
    if (!grown) {
        free(block);
        if (r->status == RNNSTATE_OK)
            r->status = set_error(r->err, RNNSTATE_ERR_NOMEM, "%s: out of memory", r->label);
        return NULL;
    }
    r->blocks = grown;
    r->blocks[r->n_blocks++] = block;
    return block;
}

static void *keep_copy(relocations *r, const void *from, size_t size)
{
    void *block = malloc(size);
    if (block)
        memcpy(block, from, size);
    return keep(r, block);
}

/* The location of external file `location` of tensor `t`, relative to the
 * output's directory; NULL on error (r->status). */
static char *relocated_location(relocations *r, const Onnx__TensorProto *t, const char *location)
{
    char joined[PATH_MAX * 2], target[PATH_MAX];
    snprintf(joined, sizeof joined, "%s/%s", r->source_dir, location);
    if (!realpath(joined, target)) {
        r->status = set_error(r->err, RNNSTATE_ERR_IO,
                              "%s: external data file '%s' of tensor '%s' cannot be found (%s)",
                              r->label, location, str_or_empty(t->name), strerror(errno));
        return NULL;
    }
    char *rel = keep(r, relative_path(r->out_dir, target));
    if (rel && !strncmp(rel, "../", 3)) {
        /* ONNX Runtime refuses external data outside the model's directory */
        r->status = set_error(r->err, RNNSTATE_ERR_INVALID,
                              "%s: tensor '%s' is stored in external file '%s', which would "
                              "lie outside the output's directory (ONNX Runtime refuses "
                              "that): copy or link it beside the output instead "
                              "(--external-data=copy, the default, or link), or write the "
                              "output in '%s' or a directory above it",
                              r->label, str_or_empty(t->name), location, r->source_dir);
        return NULL;
    }
    return rel;
}

/* Each relocated_* function returns a copy of its message with the external
 * data locations inside changed, or NULL when nothing inside changes (or on
 * error, in r->status). */
static Onnx__TensorProto *relocated_tensor(relocations *r, const Onnx__TensorProto *t)
{
    if (!t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return NULL;
    Onnx__TensorProto *copy = NULL;
    for (size_t i = 0; r->status == RNNSTATE_OK && i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (strcmp(str_or_empty(e->key), "location") || !e->value || e->value[0] == '/')
            continue;
        char *rel = relocated_location(r, t, e->value);
        if (rel && !copy && (copy = keep_copy(r, t, sizeof *t)))
            copy->external_data =
                keep_copy(r, t->external_data, t->n_external_data * sizeof *copy->external_data);
        Onnx__StringStringEntryProto *entry =
            copy && copy->external_data ? keep_copy(r, e, sizeof *e) : NULL;
        if (entry) {
            entry->value = rel;
            copy->external_data[i] = entry;
        }
    }
    return r->status == RNNSTATE_OK ? copy : NULL;
}

/* A copy of `message` (`size` bytes) in which the caller replaces the fields
 * that relocate, when any did (`changed`) and nothing failed; else NULL. */
static void *copy_if_changed(relocations *r, const void *message, size_t size, bool changed)
{
    return r->status == RNNSTATE_OK && changed ? keep_copy(r, message, size) : NULL;
}

/* A sparse tensor's values and indices are tensors of their own. */
static Onnx__SparseTensorProto *relocated_sparse(relocations *r, const Onnx__SparseTensorProto *s)
{
    Onnx__TensorProto *values = s->values ? relocated_tensor(r, s->values) : NULL;
    Onnx__TensorProto *indices = s->indices ? relocated_tensor(r, s->indices) : NULL;
    Onnx__SparseTensorProto *copy = copy_if_changed(r, s, sizeof *s, values || indices);
    if (copy) {
        copy->values = values ? values : s->values;
        copy->indices = indices ? indices : s->indices;
    }
    return copy;
}

static Onnx__AttributeProto *relocated_attribute(relocations *r, const Onnx__AttributeProto *a);
static Onnx__NodeProto *relocated_node(relocations *r, const Onnx__NodeProto *node);
static Onnx__GraphProto *relocated_graph(relocations *r, const Onnx__GraphProto *g);

/* The message types that arrays of relocated_array hold. */
typedef enum {
    RELOCATE_TENSORS,
    RELOCATE_SPARSE_TENSORS,
    RELOCATE_ATTRIBUTES,
    RELOCATE_NODES,
    RELOCATE_GRAPHS,
} relocated_kind;

static void *relocated_message(relocations *r, relocated_kind kind, const void *message)
{
    switch (kind) {
    case RELOCATE_TENSORS: return relocated_tensor(r, message);
    case RELOCATE_SPARSE_TENSORS: return relocated_sparse(r, message);
    case RELOCATE_ATTRIBUTES: return relocated_attribute(r, message);
    case RELOCATE_NODES: return relocated_node(r, message);
    case RELOCATE_GRAPHS: return relocated_graph(r, message);
    }
    return NULL;
}

/* A copy of the array `items` of `n` messages of type `kind` (pointers, as
 * protobuf-c keeps repeated messages) in which those whose locations change
 * are replaced, or NULL when none changes. */
static void *relocated_array(relocations *r, const void *items, size_t n, relocated_kind kind)
{
    void *const *messages = items;
    void **copy = NULL;
    for (size_t i = 0; r->status == RNNSTATE_OK && i < n; i++) {
        void *message = relocated_message(r, kind, messages[i]);
        if (message && (copy || (copy = keep_copy(r, messages, n * sizeof *copy))))
            copy[i] = message;
    }
    return r->status == RNNSTATE_OK ? copy : NULL;
}

/* TENSOR, TENSORS, SPARSE_TENSOR, SPARSE_TENSORS, GRAPH and GRAPHS attributes. */
static Onnx__AttributeProto *relocated_attribute(relocations *r, const Onnx__AttributeProto *a)
{
    Onnx__TensorProto *t = a->t ? relocated_tensor(r, a->t) : NULL;
    Onnx__TensorProto **tensors = relocated_array(r, a->tensors, a->n_tensors, RELOCATE_TENSORS);
    Onnx__SparseTensorProto *sparse =
        a->sparse_tensor ? relocated_sparse(r, a->sparse_tensor) : NULL;
    Onnx__SparseTensorProto **sparse_tensors =
        relocated_array(r, a->sparse_tensors, a->n_sparse_tensors, RELOCATE_SPARSE_TENSORS);
    Onnx__GraphProto *g = a->g ? relocated_graph(r, a->g) : NULL;
    Onnx__GraphProto **graphs = relocated_array(r, a->graphs, a->n_graphs, RELOCATE_GRAPHS);
    Onnx__AttributeProto *copy =
        copy_if_changed(r, a, sizeof *a, t || tensors || sparse || sparse_tensors || g || graphs);
    if (copy) {
        copy->t = t ? t : a->t;
        copy->tensors = tensors ? tensors : a->tensors;
        copy->sparse_tensor = sparse ? sparse : a->sparse_tensor;
        copy->sparse_tensors = sparse_tensors ? sparse_tensors : a->sparse_tensors;
        copy->g = g ? g : a->g;
        copy->graphs = graphs ? graphs : a->graphs;
    }
    return copy;
}

static Onnx__NodeProto *relocated_node(relocations *r, const Onnx__NodeProto *node)
{
    Onnx__AttributeProto **attrs =
        relocated_array(r, node->attribute, node->n_attribute, RELOCATE_ATTRIBUTES);
    Onnx__NodeProto *copy = copy_if_changed(r, node, sizeof *node, attrs);
    if (copy)
        copy->attribute = attrs;
    return copy;
}

static Onnx__GraphProto *relocated_graph(relocations *r, const Onnx__GraphProto *g)
{
    Onnx__TensorProto **inits =
        relocated_array(r, g->initializer, g->n_initializer, RELOCATE_TENSORS);
    Onnx__SparseTensorProto **sparse_inits = relocated_array(
        r, g->sparse_initializer, g->n_sparse_initializer, RELOCATE_SPARSE_TENSORS);
    Onnx__NodeProto **nodes = relocated_array(r, g->node, g->n_node, RELOCATE_NODES);
    Onnx__GraphProto *copy = copy_if_changed(r, g, sizeof *g, inits || sparse_inits || nodes);
    if (copy) {
        copy->initializer = inits ? inits : g->initializer;
        copy->sparse_initializer = sparse_inits ? sparse_inits : g->sparse_initializer;
        copy->node = nodes ? nodes : g->node;
    }
    return copy;
}

static const char *external_location(const Onnx__TensorProto *t)
{
    if (!t || !t->has_data_location ||
        t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return NULL;
    for (size_t i = 0; i < t->n_external_data; i++)
        if (!strcmp(str_or_empty(t->external_data[i]->key), "location"))
            return str_or_empty(t->external_data[i]->value);
    return NULL;
}

/* One tensor's location to the visitor; false once the visitor said stop. */
static bool visit_tensor(const Onnx__TensorProto *t, location_visitor visit, void *arg)
{
    const char *location = external_location(t);
    return !location || visit(location, t, arg);
}

static bool visit_sparse(const Onnx__SparseTensorProto *s, location_visitor visit, void *arg)
{
    return !s || (visit_tensor(s->values, visit, arg) && visit_tensor(s->indices, visit, arg));
}

static bool visit_attribute(const Onnx__AttributeProto *a, location_visitor visit, void *arg)
{
    bool go = visit_tensor(a->t, visit, arg) && visit_sparse(a->sparse_tensor, visit, arg) &&
              (!a->g || visit_external_locations(a->g, visit, arg));
    for (size_t k = 0; go && k < a->n_tensors; k++)
        go = visit_tensor(a->tensors[k], visit, arg);
    for (size_t k = 0; go && k < a->n_sparse_tensors; k++)
        go = visit_sparse(a->sparse_tensors[k], visit, arg);
    for (size_t k = 0; go && k < a->n_graphs; k++)
        go = visit_external_locations(a->graphs[k], visit, arg);
    return go;
}

/* Every tensor stored outside the model, wherever relocated_graph() looks. */
bool visit_external_locations(const Onnx__GraphProto *g, location_visitor visit, void *arg)
{
    bool go = true;
    for (size_t i = 0; go && i < g->n_initializer; i++)
        go = visit_tensor(g->initializer[i], visit, arg);
    for (size_t i = 0; go && i < g->n_sparse_initializer; i++)
        go = visit_sparse(g->sparse_initializer[i], visit, arg);
    for (size_t n = 0; go && n < g->n_node; n++)
        for (size_t a = 0; go && a < g->node[n]->n_attribute; a++)
            go = visit_attribute(g->node[n]->attribute[a], visit, arg);
    return go;
}

static bool note_first(const char *location, const Onnx__TensorProto *t, void *arg)
{
    (void)t;
    *(const char **)arg = location;
    return false;
}

rnnstate_status find_external_data(const rnnstate_model *m, bool *found, rnnstate_error *err)
{
    /* most models keep every tensor inside: nothing to resolve */
    const char *location = NULL;
    visit_external_locations(m->proto->graph, note_first, &location);
    *found = location != NULL;
    if (location && !m->source_dir)
        return set_error(err, RNNSTATE_ERR_INVALID,
                         "%s: initializers are stored in external files ('%s') whose location "
                         "is relative to the model's directory, which is unknown here: give "
                         "the model's path instead",
                         m->label, location);
    return RNNSTATE_OK;
}

void release_relocations(relocations *r)
{
    for (size_t i = 0; i < r->n_blocks; i++)
        free(r->blocks[i]);
    free(r->blocks);
    free(r->out_dir);
}

/* The model to write: the relocated copy, or the model itself. */
const Onnx__ModelProto *relocated_model(const rnnstate_model *m, const relocations *r)
{
    return r->graph_copy ? &r->model : m->proto;
}

/* Points external data locations at the same files from the output's
 * directory, in a copy (see relocations). The external files are never read
 * or copied. */
rnnstate_status relocate_external_data(const rnnstate_model *m, const char *path,
                                              relocations *r, rnnstate_error *err)
{
    memset(r, 0, sizeof *r);
    r->label = m->label;
    r->err = err;
    r->source_dir = m->source_dir;
    /* realpath() below costs a system call per directory of both paths:
     * only for models with external data */
    bool external;
    rnnstate_status st = find_external_data(m, &external, err);
    if (st != RNNSTATE_OK || !external)
        return st;
    char *copy = strdup(path);
    char resolved[PATH_MAX];
    if (!copy)
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    bool found = realpath(dirname(copy), resolved) != NULL;
    free(copy);
    char source[PATH_MAX];
    if (!found || !realpath(m->source_dir, source) || !strcmp(source, resolved))
        return RNNSTATE_OK; /* same directory: nothing to change */
    if (!(r->out_dir = strdup(resolved)))
        return set_error(err, RNNSTATE_ERR_NOMEM, "%s: out of memory", m->label);
    r->source_dir = m->source_dir;
    r->graph_copy = relocated_graph(r, m->proto->graph);
    r->model = *m->proto;
    r->model.graph = r->graph_copy;
    return r->status;
}

