/* Which file a job's path names (see job_paths.h). */
#define _DEFAULT_SOURCE /* readlink */
#include "job_paths.h"
#include "util/path.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* Symbolic links followed at an input's name before giving up (the kernel
 * stops at 40; a loop this deep is a broken link to the loader too). */
#define MAX_LINK_HOPS 40

/* Jobs come directory by directory: the last directory's key part is kept,
 * so that a batch into one directory costs one stat(). */
typedef struct key_cache {
    char *dir;
    char *prefix;
} key_cache;

static void key_cache_free(key_cache *c)
{
    free(c->dir);
    free(c->prefix);
}

/* The directory part of `path`: "." when it has none, "/" for "/x". */
static char *dir_part(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (dir) {
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    return dir;
}

static const char *name_part(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* `base` followed by the components of `rest` (a path that does not exist
 * yet, so holds no symbolic link), "." dropped and ".." applied as text. */
static char *with_normalized(const char *base, char *rest)
{
    size_t base_len = strlen(base);
    char *s = malloc(base_len + strlen(rest) + 2);
    if (!s)
        return NULL;
    memcpy(s, base, base_len + 1);
    size_t len = base_len;
    for (char *save = NULL, *c = strtok_r(rest, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        char *last = len > base_len ? strrchr(s + base_len, '/') : NULL;
        if (!strcmp(c, "..") && last && strcmp(last + 1, "..") != 0) {
            len = (size_t)(last - s);
            s[len] = '\0';
            continue;
        }
        len += (size_t)sprintf(s + len, "/%s", c);
    }
    return s;
}

/* The key of directory `dir`: the device and inode of its deepest part that
 * exists, then the rest as text; the path itself, marked, when something
 * other than a missing component stops the walk (the write will fail). */
static char *dir_key(const char *dir)
{
    char *walk = strdup(dir), *rest = strdup(dir), *key = NULL;
    if (!walk || !rest)
        goto out;
    char *rest_at = NULL; /* where the part that does not exist begins in `rest` */
    struct stat st;
    for (;;) {
        if (stat(walk, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                goto unresolved;
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR)
            goto unresolved;
        char *slash = strrchr(walk, '/');
        if (!slash) { /* a relative name: below the current directory */
            rest_at = rest;
            if (stat(".", &st) != 0)
                goto unresolved;
            break;
        }
        rest_at = rest + (slash - walk) + 1;
        if (slash == walk) {
            if (stat("/", &st) != 0)
                goto unresolved;
            break;
        }
        *slash = '\0';
    }
    char id[64];
    snprintf(id, sizeof id, "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
    key = with_normalized(id, rest_at ? rest_at : (char *)"");
    goto out;
unresolved:
    key = path_join("?", dir);
out:
    free(walk);
    free(rest);
    return key;
}

/* The key of the directory entry `path` names. */
static char *entry_key(const char *path, key_cache *cache)
{
    char *dir = dir_part(path);
    if (!dir)
        return NULL;
    if (!cache->dir || strcmp(cache->dir, dir) != 0) {
        char *prefix = dir_key(dir);
        if (!prefix) {
            free(dir);
            return NULL;
        }
        key_cache_free(cache);
        cache->dir = dir;
        cache->prefix = prefix;
    } else {
        free(dir);
    }
    return path_join(cache->prefix, name_part(path));
}

/* `path` with the symbolic links at its name followed (a link at the end
 * of a path is what open() reads through); a copy of `path` when it is
 * none. */
static char *follow_links(const char *path)
{
    char *p = strdup(path);
    char target[PATH_MAX];
    struct stat st;
    for (int hop = 0; p && hop < MAX_LINK_HOPS; hop++) {
        ssize_t n;
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode) ||
            (n = readlink(p, target, sizeof target - 1)) <= 0)
            break;
        target[n] = '\0';
        char *dir = target[0] == '/' ? NULL : dir_part(p);
        char *next = target[0] == '/' ? strdup(target) : dir ? path_join(dir, target) : NULL;
        free(dir);
        free(p);
        p = next;
    }
    return p;
}

/* One path of one job, by key. */
typedef struct path_use {
    char *key;
    size_t job;
    bool writes;
} path_use;

typedef struct path_uses {
    path_use *items;
    size_t n, cap;
    bool oom;
} path_uses;

static void add_use(path_uses *u, char *key, size_t job, bool writes)
{
    if (!key) {
        u->oom = true;
        return;
    }
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 64;
        path_use *grown = realloc(u->items, cap * sizeof *grown);
        if (!grown) {
            free(key);
            u->oom = true;
            return;
        }
        u->items = grown;
        u->cap = cap;
    }
    u->items[u->n++] = (path_use){ key, job, writes };
}

static void uses_free(path_uses *u)
{
    for (size_t i = 0; i < u->n; i++)
        free(u->items[i].key);
    free(u->items);
}

/* By key, then in job order (reads before writes within a job). */
static int compare_uses(const void *a, const void *b)
{
    const path_use *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    return (int)x->writes - (int)y->writes;
}

static bool is_file_path(const char *path)
{
    return path && strcmp(path, "-") != 0;
}

/* The outputs' keys, and with `inputs` the inputs' too (links followed),
 * and the files that symbolic links at the outputs lead to, sorted. */
static bool collect_uses(const job *jobs, size_t n_jobs, bool inputs, path_uses *u)
{
    key_cache outputs = { 0 }, read = { 0 };
    for (size_t i = 0; i < n_jobs && !u->oom; i++) {
        if (is_file_path(jobs[i].output)) {
            add_use(u, entry_key(jobs[i].output, &outputs), i, true);
            char *through = inputs ? follow_links(jobs[i].output) : NULL;
            if (through && strcmp(through, jobs[i].output) != 0)
                add_use(u, entry_key(through, &read), i, false);
            free(through);
        }
        if (inputs && is_file_path(jobs[i].input)) {
            char *followed = follow_links(jobs[i].input);
            add_use(u, followed ? entry_key(followed, &read) : NULL, i, false);
            free(followed);
        }
    }
    key_cache_free(&outputs);
    key_cache_free(&read);
    if (!u->oom && u->n > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(u->items, u->n, sizeof *u->items, compare_uses);
    return !u->oom;
}

bool find_shared_output(const job *jobs, size_t n_jobs, bool *found, size_t *first,
                        size_t *second)
{
    path_uses u = { 0 };
    *found = false;
    bool ok = collect_uses(jobs, n_jobs, false, &u);
    for (size_t i = 0; ok && i + 1 < u.n; i++) {
        const path_use *a = &u.items[i], *b = &u.items[i + 1];
        if (strcmp(a->key, b->key) != 0 || (*found && a->job >= *first))
            continue;
        *found = true;
        *first = a->job;
        *second = b->job;
    }
    uses_free(&u);
    return ok;
}

bool find_job_order(const job *jobs, size_t n_jobs, size_t *wait_for)
{
    path_uses u = { 0 };
    for (size_t i = 0; i < n_jobs; i++)
        wait_for[i] = 0;
    bool ok = collect_uses(jobs, n_jobs, true, &u);
    size_t i = 0;
    while (ok && i < u.n) {
        /* one file: each job waits for the last earlier job that writes it
         * and, when it writes it, for the last that reads it ("the first N
         * jobs done" covers the readers before that one too) */
        size_t last_writer = 0, last_reader = 0, k = i;
        while (k < u.n && !strcmp(u.items[k].key, u.items[i].key)) {
            size_t job = u.items[k].job;
            bool reads = false, writes = false;
            for (; k < u.n && u.items[k].job == job && !strcmp(u.items[k].key, u.items[i].key); k++)
                *(u.items[k].writes ? &writes : &reads) = true;
            size_t after = last_writer;
            if (writes && last_reader > after)
                after = last_reader;
            if (after > wait_for[job])
                wait_for[job] = after;
            if (writes)
                last_writer = job + 1;
            if (reads)
                last_reader = job + 1;
        }
        i = k;
    }
    uses_free(&u);
    return ok;
}
