#include "error.h"

#include <stdarg.h>
#include <stdio.h>

#include "util/strbuf.h"

rnnstate_status set_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
{
    if (err) {
        /* messages quote names and paths from the input: escaped for a terminal */
        char raw[sizeof err->message];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        escape_into(err->message, sizeof err->message, raw);
        err->status = status;
    }
    return status;
}

static _Thread_local bool oom_flag;

void oom_note(void)
{
    oom_flag = true;
}

bool oom_noted(void)
{
    return oom_flag;
}

void oom_clear(void)
{
    oom_flag = false;
}
