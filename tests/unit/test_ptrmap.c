/* ptrmap: the address -> index map behind O(1) scope and lazy-stub lookups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/ptrmap.h"

static void test_put_get_remove(void **state)
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
