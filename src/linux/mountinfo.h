/* One line of /proc/PID/mountinfo, split in place. */
#pragma once

#include <stdbool.h>

typedef struct {
	char *dev;	  /* MAJOR:MINOR of the filesystem */
	char *root;	  /* the root of the mount within its filesystem */
	char *mountpoint; /* escaped as the kernel writes it (\040 for a space) */
	char *opts;	  /* per-mount options: "ro,nosuid,..." */
	char *fstype;
} tern_mountinfo_line;

/* Splits `line` (modified) into m's fields; false if it is not a
 * mountinfo line. */
bool tern_mountinfo_parse(char *line, tern_mountinfo_line *m);

/* A malloc'd copy of a mountinfo path with the kernel's octal escapes
 * undone ("\040" is a space). */
char *tern_mountinfo_unescape(const char *s);
