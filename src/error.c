#include "error.h"

#include <stdarg.h>
#include <stdio.h>

rnnstate_status set_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}
