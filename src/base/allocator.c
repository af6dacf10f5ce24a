/* allocator.c - mimalloc's options for the static binary.
 *
 * mimalloc gives freed pages back to the kernel (madvise MADV_DONTNEED) 25 ms
 * after they empty by default, but only when the thread owning them next
 * allocates or frees: a thread that builds something large and then waits
 * (a worker after a 5 MiB Node snapshot, the drift check for 5 minutes)
 * holds those pages for as long as it waits, and the daemon's RSS steps up
 * with every such thread and never comes down. With no delay, pages go back
 * as they empty: the soak's RSS stays flat (bench/RESULTS.md), at a cost in
 * CPU of 4 % in a 5,000-node burst and 20 % in the soak's churn. */
#include <stdlib.h>

#include "base/allocator.h"

#ifdef BOOTCCM_MIMALLOC
#include <mimalloc.h>

void
allocator_init(void)
{
	/* the option's name, and the name it had before mimalloc 2.0 */
	if (getenv("MIMALLOC_DECOMMIT_DELAY") == NULL && getenv("MIMALLOC_RESET_DELAY") == NULL)
		mi_option_set(mi_option_decommit_delay, 0);
}
#else
void
allocator_init(void)
{
}
#endif
