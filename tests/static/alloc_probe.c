/* alloc_probe.c - what src/base/allocator.c changes, measured: built by
 * tests/static/test_static.py as the shipped binary is (musl-gcc -static,
 * mimalloc's object, -DBOOTCCM_MIMALLOC) with src/base/allocator.c. A thread
 * builds 32 MiB (24,576 blocks of 1 KiB, as a Node snapshot is many small
 * pieces, and one of 8 MiB, as a drift check's array), frees it all, and
 * then waits, as a worker waits for its next key. Prints the process's
 * VmRSS in KiB before, with everything built, and after the free:
 *     alloc_probe tuned|default */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"

#define SMALL_N 24576
#define SMALL_SIZE 1024
#define LARGE_SIZE (8u << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int freed, done;
static long peak_kib;

static long
rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

static void *
builder(void *arg)
{
	char **small = calloc(SMALL_N, sizeof(*small));
	char *large = malloc(LARGE_SIZE);

	(void)arg;
	if (small == NULL || large == NULL)
		abort();
	memset(large, 1, LARGE_SIZE);
	for (size_t i = 0; i < SMALL_N; i++) {
		if ((small[i] = malloc(SMALL_SIZE)) == NULL)
			abort();
		memset(small[i], 1, SMALL_SIZE);
	}
	peak_kib = rss_kib();
	for (size_t i = 0; i < SMALL_N; i++)
		free(small[i]);
	free(small);
	free(large);
	pthread_mutex_lock(&mu);
	freed = 1;
	pthread_cond_broadcast(&cv);
	while (!done)   /* idle, as a worker between keys */
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t t;
	long before, after;

	if (argc != 2 || (strcmp(argv[1], "tuned") != 0 && strcmp(argv[1], "default") != 0)) {
		fprintf(stderr, "usage: alloc_probe tuned|default\n");
		return 2;
	}
	if (strcmp(argv[1], "tuned") == 0)
		allocator_init();
	before = rss_kib();
	if (pthread_create(&t, NULL, builder, NULL) != 0)
		return 1;
	pthread_mutex_lock(&mu);
	while (!freed)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	after = rss_kib();
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	printf("%ld %ld %ld\n", before, peak_kib, after);
	return 0;
}
