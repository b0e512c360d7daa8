/* tern: an OCI container runtime with runc's command line. */
#include "config.h"

#include "cli.h"
#include "log.h"
#include "state.h"

#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tern_command tern_commands[] = {
    {"create", tern_cmd_create, "create a container"},
    {"start", tern_cmd_start, "start a created container"},
    {"run", tern_cmd_run, "create and start a container, wait for it"},
    {"exec", tern_cmd_exec, "run a new process inside a container"},
    {"kill", tern_cmd_kill, "send a signal to a container's init process"},
    {"delete", tern_cmd_delete, "delete a container and everything it holds"},
    {"state", tern_cmd_state, "print a container's state as JSON"},
    {"pause", tern_cmd_pause, "freeze every process of a container"},
    {"resume", tern_cmd_resume, "thaw a paused container"},
    {"ps", tern_cmd_ps, "list the processes of a container"},
    {"events", tern_cmd_events, "print a container's resource stats and OOM events"},
    {"update", tern_cmd_update, "change a container's resource limits"},
    {"list", tern_cmd_list, "list the containers"},
    {"spec", tern_cmd_spec, "write a default config.json"},
    {"checkpoint", tern_cmd_checkpoint, "checkpoint a running container with CRIU"},
    {"restore", tern_cmd_restore, "restore a container from a CRIU checkpoint"},
    {"features", tern_cmd_features, "print the features this tern supports"},
    {"help", NULL, "show this help, or a command's with `help COMMAND`"},
    {NULL, NULL, NULL},
};

static const char usage[] =
    "Usage: tern [global options] COMMAND [options] [arguments]\n"
    "\n"
    "tern is an OCI container runtime.\n"
    "\n"
    "Global options:\n"
    "  --root DIR            state directory (default " TERN_DEFAULT_ROOT ")\n"
    "  --log FILE            log file\n"
    "  --log-format FORMAT   text or json\n"
    "  --debug               debug logging\n"
    "  --systemd-cgroup      cgroups through systemd: cgroupsPath is slice:prefix:name\n"
    "  --criu PATH           the criu binary\n"
    "  --rootless VALUE      accepted for compatibility\n"
    "  -v, --version         print the version\n"
    "  -h, --help            this help\n"
    "\n"
    "Commands:\n";

static void print_usage(FILE *out)
{
	fputs(usage, out);
	for (const tern_command *c = tern_commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
}

static void print_version(void)
{
	const struct scmp_version *v = seccomp_version();

	printf("tern version %s\n", PACKAGE_VERSION);
	printf("spec: %s\n", TERN_OCI_VERSION);
	printf("features: +SECCOMP +CAP +SELINUX +YAJL +CRIU\n");
	if (v)
		printf("libseccomp: %u.%u.%u\n", v->major, v->minor, v->micro);
}

int main(int argc, char **argv)
{
	enum {
		OPT_ROOT = 256,
		OPT_LOG,
		OPT_LOG_FORMAT,
		OPT_DEBUG,
		OPT_SYSTEMD,
		OPT_CRIU,
		OPT_ROOTLESS
	};
	static const struct option longopts[] = {
	    {"root", required_argument, NULL, OPT_ROOT},
	    {"log", required_argument, NULL, OPT_LOG},
	    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
	    {"debug", no_argument, NULL, OPT_DEBUG},
	    {"systemd-cgroup", no_argument, NULL, OPT_SYSTEMD},
	    {"criu", required_argument, NULL, OPT_CRIU},
	    {"rootless", required_argument, NULL, OPT_ROOTLESS},
	    {"version", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tern_global_opts g = {.rt = {.root = TERN_DEFAULT_ROOT}, .log_format = "text"};
	const tern_command *cmd;
	int c, ret;

	opterr = 0;
	while ((c = getopt_long_only(argc, argv, "+vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ROOT:
			g.rt.root = optarg;
			break;
		case OPT_LOG:
			g.log = optarg;
			break;
		case OPT_LOG_FORMAT:
			g.log_format = optarg;
			break;
		case OPT_DEBUG:
			g.debug = true;
			break;
		case OPT_SYSTEMD:
			g.rt.systemd_cgroup = true;
			break;
		case OPT_CRIU:
			g.criu = optarg;
			break;
		case OPT_ROOTLESS:
			break;
		case 'v':
			print_version();
			return 0;
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "tern: unknown or incomplete global option `%s`\n",
				argv[optind - 1]);
			print_usage(stderr);
			return 1;
		}
	}
	ret = tern_log_init(g.log, g.log_format, g.debug);
	if (ret < 0) {
		fprintf(stderr, "tern: --log `%s` / --log-format `%s`: %s\n", g.log ? g.log : "",
			g.log_format, strerror(-ret));
		return 1;
	}
	if (optind >= argc) {
		print_usage(stderr);
		return 1;
	}
	if (strcmp(argv[optind], "help") == 0) {
		const tern_command *about =
		    optind + 1 < argc ? tern_command_find(argv[optind + 1]) : NULL;
		if (about && about->run) {
			char *help_argv[] = {argv[optind + 1], "--help", NULL};
			return about->run(&g, 2, help_argv);
		}
		print_usage(stdout);
		return 0;
	}
	cmd = tern_command_find(argv[optind]);
	if (cmd == NULL) {
		tern_log(TERN_LOG_ERROR, "unknown command `%s`", argv[optind]);
		return 1;
	}
	/* the command parses its own options from its name on */
	return cmd->run(&g, argc - optind, argv + optind);
}
