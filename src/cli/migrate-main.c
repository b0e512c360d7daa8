/* tern-migrate: `tern migrate` and `tern migrate-receive`. A program of
 * its own so that tern never maps OpenSSL (see Makefile.am); tern execs it
 * with the same arguments, tern's global options included. */
#include "config.h"

#include "cli.h"
#include "log.h"
#include "state.h"
#include "utils.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

int tern_cmd_migrate(tern_global_opts *g, int argc, char **argv);
int tern_cmd_migrate_receive(tern_global_opts *g, int argc, char **argv);
int tern_cmd_rootfs_fold(tern_global_opts *g, int argc, char **argv);

const tern_command tern_commands[] = {
    {"migrate", tern_cmd_migrate, "move a running container to another node"},
    {"migrate-receive", tern_cmd_migrate_receive, "receive one migrating container on this node"},
    {"rootfs-fold", tern_cmd_rootfs_fold, "(internal to delete) copy one tree onto another"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
	fputs("Usage: tern [global options] migrate|migrate-receive [options]\n"
	      "\n"
	      "Global options: --root DIR, --log FILE, --log-format text|json, --debug,\n"
	      "--systemd-cgroup, --criu PATH, --rootless VALUE (as tern's).\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (const tern_command *c = tern_commands; c->name; c++)
		fprintf(out, "  %-16s %s\n", c->name, c->summary);
}

int main(int argc, char **argv)
{
	tern_global_opts g = {.rt = {.root = NULL, .rootless = TERN_ROOTLESS_AUTO},
			      .log_format = "text"};
	cleanup_free char *default_root = NULL;
	const tern_command *cmd;
	int action = 0, ind, ret;

	ind = tern_cli_parse_globals(argc, argv, &g, &action);
	if (ind < 0) {
		usage(stderr);
		return 1;
	}
	if (action == 'v') {
		printf("tern-migrate version %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (action == 'h' || ind >= argc) {
		usage(action == 'h' ? stdout : stderr);
		return action == 'h' ? 0 : 1;
	}
	/* a peer that hangs up must be an error of the write, not a death;
	 * the children that run containers or criu set it back to default */
	signal(SIGPIPE, SIG_IGN);
	if (g.rt.root == NULL) {
		default_root = tern_state_default_root();
		g.rt.root = default_root;
	}
	ret = tern_log_init(g.log, g.log_format, g.debug);
	if (ret < 0) {
		fprintf(stderr, "tern: --log `%s` / --log-format `%s`: %s\n", g.log ? g.log : "",
			g.log_format, strerror(-ret));
		return 1;
	}
	cmd = tern_command_find(argv[ind]);
	if (cmd == NULL) {
		fprintf(stderr, "tern-migrate: unknown command `%s` (migrate or migrate-receive)\n",
			argv[ind]);
		return 1;
	}
	return cmd->run(&g, argc - ind, argv + ind);
}
