/* allocator.h - the static binary's allocator (mimalloc, linked in place of
 * musl's: docs/build.md) and how it gives memory back. */
#ifndef BOOTCCM_ALLOCATOR_H
#define BOOTCCM_ALLOCATOR_H

/* allocator_init sets mimalloc's options for a long-running daemon of many
 * threads, before the first thread starts. A no-op in the glibc builds (the
 * sanitizers keep their own allocators). An option the environment sets
 * (MIMALLOC_DECOMMIT_DELAY=25) is left as it says. */
void allocator_init(void);

#endif
