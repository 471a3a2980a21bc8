/* error: filling an rnnstate_error. The lowest module of the library: the
 * scanners, the loader, the writer and the passes all report through it, and
 * it depends on nothing but the public header. */
#ifndef RNNSTATE_ERROR_H
#define RNNSTATE_ERROR_H

#include <stdbool.h>

#include "rnnstate.h"

/* Fills *err (when not NULL) with status and a printf-style message, and
 * returns status, so error paths can `return set_error(...)`. */
rnnstate_status set_error(rnnstate_error *err, rnnstate_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Allocation failures that cannot be returned where they happen. An
 * analysis answers with yes, no or unknown (is this value uniform, which
 * output does it reach, what is this dimension); when it fails to allocate
 * midway it cannot say "out of memory" through that answer without changing
 * every signature, so it calls oom_note() and answers as best it can. The
 * pipeline (rewrite.c) clears the note before the passes and fails with
 * RNNSTATE_ERR_NOMEM after any pass during which one was noted: running out
 * of memory never changes a result. Per thread, as a rewrite runs in one. */
void oom_note(void);
/* Whether oom_note() was called since the last oom_clear() in this thread. */
bool oom_noted(void);
void oom_clear(void);

#endif
