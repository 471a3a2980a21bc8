/* strict_libc: an LD_PRELOAD shim that turns calls libc leaves undefined into
 * an abort, so that the regression cases catch them without a sanitizer
 * (tests/regressions/run.sh). Under ASan the executable's own interceptors
 * come first and UBSan reports these calls itself.
 *
 * qsort(NULL, 0, ...): base is declared nonnull even for zero elements
 * (tests/regressions/empty-dir-qsort).
 * malloc, calloc, realloc of more than STRICT_LIBC_MALLOC_LIMIT_MB (when set):
 * a small hostile input that makes the tool ask for gigabytes is a bug even
 * when the allocation happens to fail cleanly (libFuzzer's -malloc_limit_mb;
 * tests/regressions/tensor-dims-overclaim). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dlsym's object pointer as a function pointer, converted the way ISO C
 * allows (-Wpedantic): copied into a generic function pointer, which the
 * caller casts to the real type. */
typedef void (*any_fn)(void);
static any_fn next_fn(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    any_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

typedef int (*compare_fn)(const void *, const void *);

static void refuse(const char *what)
{
    static const char prefix[] = "strict_libc: undefined call: ";
    (void)!write(STDERR_FILENO, prefix, sizeof prefix - 1);
    (void)!write(STDERR_FILENO, what, strlen(what));
    (void)!write(STDERR_FILENO, "\n", 1);
    abort();
}

void qsort(void *base, size_t n, size_t size, compare_fn compare)
{
    void *volatile seen = base; /* libc declares base nonnull: keep the test */
    if (!seen)
        refuse("qsort with a NULL base");
    void (*real)(void *, size_t, size_t, compare_fn) =
        (void (*)(void *, size_t, size_t, compare_fn))next_fn("qsort");
    real(base, n, size, compare);
}

/* glibc's own entry points: no dlsym (which allocates) needed */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static void check_size(size_t n)
{
    static size_t limit; /* 0: not read yet; SIZE_MAX: no limit */
    if (!limit) {
        const char *mb = getenv("STRICT_LIBC_MALLOC_LIMIT_MB");
        size_t v = mb ? strtoull(mb, NULL, 10) : 0;
        limit = v && v < SIZE_MAX >> 20 ? v << 20 : SIZE_MAX;
    }
    if (n > limit)
        refuse("an allocation over STRICT_LIBC_MALLOC_LIMIT_MB");
}

void *malloc(size_t n)
{
    check_size(n);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    check_size(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    check_size(n);
    return __libc_realloc(p, n);
}
