/* strbuf: appending, formatting, and the two escapes that every name from a
 * model goes through before it is printed (docs/reliability.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/strbuf.h"

static void test_append_and_format(void **state)
{
    (void)state;
    strbuf sb = STRBUF_INIT;
    assert_string_equal(sb.buf, "");
    sb_adds(&sb, "gru");
    sb_add(&sb, "_0xyz", 2);
    sb_addf(&sb, "_%s_%d", "initial_h", 7);
    assert_string_equal(sb.buf, "gru_0_initial_h_7");
    assert_int_equal(sb.len, strlen("gru_0_initial_h_7"));
    sb_reset(&sb);
    assert_string_equal(sb.buf, "");
    sb_adds(&sb, "kept");
    char *owned = sb_detach(&sb);
    assert_string_equal(owned, "kept");
    assert_string_equal(sb.buf, "");
    free(owned);
    assert_false(sb.oom);
    sb_release(&sb);
}

static void test_detach_empty_is_a_fresh_string(void **state)
{
    (void)state;
    strbuf sb = STRBUF_INIT;
    char *owned = sb_detach(&sb);
    assert_non_null(owned);
    assert_string_equal(owned, "");
    free(owned);
}

/* One name, its text escape, and its JSON string literal. */
typedef struct escape_case {
    const char *why;
    const char *raw;
    const char *text;
    const char *json;
} escape_case;

static const escape_case escape_cases[] = {
    { "plain ASCII", "GRU_0_initial_h", "GRU_0_initial_h", "\"GRU_0_initial_h\"" },
    { "empty", "", "", "\"\"" },
    { "valid UTF-8 passes", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
    { "CSI colour", "gru\x1b[31mRED", "gru\\x1b[31mRED", "\"gru\\u001b[31mRED\"" },
    { "OSC title and BEL", "\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07", "\"\\u001b]0;pwned\\u0007\"" },
    { "newline, return, tab", "a\nb\rc\td", "a\\nb\\rc\\td", "\"a\\nb\\rc\\td\"" },
    { "backslash and quote", "a\\b\"c", "a\\\\b\"c", "\"a\\\\b\\\"c\"" },
    { "DEL", "a\x7f", "a\\x7f", "\"a\\u007f\"" },
    { "C1 CSI (U+009B)", "a\xc2\x9b" "2J", "a\\u009b2J", "\"a\\u009b2J\"" },
    { "right-to-left override", "a\xe2\x80\xae" "b", "a\\u202eb", "\"a\\u202eb\"" },
    { "line separator", "a\xe2\x80\xa8", "a\\u2028", "\"a\\u2028\"" },
    { "stray bytes", "gru\xff\xfe", "gru\\xff\\xfe", "\"gru\\\\xff\\\\xfe\"" },
    { "lone continuation byte", "a\x80" "b", "a\\x80b", "\"a\\\\x80b\"" },
    { "overlong '/'", "w\xc0\xaf", "w\\xc0\\xaf", "\"w\\\\xc0\\\\xaf\"" },
    { "overlong three bytes", "\xe0\x80\xaf", "\\xe0\\x80\\xaf", "\"\\\\xe0\\\\x80\\\\xaf\"" },
    { "UTF-16 surrogate", "r\xed\xa0\x80", "r\\xed\\xa0\\x80", "\"r\\\\xed\\\\xa0\\\\x80\"" },
    { "past U+10FFFF", "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80",
      "\"\\\\xf4\\\\x90\\\\x80\\\\x80\"" },
    { "sequence cut by the end", "a\xe2\x82", "a\\xe2\\x82", "\"a\\\\xe2\\\\x82\"" },
    { "sequence cut by ASCII", "\xe2" "ab", "\\xe2" "ab", "\"\\\\xe2" "ab\"" },
    { "U+10FFFF is kept", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"" },
};

static void test_escapes(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof escape_cases / sizeof escape_cases[0]; i++) {
        const escape_case *c = &escape_cases[i];
        strbuf text = STRBUF_INIT, json = STRBUF_INIT;
        sb_add_escaped(&text, c->raw);
        sb_add_json_string(&json, c->raw);
        if (strcmp(text.buf, c->text) != 0 || strcmp(json.buf, c->json) != 0)
            fail_msg("%s: text '%s' (expected '%s'), JSON '%s' (expected '%s')", c->why, text.buf,
                     c->text, json.buf, c->json);
        sb_release(&text);
        sb_release(&json);
    }
}

static void test_json_null(void **state)
{
    (void)state;
    strbuf sb = STRBUF_INIT;
    sb_add_json_string(&sb, NULL);
    assert_string_equal(sb.buf, "null");
    sb_release(&sb);
}

/* A fixed buffer is cut before a character, never inside a UTF-8 one. */
static void test_escape_into_truncates_between_characters(void **state)
{
    (void)state;
    char out[6];
    escape_into(out, sizeof out, "ab\xe2\x82\xac" "cd"); /* "ab€cd" */
    assert_string_equal(out, "ab\xe2\x82\xac");
    escape_into(out, sizeof out, "abc\xe2\x82\xac"); /* the euro does not fit */
    assert_string_equal(out, "abc");
    escape_into(out, sizeof out, "\x1b[0m");
    assert_string_equal(out, "\\x1b[");
    escape_into(out, 1, "anything");
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_format),
        cmocka_unit_test(test_detach_empty_is_a_fresh_string),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_json_null),
        cmocka_unit_test(test_escape_into_truncates_between_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
