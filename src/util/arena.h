/* arena: a bump allocator from large chunks, for the pieces of a parsed model.
 *
 * protobuf-c unpacks every string, repeated array and sub-message with an
 * allocation of its own: millions of malloc() calls on a large graph, each
 * with its header and rounding. The loader unpacks into an arena instead
 * (model/model_read.c), whose chunks are freed with the model.
 *
 * The ownership rule: a piece of a model is either inside an arena chunk or
 * malloc'd, and whoever frees or grows one must not hand an arena piece to
 * free() or realloc(). So every free and realloc of model pieces goes
 * through arena_piece_free(), arena_piece_realloc() or append_ptr()
 * (model/onnx_build.h), and messages are freed with arena_message_free() (protobuf-c's
 * free_unpacked() given arena_aware_allocator): a piece inside any live arena is left where it is
 * (its bytes are released with the arena), any other is free()d. A live
 * chunk's address range is in one process-wide table, so these helpers need
 * no model at hand (and `-j` threads share the table under a lock). */
#ifndef RNNSTATE_ARENA_H
#define RNNSTATE_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "onnx.pb-c.h"

typedef struct arena arena;

/* A new, empty arena; NULL when out of memory. */
arena *arena_new(void);
/* `size` bytes aligned for any object of that size (to the largest power of
 * two dividing it, at most max_align_t's), or NULL when a chunk cannot be had
 * (malloc() failed: arena_failed() then says so). */
void *arena_alloc(arena *a, size_t size);
bool arena_failed(const arena *a);
/* Frees every chunk (and so every piece) of the arena. NULL is allowed. */
void arena_free(arena *a);

/* Whether `p` lies inside a chunk of a live arena. */
bool arena_owns(const void *p);
/* free(p), unless p is an arena piece (then nothing: it goes with its arena). */
void arena_piece_free(void *p);
/* realloc(p, new_size) for a piece whose first `old_size` bytes matter: an
 * arena piece is copied into a new malloc'd block and left in place. NULL
 * (p unchanged) when out of memory. */
void *arena_piece_realloc(void *p, size_t old_size, size_t new_size);

/* Frees a message of a model (and everything in it) by the rule above:
 * free_unpacked() with arena_aware_allocator. */
void arena_message_free(ProtobufCMessage *m);

/* malloc() and arena_piece_free(): the allocator to free any model's pieces with. */
extern ProtobufCAllocator arena_aware_allocator;

/* The allocator that unpacks into `a` and frees with arena_piece_free(). */
ProtobufCAllocator arena_allocator(arena *a);

#endif
