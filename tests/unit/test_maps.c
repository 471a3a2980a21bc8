/* The hash maps under every graph index (issues 10, 11, 15): strmap (names,
 * keyed SipHash-1-3) and ptrmap (addresses), and the model's O(1) lookup of
 * lazy initializer stubs, which forgets a stub before it is freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"
#include "model_builder.h"
#include "ptrmap.h"
#include "strmap.h"

/* ---- strmap ------------------------------------------------------------- */

static void strmap_stores_replaces_and_misses(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    assert_int_equal(strmap_get(&m, "x"), -1);
    assert_true(strmap_put(&m, "x", 1));
    assert_true(strmap_put(&m, "", 2));
    assert_true(strmap_put(&m, "x", 3));
    assert_int_equal(strmap_get(&m, "x"), 3);
    assert_int_equal(strmap_get(&m, ""), 2);
    assert_int_equal(strmap_get(&m, "y"), -1);
    assert_int_equal(m.count, 2);
    strmap_free(&m);
    assert_int_equal(strmap_get(&m, "x"), -1);
}

/* Keys are copied: the map outlives the strings it was filled from, through
 * every growth, with keys longer than a key block. */
static void strmap_owns_its_keys(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    char name[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "value_%d", i);
        assert_true(strmap_put(&m, name, i));
    }
    size_t long_len = 200000;
    char *long_key = malloc(long_len + 1);
    assert_non_null(long_key);
    memset(long_key, 'k', long_len);
    long_key[long_len] = '\0';
    assert_true(strmap_put(&m, long_key, 7));
    long_key[long_len - 1] = 'j'; /* the caller's string changes; the map's copy does not */
    assert_int_equal(strmap_get(&m, long_key), -1);
    long_key[long_len - 1] = 'k';
    assert_int_equal(strmap_get(&m, long_key), 7);
    free(long_key);
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "value_%d", i);
        assert_int_equal(strmap_get(&m, name), i);
    }
    assert_int_equal(m.count, 20001);
    assert_true(m.count * 2 <= m.cap);
    strmap_free(&m);
}

/* The hash is a function of the bytes (length included) within a process,
 * and depends on every byte. */
static void strmap_hash_is_stable_and_uses_every_byte(void **state)
{
    (void)state;
    assert_true(strmap_hash("abc", 3) == strmap_hash("abc", 3));
    assert_true(strmap_hash("abc", 3) != strmap_hash("abd", 3));
    assert_true(strmap_hash("abc", 2) != strmap_hash("abc", 3));
    assert_true(strmap_hash("", 0) != strmap_hash("\0", 1));
    const char *long_a = "0123456789abcdef0123456789abcdefX";
    const char *long_b = "0123456789abcdef0123456789abcdefY";
    assert_true(strmap_hash(long_a, 33) != strmap_hash(long_b, 33));
}

/* ---- ptrmap ------------------------------------------------------------- */

static void ptrmap_put_get_remove(void **state)
{
    (void)state;
    enum { N = 30000 };
    static char objects[N];
    ptrmap m = PTRMAP_INIT;
    size_t v;
    assert_false(ptrmap_get(&m, &objects[0], &v));
    ptrmap_remove(&m, &objects[0]); /* absent: nothing happens */
    for (size_t i = 0; i < N; i++)
        assert_true(ptrmap_put(&m, &objects[i], i));
    assert_true(ptrmap_put(&m, &objects[5], 55)); /* replaces */
    assert_int_equal(m.count, N);
    /* removing moves later entries of a probe run back: all must stay found */
    for (size_t i = 0; i < N; i += 3)
        ptrmap_remove(&m, &objects[i]);
    for (size_t i = 0; i < N; i++) {
        bool found = ptrmap_get(&m, &objects[i], &v);
        assert_int_equal(found, i % 3 != 0);
        if (found)
            assert_int_equal(v, i == 5 ? 55 : i);
    }
    assert_int_equal(m.count, N - (N + 2) / 3);
    ptrmap_free(&m);
}

/* ---- lazy stubs ---------------------------------------------------------- */

/* A model file whose W and R are left in the file (lazy) at a 16-byte threshold. */
static rnnstate_model *lazy_model(void)
{
    Onnx__ModelProto *m = mb_new(7, 14);
    mb_input(m, "X", MB_FLOAT, "T,1,3");
    mb_weights(m, MB_FLOAT, "W", "R", 1, 3, 4, 3, 0.1);
    mb_recurrent(m, "GRU", "gru", 4, NULL, "X,W,R", "Y");
    mb_output(m, "Y", MB_FLOAT, "T,1,1,4");
    size_t size;
    unsigned char *bytes = mb_pack(m, &size);
    mb_free(m);
    char path[] = "/tmp/test_maps_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, size), (ssize_t)size);
    close(fd);
    free(bytes);
    rnnstate_limits limits;
    rnnstate_limits_init(&limits);
    limits.lazy_tensor_bytes = 16;
    rnnstate_model *model = NULL;
    rnnstate_error err;
    assert_int_equal(rnnstate_model_load_file(path, &limits, &model, &err), RNNSTATE_OK);
    unlink(path);
    return model;
}

/* A released stub is forgotten before it is freed: a tensor that gets its
 * address (and its name) afterwards is not taken for lazy data. */
static void released_stub_is_forgotten(void **state)
{
    (void)state;
    rnnstate_model *model = lazy_model();
    Onnx__GraphProto *g = model->proto->graph;
    assert_int_equal(model->n_lazy, 2);
    Onnx__TensorProto *stub = g->initializer[0];
    const char *name = stub->name;
    assert_non_null(model_lazy_tensor(model, stub));
    assert_string_equal(name, "W");
    g->initializer[0] = g->initializer[--g->n_initializer];
    model_release_tensor(model, stub);
    Onnx__TensorProto *fresh = malloc(sizeof *fresh);
    assert_non_null(fresh);
    onnx__tensor_proto__init(fresh);
    fresh->name = strdup("W");
    if (fresh != stub)
        print_message("note: the allocator did not reuse the stub's address\n");
    assert_null(model_lazy_tensor(model, fresh));
    assert_non_null(model_lazy_tensor(model, g->initializer[0])); /* R is still lazy */
    onnx__tensor_proto__free_unpacked(fresh, NULL);
    rnnstate_model_free(model);
}

/* A stub whose data was read in is no longer lazy. */
static void materialized_stub_is_not_lazy(void **state)
{
    (void)state;
    rnnstate_model *model = lazy_model();
    Onnx__TensorProto *stub = model->proto->graph->initializer[1];
    assert_non_null(model_lazy_tensor(model, stub));
    assert_true(model_materialize(model, stub));
    assert_null(model_lazy_tensor(model, stub));
    assert_true(stub->has_raw_data || stub->n_float_data > 0);
    rnnstate_model_free(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strmap_stores_replaces_and_misses),
        cmocka_unit_test(strmap_owns_its_keys),
        cmocka_unit_test(strmap_hash_is_stable_and_uses_every_byte),
        cmocka_unit_test(ptrmap_put_get_remove),
        cmocka_unit_test(released_stub_is_forgotten),
        cmocka_unit_test(materialized_stub_is_not_lazy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
