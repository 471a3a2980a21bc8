/* Options structs that can grow (each *_init() is beside the functions that
 * read its struct), and the run-time version. */
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

const char *rnnstate_version(void)
{
    return RNNSTATE_VERSION_STRING;
}

int rnnstate_version_number(void)
{
    return RNNSTATE_VERSION_NUMBER;
}
