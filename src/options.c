/* Options structs that can grow, and the defaults of rnnstate_save_options. */
#include <string.h>

#include "error.h"
#include "options.h"

rnnstate_status options_read(void *options, size_t size, const void *given, const char *type,
                             rnnstate_error *err)
{
    if (!given)
        return RNNSTATE_OK;
    size_t given_size;
    memcpy(&given_size, given, sizeof given_size);
    if (given_size < sizeof given_size)
        return set_error(err, RNNSTATE_ERR_ARGUMENT,
                         "%s: struct_size is %zu: fill the struct with %s_init() first", type,
                         given_size, type);
    if (given_size > size)
        return set_error(err, RNNSTATE_ERR_ARGUMENT,
                         "%s: struct_size is %zu, but this library (%s) knows %zu bytes: the "
                         "program was compiled against a newer rnnstate.h",
                         type, given_size, RNNSTATE_VERSION_STRING, size);
    /* struct_size itself stays the library's: every field is now filled */
    memcpy((char *)options + sizeof given_size, (const char *)given + sizeof given_size,
           given_size - sizeof given_size);
    return RNNSTATE_OK;
}

void rnnstate_save_options_init(rnnstate_save_options *options)
{
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
    options->sync = false; /* like cp: see rnnstate.h */
}

const char *rnnstate_version(void)
{
    return RNNSTATE_VERSION_STRING;
}

int rnnstate_version_number(void)
{
    return RNNSTATE_VERSION_NUMBER;
}
