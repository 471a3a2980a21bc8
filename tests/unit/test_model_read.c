/* model_read: a lazy initializer's stub is found in O(1), and forgotten
 * before it is freed (released) or once its data is read in (materialized). */
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
        cmocka_unit_test(released_stub_is_forgotten),
        cmocka_unit_test(materialized_stub_is_not_lazy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
