/* tern exec [options] ID COMMAND [ARG...] */
#include "cli.h"
#include "exec.h"
#include "utils.h"

#include <stdlib.h>
#include <string.h>

/* runc exec's status when the runtime, not the process, failed */
#define TERN_EXEC_RUNTIME_FAILURE 255

static const char usage[] =
    "Usage: tern exec [options] CONTAINER-ID COMMAND [ARG...]\n"
    "       tern exec [options] --process FILE CONTAINER-ID\n"
    "\n"
    "Run a process inside a running container, in its namespaces and cgroup.\n"
    "\n"
    "Options:\n"
    "  -p, --process FILE        the process as OCI JSON (process object)\n"
    "  -t, --tty                 allocate a pty\n"
    "  --console-socket PATH     unix socket that receives the pty master\n"
    "  -d, --detach              do not wait for the process\n"
    "  --pid-file PATH           write the process's pid there\n"
    "  -e, --env KEY=VALUE       set an environment variable (repeatable)\n"
    "  --cwd DIR                 working directory inside the container\n"
    "  -u, --user UID[:GID]      user to run as\n"
    "  -g, --additional-gids GID additional group (repeatable)\n"
    "  -c, --cap CAP             add a capability (repeatable)\n"
    "  --no-new-privs            set no_new_privs\n"
    "  --preserve-fds N          pass N extra fds (3 ... 3+N-1)\n"
    "  --apparmor PROFILE        AppArmor profile\n"
    "  --process-label LABEL     SELinux label\n"
    "  --ignore-paused           exec even if the container is paused\n"
    "  --cgroup [CTRL[,CTRL]:]PATH\n"
    "                            run in this (existing) sub-cgroup of the container's;\n"
    "                            with CTRL: only in those v1 controllers' hierarchies\n"
    "                            (repeatable)\n"
    "  -h, --help                this help\n";

int tern_cmd_exec(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_CONSOLE = 256,
		OPT_PIDFILE,
		OPT_CWD,
		OPT_NNP,
		OPT_PRESERVE,
		OPT_APPARMOR,
		OPT_LABEL,
		OPT_IGNORE_PAUSED,
		OPT_CGROUP
	};
	static const struct option longopts[] = {
	    {"process", required_argument, NULL, 'p'},
	    {"tty", no_argument, NULL, 't'},
	    {"console-socket", required_argument, NULL, OPT_CONSOLE},
	    {"detach", no_argument, NULL, 'd'},
	    {"pid-file", required_argument, NULL, OPT_PIDFILE},
	    {"env", required_argument, NULL, 'e'},
	    {"cwd", required_argument, NULL, OPT_CWD},
	    {"user", required_argument, NULL, 'u'},
	    {"additional-gids", required_argument, NULL, 'g'},
	    {"cap", required_argument, NULL, 'c'},
	    {"no-new-privs", no_argument, NULL, OPT_NNP},
	    {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
	    {"apparmor", required_argument, NULL, OPT_APPARMOR},
	    {"process-label", required_argument, NULL, OPT_LABEL},
	    {"ignore-paused", no_argument, NULL, OPT_IGNORE_PAUSED},
	    {"cgroup", required_argument, NULL, OPT_CGROUP},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tern_exec_opts o = {0};
	cleanup_error tern_error *err = NULL;
	int c, status = 0, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "+p:tde:u:g:c:h", longopts, usage)) != -1) {
		switch (c) {
		case 'p':
			o.process_file = optarg;
			break;
		case 't':
			o.tty = true;
			break;
		case OPT_CONSOLE:
			o.console_socket = optarg;
			break;
		case 'd':
			o.detach = true;
			break;
		case OPT_PIDFILE:
			o.pid_file = optarg;
			break;
		case 'e':
			o.env = tern_strv_add(o.env, optarg);
			break;
		case OPT_CWD:
			o.cwd = optarg;
			break;
		case 'u':
			o.user = optarg;
			break;
		case 'g':
			o.additional_gids = tern_strv_add(o.additional_gids, optarg);
			break;
		case 'c':
			o.caps = tern_strv_add(o.caps, optarg);
			break;
		case OPT_NNP:
			o.no_new_privs = true;
			break;
		case OPT_PRESERVE:
			o.preserve_fds = tern_cli_parse_int("preserve-fds", optarg);
			break;
		case OPT_APPARMOR:
			o.apparmor = optarg;
			break;
		case OPT_LABEL:
			o.process_label = optarg;
			break;
		case OPT_IGNORE_PAUSED:
			o.ignore_paused = true;
			break;
		case OPT_CGROUP:
			o.cgroups = tern_strv_add(o.cgroups, optarg);
			break;
		}
	}
	tern_cli_require_args(argc, argv, 1, o.process_file != NULL, "exec", usage);
	const char *id = argv[optind];
	o.args = argv + optind + 1;
	if (o.args[0] && strcmp(o.args[0], "--") == 0)
		o.args++;
	ret = tern_container_exec(&g->rt, id, &o, &status, &err);
	free(o.env);
	free(o.additional_gids);
	free(o.caps);
	free(o.cgroups);
	/* As runc (fatalWithCode(..., 255)): a runtime failure exits 255, so
	 * that a caller can tell it from the process's own status (an
	 * `exit 1` in the container). podman tells "not found" (127) from
	 * "permission denied" (126) by the message text, which is kept. */
	if (ret < 0) {
		tern_error_report(err);
		return TERN_EXEC_RUNTIME_FAILURE;
	}
	return status;
}
