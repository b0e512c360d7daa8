/* /proc/PID/mountinfo lines: see mountinfo.h. */
#include "mountinfo.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

bool tern_mountinfo_parse(char *line, tern_mountinfo_line *m)
{
	char *f[6] = {0};
	char *save = NULL;
	int i = 0;

	/* no strtok_r past the sixth field: the next one may be the "-" */
	for (char *t = strtok_r(line, " ", &save); t; t = i < 6 ? strtok_r(NULL, " ", &save) : NULL)
		f[i++] = t;
	if (i < 6)
		return false;
	m->dev = f[2];
	m->root = f[3];
	m->mountpoint = f[4];
	m->opts = f[5];
	/* after the optional fields, "-" then fstype */
	for (char *t = strtok_r(NULL, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (strcmp(t, "-") == 0) {
			m->fstype = strtok_r(NULL, " ", &save);
			return m->fstype != NULL;
		}
	return false;
}

char *tern_mountinfo_unescape(const char *s)
{
	char *out = malloc(strlen(s) + 1), *w = out;

	if (out == NULL)
		abort();
	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return out;
}
