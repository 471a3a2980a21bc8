#include "util/arena.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chunks start at 256 KiB and double up to 64 MiB: a few dozen at most, and
 * a small model does not reserve much. A piece of a quarter of a chunk or
 * more gets a chunk of its own, so the space left in the current chunk is
 * not thrown away for it. */
#define FIRST_CHUNK ((size_t)256 << 10)
#define LARGEST_CHUNK ((size_t)64 << 20)
#define ALIGN alignof(max_align_t)

typedef struct range {
    uintptr_t start, end;
} range;

/* Ranges sorted by start, with the number in use. */
typedef struct range_set {
    range *items;
    size_t n, cap;
} range_set;

struct arena {
    unsigned char *at, *end; /* the free space of the current chunk */
    size_t next_size;
    range_set chunks;
    size_t last_hit; /* the chunk arena_contains() found last */
    bool failed;
};

/* Every live arena's chunks (arena_owns()). */
static range_set live = { 0 };
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

/* Index of the range holding p, or SIZE_MAX. */
static size_t range_find(const range_set *s, uintptr_t p)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p < s->items[mid].start)
            hi = mid;
        else if (p >= s->items[mid].end)
            lo = mid + 1;
        else
            return mid;
    }
    return SIZE_MAX;
}

static bool range_add(range_set *s, range r)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        range *grown = realloc(s->items, cap * sizeof *grown);
        if (!grown)
            return false;
        s->items = grown;
        s->cap = cap;
    }
    size_t at = s->n;
    while (at > 0 && s->items[at - 1].start > r.start) {
        s->items[at] = s->items[at - 1];
        at--;
    }
    s->items[at] = r;
    s->n++;
    return true;
}

static void range_remove(range_set *s, uintptr_t start)
{
    size_t at = range_find(s, start);
    if (at == SIZE_MAX)
        return;
    memmove(s->items + at, s->items + at + 1, (s->n - at - 1) * sizeof *s->items);
    s->n--;
}

arena *arena_new(void)
{
    arena *a = calloc(1, sizeof *a);
    if (a)
        a->next_size = FIRST_CHUNK;
    return a;
}

/* A new chunk of at least `size` bytes, recorded in the arena and in `live`. */
static unsigned char *add_chunk(arena *a, size_t size)
{
    unsigned char *chunk = malloc(size);
    if (!chunk)
        return NULL;
    range r = { (uintptr_t)chunk, (uintptr_t)chunk + size };
    bool kept = range_add(&a->chunks, r);
    if (kept) {
        pthread_mutex_lock(&live_lock);
        kept = range_add(&live, r);
        pthread_mutex_unlock(&live_lock);
        if (!kept)
            range_remove(&a->chunks, r.start);
    }
    if (!kept) {
        free(chunk);
        return NULL;
    }
    return chunk;
}

/* The alignment a piece of `size` bytes needs: the largest power of two
 * dividing its size, at most max_align_t's. A type's size is a multiple of
 * its alignment, and so is an array's, so this is enough for any object of
 * that size: protobuf-c's strings (length + 1 bytes) get 1, its structs and
 * pointer arrays 8, where rounding every piece up to 16 cost a fifth of a
 * parsed model's arena (names are mostly a few bytes long). */
static size_t piece_align(size_t size)
{
    size_t low = size & (~size + 1); /* the lowest set bit; size is not 0 */
    return low < ALIGN ? low : ALIGN;
}

/* arena_alloc() when the current chunk has no room: a new chunk. Kept out
 * of line, so that the common path saves no registers. */
__attribute__((noinline)) static void *alloc_in_new_chunk(arena *a, size_t size)
{
    if (size >= a->next_size / 4) { /* a chunk of its own; the current one stays */
        void *p = add_chunk(a, size);
        a->failed |= !p;
        return p;
    }
    unsigned char *chunk = add_chunk(a, a->next_size);
    if (!chunk) {
        a->failed = true;
        return NULL;
    }
    a->at = chunk + size; /* malloc()'s blocks are aligned for any type */
    a->end = chunk + a->next_size;
    if (a->next_size < LARGEST_CHUNK)
        a->next_size *= 2;
    return chunk;
}

void *arena_alloc(arena *a, size_t size)
{
    if (!size)
        size = 1;
    uintptr_t mask = piece_align(size) - 1;
    /* before the first chunk, at and end are 0: no room */
    uintptr_t at = ((uintptr_t)a->at + mask) & ~mask;
    if (at <= (uintptr_t)a->end && size <= (uintptr_t)a->end - at) {
        a->at = (unsigned char *)(at + size);
        return (void *)at;
    }
    return alloc_in_new_chunk(a, size);
}

bool arena_failed(const arena *a)
{
    return a->failed;
}

void arena_free(arena *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < a->chunks.n; i++)
        range_remove(&live, a->chunks.items[i].start);
    if (!live.n) { /* the last arena gone: no table left behind */
        free(live.items);
        live = (range_set){ 0 };
    }
    pthread_mutex_unlock(&live_lock);
    for (size_t i = 0; i < a->chunks.n; i++)
        free((void *)a->chunks.items[i].start);
    free(a->chunks.items);
    free(a);
}

bool arena_owns(const void *p)
{
    pthread_mutex_lock(&live_lock);
    bool owned = range_find(&live, (uintptr_t)p) != SIZE_MAX;
    pthread_mutex_unlock(&live_lock);
    return owned;
}

void arena_piece_free(void *p)
{
    if (p && !arena_owns(p))
        free(p);
}

void *arena_piece_realloc(void *p, size_t old_size, size_t new_size)
{
    if (!p || !arena_owns(p))
        return realloc(p, new_size);
    void *copy = malloc(new_size ? new_size : 1);
    if (copy)
        memcpy(copy, p, old_size < new_size ? old_size : new_size);
    return copy;
}

static void *plain_alloc(void *unused, size_t size)
{
    (void)unused;
    return malloc(size);
}

static void piece_free(void *unused, void *p)
{
    (void)unused;
    arena_piece_free(p);
}

ProtobufCAllocator arena_aware_allocator = { plain_alloc, piece_free, NULL };

void arena_message_free(ProtobufCMessage *m)
{
    protobuf_c_message_free_unpacked(m, &arena_aware_allocator);
}

static void *alloc_in(void *a, size_t size)
{
    return arena_alloc(a, size);
}

/* Whether p is in one of a's chunks, looked for first where the last one
 * was found: free_unpacked() walks a model in the order it was unpacked. */
static bool arena_contains(arena *a, uintptr_t p)
{
    const range *last = a->last_hit < a->chunks.n ? &a->chunks.items[a->last_hit] : NULL;
    if (last && p >= last->start && p < last->end)
        return true;
    size_t at = range_find(&a->chunks, p);
    if (at == SIZE_MAX)
        return false;
    a->last_hit = at;
    return true;
}

/* The model's own pieces are found without the lock; others as anywhere. */
static void free_in(void *a, void *p)
{
    if (p && !arena_contains(a, (uintptr_t)p))
        arena_piece_free(p);
}

ProtobufCAllocator arena_allocator(arena *a)
{
    return (ProtobufCAllocator){ alloc_in, free_in, a };
}
