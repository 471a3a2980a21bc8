/* path.h: joining file paths, for the library and the command line alike
 * (header only: the command line does not link the library's internals). */
#ifndef RNNSTATE_UTIL_PATH_H
#define RNNSTATE_UTIL_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `dir` + "/" + `name` (no second slash when `dir` ends with one), malloc'd;
 * NULL when memory runs out. */
static inline char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir), size = n + strlen(name) + 2;
    char *p = malloc(size);
    if (p)
        snprintf(p, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
    return p;
}

#endif
