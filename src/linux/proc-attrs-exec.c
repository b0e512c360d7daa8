/* The last step of the child: find process.args[0] as execve will, check
 * it in the parent first, HOME from the container's passwd, and exec. */
#include "proc-attrs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- exec ---- */

/* execvp's search path when PATH is not set (glibc's confstr(_CS_PATH)). */
#define DEFAULT_PATH "/bin:/usr/bin"

static const char *env_path(char *const *env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			return env[i] + 5;
	return DEFAULT_PATH;
}

/* The next candidate "dir/name" from the PATH list at *cursor, or NULL at
 * the end. An empty element means the current directory, as for execvp. */
static char *next_candidate(const char **cursor, const char *name)
{
	const char *dir = *cursor, *end;
	size_t l;

	if (dir == NULL)
		return NULL;
	end = strchr(dir, ':');
	l = end ? (size_t)(end - dir) : strlen(dir);
	*cursor = end ? end + 1 : NULL;
	if (l == 0)
		return tern_strdup_printf("./%s", name);
	return tern_strdup_printf("%.*s/%s", (int)l, dir, name);
}

/* execve's verdict on one candidate, without running it: a regular file
 * that the current credentials (effective ids, groups and capabilities,
 * as execve checks them) may execute, on a mount without noexec. A
 * directory or a device is EACCES, as execve says. */
static int exec_access(const char *path)
{
	struct stat st;

	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
		return -errno;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EACCES;
}

/* The errors after which execvp goes on to the next PATH entry. */
static bool try_next_candidate(int e)
{
	return e == EACCES || e == ENOENT || e == ENOTDIR || e == ESTALE || e == ENODEV ||
	       e == ETIMEDOUT;
}

int tern_find_executable(const char *name, char *const *env, char **path)
{
	const char *cursor;
	char *cand;
	bool eacces = false;
	int ret;

	*path = NULL;
	if (name == NULL || name[0] == '\0')
		return -ENOENT;
	if (strchr(name, '/') != NULL) {
		ret = exec_access(name);
		if (ret == 0)
			*path = tern_xstrdup(name);
		return ret;
	}
	cursor = env_path(env);
	while ((cand = next_candidate(&cursor, name)) != NULL) {
		ret = exec_access(cand);
		if (ret == 0) {
			*path = cand;
			return 0;
		}
		free(cand);
		if (!try_next_candidate(-ret))
			return ret;
		if (ret == -EACCES)
			eacces = true;
	}
	return eacces ? -EACCES : -ENOENT;
}

int tern_exec_check(const oci_process *process, tern_error **err)
{
	const char *name = process->args ? process->args[0] : NULL;
	cleanup_free char *path = NULL;
	int ret = tern_find_executable(name, process->env, &path);

	if (ret < 0)
		return tern_error_make(err, -ret, "exec `%s`", name ? name : "");
	return 0;
}

bool tern_exec_check_possible(void)
{
	struct stat st;

	return faccessat(AT_FDCWD, "/", X_OK, AT_EACCESS) == 0 && stat("/", &st) == 0;
}

int tern_exec_process(const oci_process *process, tern_error **err)
{
	static char *const empty_env[] = {NULL};
	char *const *env = process->env ? process->env : empty_env;
	const char *name = process->args ? process->args[0] : NULL;
	const char *cursor;
	char *cand;
	int e = ENOENT;
	bool eacces = false;

	if (name == NULL || name[0] == '\0')
		return tern_error_make(err, 0, "process.args: empty");
	if (strchr(name, '/') != NULL) {
		execve(name, process->args, env);
		return tern_error_make(err, errno, "exec `%s`", name);
	}
	/* execvp's rules, but with the container's PATH rather than ours:
	 * keep looking after ENOENT/ENOTDIR/EACCES, stop at anything else,
	 * and report EACCES if any candidate existed but was not runnable. */
	cursor = env_path(env);
	while ((cand = next_candidate(&cursor, name)) != NULL) {
		execve(cand, process->args, env);
		e = errno;
		free(cand);
		if (e == EACCES)
			eacces = true;
		else if (!try_next_candidate(e))
			return tern_error_make(err, e, "exec `%s`", name);
	}
	return tern_error_make(err, eacces ? EACCES : ENOENT, "exec `%s`", name);
}

static char *home_from_passwd(uint32_t uid)
{
	FILE *f = fopen("/etc/passwd", "re");
	char *line = NULL, *home = NULL;
	size_t cap = 0;

	if (f == NULL)
		return NULL;
	while (home == NULL && getline(&line, &cap, f) > 0) {
		/* name:passwd:uid:gid:gecos:home:shell */
		char *fields[7] = {0};
		char *p = line;
		int n = 0;
		while (n < 7 && p) {
			fields[n++] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (n < 6 || fields[2] == NULL || strtoul(fields[2], NULL, 10) != uid)
			continue;
		home = strdup(fields[5]);
	}
	free(line);
	fclose(f);
	return home;
}

void tern_env_ensure_home(oci_process *process)
{
	size_t n = 0;

	for (char **e = process->env; e && *e; e++, n++)
		if (strncmp(*e, "HOME=", 5) == 0)
			return;
	char *home = home_from_passwd(process->user.uid);
	char *entry = tern_strdup_printf("HOME=%s", home && *home ? home : "/");
	free(home);
	char **env = realloc(process->env, (n + 2) * sizeof(char *));
	if (env == NULL) {
		free(entry);
		return;
	}
	env[n] = entry;
	env[n + 1] = NULL;
	process->env = env;
}
