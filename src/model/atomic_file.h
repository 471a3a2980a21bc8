/* atomic_file: the naming helpers of rnnstate_model_save_file() that the
 * files saved beside a model (external_files.c) share, so that their
 * temporary files are named, and cleaned up after killed runs, alike. */
#ifndef RNNSTATE_MODEL_ATOMIC_FILE_H
#define RNNSTATE_MODEL_ATOMIC_FILE_H

/* The directory part of path (dirname), malloc'ed; NULL when out of memory. */
char *directory_of(const char *path);
/* A fresh temporary name in dir (the target's directory, so that rename()
 * and link() stay within one file system), which
 * rnnstate_remove_stale_temp_files() recognises; NULL when out of memory. */
char *temp_name_in(const char *dir);

#endif
