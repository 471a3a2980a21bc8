/* error: filling an rnnstate_error. The lowest module of the library: the
 * scanners, the loader, the writer and the passes all report through it, and
 * it depends on nothing but the public header. */
#ifndef RNNSTATE_ERROR_H
#define RNNSTATE_ERROR_H

#include "rnnstate.h"

/* Fills *err (when not NULL) with status and a printf-style message, and
 * returns status, so error paths can `return set_error(...)`. */
rnnstate_status set_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
