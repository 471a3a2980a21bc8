/* fuzz_replay FILE|DIR...: runs the fuzz target over files (every regular
 * file of a DIR), without libFuzzer: any compiler, any sanitizer, valgrind.
 * Used by ctest (fuzz.replay) on the seed corpus and the regression inputs,
 * and to debug a crash found by the fuzzer in gdb. Prints each file before
 * running it, so that the last name printed is the culprit. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    printf("replay %s (%zu bytes)\n", path, len);
    fflush(stdout);
    /* an exact-size copy, so that ASan catches a read past the end */
    unsigned char *exact = malloc(len ? len : 1);
    if (exact) {
        memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
    }
    free(exact);
    free(buf);
    return 0;
}

static int compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int bad = 0;
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            bad = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= replay_file(argv[i]);
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            bad = 1;
            continue;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char **grown = realloc(names, (n + 1) * sizeof *names);
            if (!grown)
                break;
            names = grown;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[n] = malloc(len);
            if (!names[n])
                break;
            snprintf(names[n++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, compare);
        for (size_t k = 0; k < n; k++) {
            if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
                bad |= replay_file(names[k]);
                count++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("fuzz_replay: %zu inputs replayed\n", count);
    return bad;
}
