/* The options structs of the public API can grow (see "Options structs" in
 * rnnstate.h): a caller's struct is read up to its own struct_size. */
#ifndef RNNSTATE_OPTIONS_H
#define RNNSTATE_OPTIONS_H

#include <stddef.h>

#include "rnnstate.h"

/* Reads the caller's options struct `given` (NULL: keep the defaults) over
 * `options`, which holds the defaults and is `size` bytes long with a
 * size_t struct_size first. Fields beyond the caller's struct_size keep their
 * defaults. Returns RNNSTATE_ERR_ARGUMENT, naming `type`, when the caller's
 * struct_size is 0 or larger than `size`. */
rnnstate_status options_read(void *options, size_t size, const void *given, const char *type,
                             rnnstate_error *err);

#endif
