/* Helpers shared by the fuzz targets (tests/fuzz/fuzz-*.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated string (malloc'd). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* The input split at each '\n' into a NULL-terminated array of strings
 * (each malloc'd; a NUL byte inside a line ends that string early, as it
 * would on a command line). At most `max` strings. */
static inline char **fuzz_lines(const uint8_t *data, size_t size, size_t max)
{
	char **v = calloc(max + 1, sizeof(char *));
	size_t n = 0, start = 0;

	if (v == NULL)
		abort();
	for (size_t i = 0; i <= size && n < max; i++) {
		if (i == size || data[i] == '\n') {
			if (i == size && start == size && n > 0)
				break;
			v[n++] = fuzz_str(data + start, i - start);
			start = i + 1;
		}
	}
	return v;
}

static inline size_t fuzz_strv_len(char **v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static inline void fuzz_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A fresh scratch directory $TMPDIR/tern-fuzz-NAME-XXXXXX (or under /tmp)
 * into dir, for targets whose parser reads files; the target removes it at
 * exit. */
static inline void fuzz_scratch_dir(char *dir, size_t size, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, size, "%s/tern-fuzz-%s-XXXXXX", tmp ? tmp : "/tmp", name);
	if (mkdtemp(dir) == NULL)
		abort();
}
