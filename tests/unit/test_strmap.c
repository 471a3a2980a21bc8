/* strmap: the string -> int map every index and registry is built on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/strmap.h"

static void test_empty_map_finds_nothing(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    assert_int_equal(strmap_get(&m, "X"), -1);
    assert_int_equal(strmap_get(&m, ""), -1);
    strmap_free(&m);
    strmap_free(&m); /* freeing twice is harmless: the map is reset */
}

static void test_put_get_replace(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    assert_true(strmap_put(&m, "GRU_0_initial_h", 3));
    assert_true(strmap_put(&m, "", 0)); /* an empty name is a key like any other */
    assert_int_equal(strmap_get(&m, "GRU_0_initial_h"), 3);
    assert_int_equal(strmap_get(&m, ""), 0);
    assert_int_equal(strmap_get(&m, "GRU_0_initial"), -1); /* a prefix is another key */
    assert_int_equal(strmap_get(&m, "GRU_0_initial_h_"), -1);
    assert_true(strmap_put(&m, "GRU_0_initial_h", 7));
    assert_int_equal(strmap_get(&m, "GRU_0_initial_h"), 7);
    assert_int_equal(m.count, 2);
    strmap_free(&m);
}

/* The map copies its keys: the strings it was filled from may go. */
static void test_keys_are_copied(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    char *name = strdup("lstm_Y_h");
    assert_non_null(name);
    assert_true(strmap_put(&m, name, 1));
    name[0] = 'X';
    assert_int_equal(strmap_get(&m, "lstm_Y_h"), 1);
    assert_int_equal(strmap_get(&m, name), -1);
    free(name);
    assert_int_equal(strmap_get(&m, "lstm_Y_h"), 1);
    strmap_free(&m);
}

/* Growing keeps every entry: many keys, then every one found again, with
 * lookups of absent keys in between. */
static void test_grows_and_keeps_every_key(void **state)
{
    (void)state;
    enum { N = 20000 };
    strmap m = STRMAP_INIT;
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "value_%d", i);
        assert_true(strmap_put(&m, key, i));
    }
    assert_int_equal(m.count, N);
    assert_true(m.cap >= N && (m.cap & (m.cap - 1)) == 0);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "value_%d", i);
        if (strmap_get(&m, key) != i)
            fail_msg("%s: %d", key, strmap_get(&m, key));
        snprintf(key, sizeof key, "absent_%d", i);
        if (strmap_get(&m, key) != -1)
            fail_msg("%s found", key);
    }
    strmap_free(&m);
    assert_int_equal(m.count, 0);
}

/* Names that differ only in bytes a naive hash might drop. */
static void test_similar_and_binary_keys(void **state)
{
    (void)state;
    static const char *const keys[] = { "a", "b", "ab", "ba", "a\x01", "a\xff", "\xc3\xa9",
                                        "\x1b[31m", "a b", "A" };
    strmap m = STRMAP_INIT;
    size_t n = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < n; i++)
        assert_true(strmap_put(&m, keys[i], (int)i));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(strmap_get(&m, keys[i]), (int)i);
    assert_int_equal(m.count, n);
    strmap_free(&m);
}

/* A key longer than a key block, and the caller's copy changed after. */
static void test_long_key_is_copied_whole(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    size_t long_len = 200000;
    char *long_key = malloc(long_len + 1);
    assert_non_null(long_key);
    memset(long_key, 'k', long_len);
    long_key[long_len] = '\0';
    assert_true(strmap_put(&m, long_key, 7));
    long_key[long_len - 1] = 'j';
    assert_int_equal(strmap_get(&m, long_key), -1);
    long_key[long_len - 1] = 'k';
    assert_int_equal(strmap_get(&m, long_key), 7);
    free(long_key);
    strmap_free(&m);
}

/* strmap_intern_hashed: the stored value when there is one, else the new one. */
static void test_intern_gets_or_inserts(void **state)
{
    (void)state;
    strmap m = STRMAP_INIT;
    uint32_t h = strmap_key_hash("h", 1);
    assert_int_equal(strmap_intern_hashed(&m, "h", 1, h, 4), 4);
    assert_int_equal(strmap_intern_hashed(&m, "h", 1, h, 9), 4);
    assert_int_equal(strmap_get(&m, "h"), 4);
    assert_int_equal(m.count, 1);
    strmap_free(&m);
}

/* The hash (keyed by the process's random seed and secrets) is a function of the bytes
 * and their number, and depends on every byte. */
static void test_hash_is_stable_and_uses_every_byte(void **state)
{
    (void)state;
    assert_true(strmap_hash("abc", 3) == strmap_hash("abc", 3));
    assert_true(strmap_hash("abc", 3) != strmap_hash("abd", 3));
    assert_true(strmap_hash("abc", 2) != strmap_hash("abc", 3));
    assert_true(strmap_hash("", 0) != strmap_hash("\0", 1));
    const char *long_a = "0123456789abcdef0123456789abcdefX";
    const char *long_b = "0123456789abcdef0123456789abcdefY";
    assert_true(strmap_hash(long_a, 33) != strmap_hash(long_b, 33));
    /* every byte of every length up to 48 (the short inputs are read with
     * overlapping loads, the long ones 16 bytes at a time) */
    char name[48];
    for (size_t len = 1; len <= sizeof name; len++)
        for (size_t at = 0; at < len; at++) {
            memset(name, 'n', sizeof name);
            uint64_t before = strmap_hash(name, len);
            name[at] = 'm';
            assert_true(strmap_hash(name, len) != before);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_map_finds_nothing),
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_keys_are_copied),
        cmocka_unit_test(test_grows_and_keeps_every_key),
        cmocka_unit_test(test_similar_and_binary_keys),
        cmocka_unit_test(test_long_key_is_copied_whole),
        cmocka_unit_test(test_intern_gets_or_inserts),
        cmocka_unit_test(test_hash_is_stable_and_uses_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
