/* external_files: a model's external data files copied or linked beside its
 * output (rnnstate_save_options.external_data = COPY or LINK), so that the
 * output's directory holds everything the model needs with its locations
 * unchanged. Each file is made under a temporary name and named once
 * complete, never replacing anything; the save removes what it made when it
 * fails afterwards. */
#ifndef RNNSTATE_MODEL_EXTERNAL_FILES_H
#define RNNSTATE_MODEL_EXTERNAL_FILES_H

#include "model.h"

/* The files and directories one save made (absolute or as given), removed by
 * unplace_external_files() when the save fails after them. */
typedef struct placed_files {
    char **paths; /* files, then directories, in the order made */
    bool *is_dir;
    size_t n;
} placed_files;

/* Copies or links (mode) every external data file of the model from its
 * directory to the same relative location beside `path`, when `path` lies in
 * another directory. A file already there is kept when it is the same file
 * or holds the same bytes. Returns RNNSTATE_OK; RNNSTATE_ERR_INVALID when
 * the model's directory is unknown (loaded from memory) or a location leaves
 * it; RNNSTATE_ERR_IO when a file cannot be read or made, or another file is
 * in its place; RNNSTATE_ERR_NOMEM. *placed lists what was made, whatever
 * the result (release it with release_placed_files()). */
rnnstate_status place_external_files(const rnnstate_model *m, const char *path,
                                     const rnnstate_save_options *o, placed_files *placed,
                                     rnnstate_error *err);
/* Removes what place_external_files() made (the save failed). */
void unplace_external_files(placed_files *placed);
void release_placed_files(placed_files *placed);

#endif
