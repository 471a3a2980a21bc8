/* big_alloc: memory for large tables read at random (hash tables, index
 * entries). With 4 KiB pages nearly every random read of a table of tens of
 * megabytes also misses the TLB, and filling it takes a page fault per
 * 4 KiB: a large block is aligned to 2 MiB and offered to the kernel's
 * transparent huge pages, which Debian's default ("madvise") grants only on
 * request. A hint: where the kernel declines, the block is ordinary memory.
 * The block is freed with free() and may be realloc()ed. */
#ifndef RNNSTATE_BIG_ALLOC_H
#define RNNSTATE_BIG_ALLOC_H

#include <stddef.h>

/* `bytes` of uninitialized memory, or NULL when out of memory. */
void *big_alloc(size_t bytes);

#endif
