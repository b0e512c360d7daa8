/* Finding and arming tern-uffd-preload.so for criu (see criu-uffd.h). */
#include "criu-uffd.h"
#include "log.h"
#include "utils.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makefile.am sets it; a build of these sources without its flags (the
 * fuzz targets, tests/fuzz/run-fuzz.sh) looks where `make install` puts
 * the library by default */
#ifndef TERN_PKGLIBEXECDIR
#define TERN_PKGLIBEXECDIR "/usr/local/libexec/tern"
#endif

#define PRELOAD_NAME "tern-uffd-preload.so"

/* the preload as root runs it: a regular file of root or of this user
 * that nobody else may write (it runs inside criu, as root) */
static bool trusted(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* next to the running tern (the build tree), else where it is installed */
static const char *preload_path(void)
{
	static char found[PATH_MAX];
	static bool looked;
	char self[PATH_MAX];
	ssize_t n;

	if (looked)
		return found[0] ? found : NULL;
	looked = true;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if ((size_t)snprintf(found, sizeof(found), "%.*s/" PRELOAD_NAME,
					     (int)(sizeof(found) - sizeof(PRELOAD_NAME) - 1),
					     self) < sizeof(found) &&
			    trusted(found))
				return found;
		}
	}
	snprintf(found, sizeof(found), "%s/" PRELOAD_NAME, TERN_PKGLIBEXECDIR);
	if (trusted(found))
		return found;
	found[0] = '\0';
	return NULL;
}

const char *tern_uffd_device_why_not(void)
{
	struct stat st;

	if (stat("/dev/userfaultfd", &st) < 0 || !S_ISCHR(st.st_mode))
		return "there is no /dev/userfaultfd (Linux >= 6.1)";
	int fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return "/dev/userfaultfd cannot be opened by this user";
	close(fd);
	if (preload_path() == NULL)
		return PRELOAD_NAME " is neither next to tern nor in " TERN_PKGLIBEXECDIR;
	return NULL;
}

static char *saved;
static bool armed;

void tern_uffd_preload_arm(void)
{
	const char *so = preload_path();
	const char *old = getenv("LD_PRELOAD");

	if (so == NULL || armed)
		return;
	free(saved);
	saved = old ? tern_xstrdup(old) : NULL;
	setenv("LD_PRELOAD", so, 1);
	armed = true;
	tern_debug("lazy pages in a user namespace: through /dev/userfaultfd (criu runs with %s)",
		   so);
}

void tern_uffd_preload_disarm(void)
{
	if (!armed)
		return;
	if (saved)
		setenv("LD_PRELOAD", saved, 1);
	else
		unsetenv("LD_PRELOAD");
	free(saved);
	saved = NULL;
	armed = false;
}
