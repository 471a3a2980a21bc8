/* Which --include and --exclude patterns matched the name of a recurrent
 * node in some model of a run: a pattern that matched none is almost always
 * a typo (the run then did not do what was asked), so the command line warns
 * and exits with its own status. Jobs may finish on several threads: marks
 * are atomic and idempotent. */
#ifndef RNNSTATE_CLI_PATTERNS_H
#define RNNSTATE_CLI_PATTERNS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rnnstate.h"

typedef struct pattern_hits {
    const rnnstate_options *options; /* its include and exclude lists */
    atomic_bool *hit;                /* n_include entries, then n_exclude */
} pattern_hits;

/* False when memory runs out. */
bool pattern_hits_init(pattern_hits *h, const rnnstate_options *options);
void pattern_hits_free(pattern_hits *h);

/* Marks the patterns that match a node of `report` (NULL: a failed job). */
void pattern_hits_mark(pattern_hits *h, const rnnstate_report *report);

/* Prints "PROGRAM: warning: ..." on `out` for every pattern that matched
 * no node (unless `quiet`); returns how many did not. */
size_t pattern_hits_report(const pattern_hits *h, FILE *out, bool quiet);

#endif
