/* harness.h - a tiny unit-test harness: TEST(name) bodies, CHECK() asserts,
 * and a main() that runs every test and prints "N passed, N failed".
 *
 * Use: #include "harness.h" in exactly one .c file per test program, write
 * TEST(foo) { CHECK(x == 1); CHECK_STR(s, "a"); }, and end the file with
 * TEST_MAIN(). A failed CHECK reports file:line and ends that test only. */
#ifndef BOOTCCM_HARNESS_H
#define BOOTCCM_HARNESS_H

#include <stdio.h>
#include <string.h>

struct harness_test {
	const char *name;
	void (*fn)(int *failed);
	struct harness_test *next;
};

static struct harness_test *harness_head, **harness_tail = &harness_head;

#define TEST(name)                                                          \
	static void test_##name(int *harness_failed);                       \
	static struct harness_test harness_t_##name = {#name, test_##name, NULL}; \
	__attribute__((constructor)) static void harness_reg_##name(void)   \
	{                                                                   \
		*harness_tail = &harness_t_##name;                          \
		harness_tail = &harness_t_##name.next;                      \
	}                                                                   \
	static void test_##name(int *harness_failed)

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n",      \
			    __FILE__, __LINE__, #cond);                     \
			*harness_failed = 1;                                \
			return;                                             \
		}                                                           \
	} while (0)

#define CHECK_STR(got, want)                                                \
	do {                                                                \
		const char *harness_g = (got), *harness_w = (want);         \
		if (harness_g == NULL || harness_w == NULL ?                \
		    harness_g != harness_w : strcmp(harness_g, harness_w) != 0) { \
			fprintf(stderr, "  %s:%d: %s: got \"%s\", want \"%s\"\n", \
			    __FILE__, __LINE__, #got,                       \
			    harness_g ? harness_g : "(null)",               \
			    harness_w ? harness_w : "(null)");              \
			*harness_failed = 1;                                \
			return;                                             \
		}                                                           \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                         \
	do {                                                                \
		const char *harness_h = (hay), *harness_n = (needle);       \
		if (harness_h == NULL || strstr(harness_h, harness_n) == NULL) { \
			fprintf(stderr, "  %s:%d: %s: \"%s\" does not contain \"%s\"\n", \
			    __FILE__, __LINE__, #hay,                       \
			    harness_h ? harness_h : "(null)", harness_n);   \
			*harness_failed = 1;                                \
			return;                                             \
		}                                                           \
	} while (0)

#define TEST_MAIN()                                                         \
	int main(int argc, char **argv)                                     \
	{                                                                   \
		int passed = 0, failed = 0;                                 \
		for (struct harness_test *t = harness_head; t; t = t->next) { \
			int f = 0;                                          \
			if (argc > 1 && strcmp(argv[1], t->name) != 0)      \
				continue;                                   \
			t->fn(&f);                                          \
			printf("%s %s\n", f ? "FAIL" : "ok  ", t->name);    \
			if (f)                                              \
				failed++;                                   \
			else                                                \
				passed++;                                   \
		}                                                           \
		printf("%s: %d passed, %d failed\n", argv[0], passed, failed); \
		return failed ? 1 : 0;                                      \
	}

#endif
