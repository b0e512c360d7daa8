/* What the parts of the cgroup v2 code share, and nothing outside them
 * uses: the checks and the reads and writes of the cgroup's files. The
 * parts:
 *   cgroup-v2.c           conversions, delegation, linux.resources written
 *   cgroup-v2-validate.c  linux.resources checked
 *   cgroup-v2-stats.c     freezer, statistics, OOM kills
 * cgroup-v2.h stays the module's face. */
#pragma once

#include "error.h"

#include <stdbool.h>

/* A file name of the cgroup directory, never a path out of it. */
bool tern_cgv2_valid_file_key(const char *key);

/* Write `value` to DIR/FILE (`dfd` is DIR open); the error names the
 * config field. */
int tern_cgv2_write_ctl(int dfd, const char *dir, const char *file, const char *value,
			const char *field, tern_error **err);
/* The whole of FILE, read at `dfd` (malloc'd); -errno when it fails. */
int tern_cgv2_read_ctl(int dfd, const char *file, char **out);
/* Does `dfd` hold FILE? */
bool tern_cgv2_has_file(int dfd, const char *file);
