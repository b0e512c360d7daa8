/* A minimal TAP producer for tern's C unit tests (automake's tap-driver
 * reads it): ok(cond, name), is_str, is_int, then done_testing(). */
#pragma once

#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failed;

#define ok(cond, ...)                                                                              \
	do {                                                                                       \
		int _ok = !!(cond);                                                                \
		tap_count++;                                                                       \
		if (!_ok)                                                                          \
			tap_failed++;                                                              \
		printf("%sok %d - ", _ok ? "" : "not ", tap_count);                                \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		if (!_ok)                                                                          \
			printf("#   failed at %s:%d\n", __FILE__, __LINE__);                       \
	} while (0)

#define is_str(got, want, ...)                                                                     \
	do {                                                                                       \
		const char *_g = (got), *_w = (want);                                              \
		int _same = (_g == NULL && _w == NULL) || (_g && _w && strcmp(_g, _w) == 0);       \
		ok(_same, __VA_ARGS__);                                                            \
		if (!_same)                                                                        \
			printf("#   got: '%s'\n#   expected: '%s'\n", _g ? _g : "(null)",          \
			       _w ? _w : "(null)");                                                \
	} while (0)

#define is_int(got, want, ...)                                                                     \
	do {                                                                                       \
		long long _g = (long long)(got), _w = (long long)(want);                           \
		ok(_g == _w, __VA_ARGS__);                                                         \
		if (_g != _w)                                                                      \
			printf("#   got: %lld\n#   expected: %lld\n", _g, _w);                     \
	} while (0)

static inline int done_testing(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
