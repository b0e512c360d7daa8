/* What the parts of the cgroup v1 code share, and nothing outside them
 * uses: the reads and writes of a hierarchy's control files. The parts:
 *   cgroup-v1.c        linux.resources checked and written, freezer
 *   cgroup-v1-stats.c  statistics, OOM notification
 * cgroup-v1.h stays the module's face. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>

/* Is `name` one of the comma-separated words of the super options? (A
 * substring test would take "cpu" from "cpuset" or "cpuacct".) */
bool tern_cgv1_has_ctrl(const char *controllers, const char *name);
/* Does DIR/FILE exist? */
bool tern_cgv1_file_exists(const char *dir, const char *file);
/* One value into one control file, in one write(2); the error names
 * `field` (see cgroup-v1.c). */
int tern_cgv1_write_value(const char *dir, const char *file, const char *value, const char *field,
			  tern_error **err);
/* A single number from a control file; "max" reads as UINT64_MAX. */
int tern_cgv1_read_u64(const char *dir, const char *file, uint64_t *out);
