/* tern run [options] ID: create, start and (unless --detach) wait. */
#include "cli.h"
#include "create-opts.h"

static const char usage[] =
    "Usage: tern run [options] CONTAINER-ID\n"
    "\n"
    "Create and start a container. Without --detach, wait for it, exit with its\n"
    "exit status (128+N when killed by signal N), and delete it.\n"
    "\n"
    "Options:\n"
    "  -b, --bundle DIR          the bundle (default: the current directory)\n"
    "  -d, --detach              do not wait for the container\n"
    "  --console-socket PATH     unix socket that receives the pty master\n"
    "  --pid-file PATH           write the container process's pid there\n"
    "  --no-pivot                do not use pivot_root (MS_MOVE + chroot)\n"
    "  --no-new-keyring          keep the caller's session keyring\n"
    "  --preserve-fds N          pass N extra fds (3 ... 3+N-1) to the container\n"
    "  --keep                    do not delete the container after it exits\n"
    "  --no-subreaper            do not become a child subreaper\n"
    "  -h, --help                this help\n";

int tern_cmd_run(tern_global_opts *g, int argc, char **argv)
{
	tern_create_opts opts = {0};
	cleanup_error tern_error *err = NULL;
	int status = 0;

	tern_cli_parse_create_opts(argc, argv, &opts, true, usage);
	tern_cli_require_args(argc, argv, 1, true, "run", usage);
	if (tern_container_run(&g->rt, argv[optind], &opts, &status, &err) < 0)
		return tern_error_report(err);
	return status;
}
