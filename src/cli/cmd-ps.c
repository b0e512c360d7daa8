/* tern ps [--format table|json] ID [ps options] */
#include "cli.h"
#include "container-cgroup.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] = "Usage: tern ps [options] CONTAINER-ID [ps options]\n"
			    "\n"
			    "List the processes of a container: with --format table (default) the\n"
			    "lines of ps(1) (default options -ef) whose PID is the container's;\n"
			    "with --format json the pids as a JSON array.\n"
			    "\n"
			    "Options:\n"
			    "  -f, --format FORMAT   table or json\n"
			    "  -h, --help            this help\n";

static bool has_pid(const pid_t *pids, size_t n, long pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* Run ps with the user's options and keep the header and the lines whose
 * PID column belongs to the container (what runc does). */
static int filter_ps(char **ps_args, const pid_t *pids, size_t n, tern_error **err)
{
	int pipefd[2];
	char **argv;
	size_t nargs = 0;

	while (ps_args && ps_args[nargs])
		nargs++;
	argv = tern_xmalloc0((nargs + 3) * sizeof(char *));
	argv[0] = "ps";
	if (nargs == 0)
		argv[1] = "-ef";
	else
		memcpy(argv + 1, ps_args, nargs * sizeof(char *));
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		free(argv);
		return tern_error_make(err, errno, "pipe");
	}
	pid_t child = fork();
	if (child == 0) {
		dup2(pipefd[1], 1);
		execvp("ps", argv);
		_exit(127);
	}
	free(argv);
	close(pipefd[1]);
	if (child < 0) {
		close(pipefd[0]);
		return tern_error_make(err, errno, "fork ps");
	}
	FILE *f = fdopen(pipefd[0], "r");
	char *line = NULL;
	size_t cap = 0;
	int pid_col = -1;
	bool header = true;
	while (f && getline(&line, &cap, f) > 0) {
		if (header) {
			/* find the PID column by name */
			char *copy = tern_xstrdup(line), *save = NULL;
			int col = 0;
			for (char *t = strtok_r(copy, " \t\n", &save); t;
			     t = strtok_r(NULL, " \t\n", &save), col++)
				if (strcmp(t, "PID") == 0) {
					pid_col = col;
					break;
				}
			free(copy);
			fputs(line, stdout);
			header = false;
			continue;
		}
		if (pid_col < 0)
			continue;
		char *copy = tern_xstrdup(line), *save = NULL, *t = strtok_r(copy, " \t\n", &save);
		for (int col = 0; t && col < pid_col; col++)
			t = strtok_r(NULL, " \t\n", &save);
		if (t && has_pid(pids, n, strtol(t, NULL, 10)))
			fputs(line, stdout);
		free(copy);
	}
	free(line);
	if (f)
		fclose(f);
	int status;
	waitpid(child, &status, 0);
	if (pid_col < 0)
		return tern_error_make(err, EINVAL, "ps: no PID column in its output");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return tern_error_make(err, EINVAL, "ps exited with status %d",
				       WEXITSTATUS(status));
	return 0;
}

int tern_cmd_ps(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {{"format", required_argument, NULL, 'f'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	const char *format = "table";
	pid_t *pids = NULL;
	size_t n = 0;
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "+f:h", longopts, usage)) != -1)
		if (c == 'f')
			format = optarg;
	tern_cli_require_args(argc, argv, 1, false, "ps", usage);
	if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0) {
		tern_error_make(&err, EINVAL, "--format `%s`: expected table or json", format);
		return tern_error_report(err);
	}
	if (tern_container_pids(&g->rt, argv[optind], &pids, &n, &err) < 0)
		return tern_error_report(err);
	if (strcmp(format, "json") == 0) {
		printf("[");
		for (size_t i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", pids[i]);
		printf("]\n");
		free(pids);
		return 0;
	}
	char **ps_args = argv + optind + 1;
	if (ps_args[0] && strcmp(ps_args[0], "--") == 0)
		ps_args++;
	ret = filter_ps(ps_args, pids, n, &err);
	free(pids);
	return ret < 0 ? tern_error_report(err) : 0;
}
