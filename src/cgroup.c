#include "cgroup.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The mount points of the cgroup hierarchies, read once from mountinfo. */
typedef struct {
	char *mountpoint;
	bool v2;
	bool freezer;
	bool cpuset; /* v1 cpuset: a new cgroup starts with no cpus or mems */
} hierarchy;

static hierarchy *hierarchies;
static size_t n_hierarchies;
static bool loaded;

static void load_hierarchies(void)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (loaded)
		return;
	loaded = true;
	f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL)
		return;
	while (getline(&line, &cap, f) > 0) {
		/* id parent major:minor root mountpoint opts [optional...] - fstype source
		 * superopts */
		char *sep = strstr(line, " - ");
		char mnt[4096], fstype[64], source[256], superopts[1024];
		if (sep == NULL)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		superopts[0] = '\0';
		if (sscanf(sep + 3, "%63s %255s %1023s", fstype, source, superopts) < 2)
			continue;
		bool v2 = strcmp(fstype, "cgroup2") == 0;
		if (!v2 && strcmp(fstype, "cgroup") != 0)
			continue;
		hierarchies = realloc(hierarchies, (n_hierarchies + 1) * sizeof(*hierarchies));
		if (hierarchies == NULL)
			abort();
		hierarchies[n_hierarchies].mountpoint = tern_xstrdup(mnt);
		hierarchies[n_hierarchies].v2 = v2;
		hierarchies[n_hierarchies].freezer = v2 || strstr(superopts, "freezer") != NULL;
		hierarchies[n_hierarchies].cpuset = !v2 && strstr(superopts, "cpuset") != NULL;
		n_hierarchies++;
	}
	free(line);
	fclose(f);
}

char *tern_cgroup_path_for(const char *cgroups_path, const char *id)
{
	if (cgroups_path == NULL || *cgroups_path == '\0')
		return tern_strdup_printf("/%s", id);
	cleanup_free char *rooted =
	    cgroups_path[0] == '/' ? NULL : tern_strdup_printf("/%s", cgroups_path);
	return tern_absolute_path(rooted ? rooted : cgroups_path);
}

static char *dir_of(const hierarchy *h, const char *path)
{
	return tern_strdup_printf("%s%s", h->mountpoint, path);
}

/* v1 cpuset refuses tasks while cpuset.cpus or cpuset.mems is empty, and
 * that is how a new cgroup starts: copy the parent's, level by level. */
static int init_cpuset(const hierarchy *h, const char *path, tern_error **err)
{
	cleanup_free char *rel = tern_xstrdup(path);
	static const char *files[] = {"cpuset.cpus", "cpuset.mems"};

	for (char *slash = strchr(rel + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash)
			*slash = '\0';
		for (size_t f = 0; f < 2; f++) {
			cleanup_free char *mine =
			    tern_strdup_printf("%s%s/%s", h->mountpoint, rel, files[f]);
			cleanup_free char *cur = NULL;
			if (tern_read_file(mine, &cur, NULL, 0, NULL) < 0 ||
			    (cur[0] != '\n' && cur[0]))
				continue;
			cleanup_free char *parent_dir =
			    tern_strdup_printf("%s%s", h->mountpoint, rel);
			*strrchr(parent_dir, '/') = '\0';
			cleanup_free char *pfile =
			    tern_strdup_printf("%s/%s", parent_dir, files[f]);
			cleanup_free char *val = NULL;
			size_t len;
			int ret = tern_read_file(pfile, &val, &len, 0, err);
			if (ret < 0)
				return ret;
			ret = tern_write_file_at(AT_FDCWD, mine, val, len, err);
			if (ret < 0)
				return ret;
		}
		if (slash == NULL)
			break;
		*slash = '/';
	}
	return 0;
}

int tern_cgroup_create(const char *path, bool *created, tern_error **err)
{
	load_hierarchies();
	*created = false;
	for (size_t i = 0; i < n_hierarchies; i++) {
		cleanup_free char *dir = dir_of(&hierarchies[i], path);
		struct stat st;
		if (stat(dir, &st) == 0)
			continue;
		int ret = tern_mkdir_p(dir, 0755, err);
		if (ret < 0)
			return tern_error_wrap(err, "create cgroup `%s`", path);
		*created = true;
		if (hierarchies[i].cpuset) {
			ret = init_cpuset(&hierarchies[i], path, err);
			if (ret < 0)
				return tern_error_wrap(err, "create cgroup `%s`", path);
		}
	}
	return 0;
}

int tern_cgroup_enter(const char *path, pid_t pid, tern_error **err)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d", pid);

	load_hierarchies();
	for (size_t i = 0; i < n_hierarchies; i++) {
		cleanup_free char *procs =
		    tern_strdup_printf("%s%s/cgroup.procs", hierarchies[i].mountpoint, path);
		int ret = tern_write_file_at(AT_FDCWD, procs, buf, (size_t)len, err);
		if (ret < 0)
			return tern_error_wrap(err, "join cgroup `%s`", path);
	}
	return 0;
}

static int read_pids(const char *dir, pid_t **pids, size_t *n)
{
	cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", dir);
	cleanup_free char *data = NULL;
	char *save = NULL;

	*pids = NULL;
	*n = 0;
	if (tern_read_file(procs, &data, NULL, 0, NULL) < 0)
		return -ENOENT;
	for (char *tok = strtok_r(data, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		*pids = realloc(*pids, (*n + 1) * sizeof(pid_t));
		if (*pids == NULL)
			abort();
		(*pids)[(*n)++] = (pid_t)atoi(tok);
	}
	return 0;
}

int tern_cgroup_pids(const char *path, pid_t **pids, size_t *n, tern_error **err)
{
	load_hierarchies();
	*pids = NULL;
	*n = 0;
	for (size_t i = 0; i < n_hierarchies; i++) {
		cleanup_free char *dir = dir_of(&hierarchies[i], path);
		if (read_pids(dir, pids, n) == 0)
			return 0;
	}
	return tern_error_make(err, ENOENT, "cgroup `%s`", path);
}

static void thaw(const hierarchy *h, const char *dir)
{
	if (!h->freezer)
		return;
	cleanup_free char *f =
	    tern_strdup_printf("%s/%s", dir, h->v2 ? "cgroup.freeze" : "freezer.state");
	const char *v = h->v2 ? "0" : "THAWED";
	tern_write_file_at(AT_FDCWD, f, v, strlen(v), NULL);
}

int tern_cgroup_destroy(const char *path, tern_error **err)
{
	load_hierarchies();
	if (path == NULL || *path == '\0' || strcmp(path, "/") == 0)
		return 0;
	for (size_t i = 0; i < n_hierarchies; i++) {
		cleanup_free char *dir = dir_of(&hierarchies[i], path);
		struct stat st;
		if (stat(dir, &st) < 0)
			continue;
		thaw(&hierarchies[i], dir);
		/* Leftover processes keep the cgroup busy: kill and wait (bounded). */
		for (int attempt = 0; attempt < 200; attempt++) {
			if (rmdir(dir) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY)
				return tern_error_make(err, errno, "remove cgroup `%s`", dir);
			pid_t *pids = NULL;
			size_t n = 0;
			read_pids(dir, &pids, &n);
			for (size_t j = 0; j < n; j++)
				kill(pids[j], SIGKILL);
			free(pids);
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (stat(dir, &st) == 0)
			return tern_error_make(err, EBUSY, "remove cgroup `%s`", dir);
	}
	return 0;
}

bool tern_cgroup_is_frozen(const char *path)
{
	load_hierarchies();
	for (size_t i = 0; i < n_hierarchies; i++) {
		if (!hierarchies[i].freezer)
			continue;
		cleanup_free char *f =
		    tern_strdup_printf("%s%s/%s", hierarchies[i].mountpoint, path,
				       hierarchies[i].v2 ? "cgroup.freeze" : "freezer.state");
		cleanup_free char *data = NULL;
		if (tern_read_file(f, &data, NULL, 0, NULL) < 0)
			continue;
		if (hierarchies[i].v2 ? data[0] == '1' : strncmp(data, "FROZEN", 6) == 0)
			return true;
	}
	return false;
}
