/* One case of a test program (docs/layout.md, "Running tests"):
 *   CMOCKA_TEST_FILTER='*leak*' build/tests/unit/test_rewrite
 *   CMOCKA_TEST_FILTER='*leak*' ctest --test-dir build -R '^unit\.rewrite$' -V
 * cmocka 1.1 (Debian 12) reads no filter from the environment, only from
 * cmocka_set_test_filter(); this constructor, linked into every unit test
 * (tests/unit/CMakeLists.txt), passes CMOCKA_TEST_FILTER and
 * CMOCKA_SKIP_FILTER to it before main() runs. Patterns match the case
 * names cmocka prints, with the wildcards * and ?. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

void rnnstate_test_filter_from_env(void) __attribute__((constructor));

void rnnstate_test_filter_from_env(void)
{
    const char *only = getenv("CMOCKA_TEST_FILTER");
    const char *skip = getenv("CMOCKA_SKIP_FILTER");
    if (only && *only)
        cmocka_set_test_filter(only);
    if (skip && *skip)
        cmocka_set_skip_filter(skip);
}
