/*-------------------------------------------------------------------------
 *
 * fuzz_util.h
 *		What zklock's fuzz targets share: the input as a NUL-terminated
 *		copy (ZooKeeper hands names and data over so), split into lines,
 *		and a check that aborts, so that libFuzzer counts a broken
 *		property as a crash and keeps the input that broke it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_FUZZ_UTIL_H
#define ZKLOCK_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_LINES 512

/*
 * The most that reading size bytes of node data may keep allocated: a
 * backend keeps it all until its query ends, for every node it reads.
 */
#define FUZZ_MEMORY_BOUND(size) (2 * (size_t) (size) + 65536)

/* A property of the code under test: abort with its text when broken. */
#define fuzz_assert(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "fuzz property broken at %s:%d: %s\n", \
					__FILE__, __LINE__, #cond); \
			abort(); \
		} \
	} while (0)

/* A copy of data with a NUL after its size bytes (malloc'd, exactly so). */
static char *
fuzz_cstring(const uint8_t *data, size_t size)
{
	char	   *s = malloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * Split s in place at newlines into at most max lines; returns how many.
 * A line with a NUL ends there, as a name from ZooKeeper would.
 */
static int
fuzz_lines(char *s, size_t size, char **lines, int max)
{
	int			n = 0;
	char	   *start = s;

	for (size_t i = 0; i <= size && n < max; i++)
	{
		if (i == size || s[i] == '\n')
		{
			s[i] = '\0';
			lines[n++] = start;
			start = s + i + 1;
		}
	}
	return n;
}

#endif							/* ZKLOCK_FUZZ_UTIL_H */
