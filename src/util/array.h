/* array_grow: room for one more element in a counted array.
 *
 * The arrays here, including those protobuf-c unpacks, carry a count but no
 * capacity. Growing them to the next power of two keeps appends amortized
 * O(1) without a capacity field: once an array's allocation is a power of
 * two, realloc() to the same size returns the same block without copying,
 * and only every doubling copies. */
#ifndef RNNSTATE_ARRAY_H
#define RNNSTATE_ARRAY_H

#include <stdint.h>
#include <malloc.h>
#include <stdlib.h>

/* Returns `array` reallocated to hold at least count + 1 elements of `size`
 * bytes, or NULL (the array untouched) when out of memory or too large.
 * When the block already has room (malloc_usable_size), realloc() is not
 * called at all: allocators that move the block on every realloc()
 * (AddressSanitizer's) would otherwise make appends quadratic. */
static inline void *array_grow(void *array, size_t count, size_t size)
{
    size_t capacity = 1;
    while (capacity < count + 1) {
        if (capacity > SIZE_MAX / 2)
            return NULL;
        capacity *= 2;
    }
    if (size && capacity > SIZE_MAX / size)
        return NULL;
    if (array && size && malloc_usable_size(array) / size >= count + 1)
        return array;
    return realloc(array, capacity * size);
}

/* The same for arrays this program allocates and grows only with
 * owned_array_grow(): their allocation is always the next power of two of
 * their count, so realloc() is called only when the count is a power of two,
 * and appends stay linear even where every realloc() moves the block
 * (sanitizers, musl). Not for arrays protobuf-c allocated. */
static inline void *owned_array_grow(void *array, size_t count, size_t size)
{
    if (count & (count - 1))
        return array; /* not a power of two: there is room */
    if (count > SIZE_MAX / 2 / (size ? size : 1))
        return NULL;
    return realloc(array, (count ? count * 2 : 1) * size);
}

#endif
