/* tern restore [options] ID: a new container from a CRIU checkpoint. */
#include "checkpoint.h"
#include "cli.h"
#include "utils.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: tern restore [options] CONTAINER-ID\n"
    "\n"
    "Restore a container checkpointed with `tern checkpoint` (or runc) as a new\n"
    "container CONTAINER-ID, from the bundle given by --bundle: its rootfs,\n"
    "bind mount sources and cgroup (linux.cgroupsPath, with its limits) are the\n"
    "new config's. The config's prestart and createRuntime hooks run once the\n"
    "namespaces are restored, as runc does. Without --detach, wait for the\n"
    "container, exit with its status and delete it.\n"
    "\n"
    "Options:\n"
    "  -b, --bundle DIR             the bundle (default: the current directory)\n"
    "  --image-path DIR             the checkpoint (default ./checkpoint)\n"
    "  --work-path DIR              where criu writes its log (default: the image path)\n"
    "  --parent-path DIR            parent images, relative to --image-path\n"
    "  -d, --detach                 do not wait for the container\n"
    "  --pid-file PATH              write the restored init's pid there\n"
    "  --console-socket PATH        unix socket that receives the new pty master\n"
    "  --no-subreaper               do not become a child subreaper\n"
    "  --no-pivot                   accepted (CRIU sets up the root itself)\n"
    "  --tcp-established            restore established TCP connections\n"
    "  --tcp-close                  restore TCP connections closed\n"
    "  --ext-unix-sk                allow unix sockets connected to the outside\n"
    "  --shell-job                  allow a process attached to a shell/terminal\n"
    "  --file-locks                 restore file locks\n"
    "  --manage-cgroups-mode MODE   soft (default), full, strict or ignore\n"
    "  --empty-ns NS                namespace NS was not dumped (network)\n"
    "  --auto-dedup                 deduplicate images while restoring\n"
    "  --lazy-pages                 (not available with this libcriu)\n"
    "  --lsm-profile TYPE:NAME      LSM profile for the restored processes\n"
    "  --lsm-mount-context CTX      LSM mount context for the restored mounts\n"
    "  -h, --help                   this help\n";

int tern_cmd_restore(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_IMAGE = 256,
		OPT_WORK,
		OPT_PARENT,
		OPT_PIDFILE,
		OPT_CONSOLE,
		OPT_NOSUBREAPER,
		OPT_NOPIVOT,
		OPT_TCP,
		OPT_TCPCLOSE,
		OPT_EXTUNIX,
		OPT_SHELL,
		OPT_LOCKS,
		OPT_CGMODE,
		OPT_EMPTYNS,
		OPT_DEDUP,
		OPT_LAZY,
		OPT_LSMPROFILE,
		OPT_LSMMOUNT
	};
	static const struct option longopts[] = {
	    {"bundle", required_argument, NULL, 'b'},
	    {"image-path", required_argument, NULL, OPT_IMAGE},
	    {"work-path", required_argument, NULL, OPT_WORK},
	    {"parent-path", required_argument, NULL, OPT_PARENT},
	    {"detach", no_argument, NULL, 'd'},
	    {"pid-file", required_argument, NULL, OPT_PIDFILE},
	    {"console-socket", required_argument, NULL, OPT_CONSOLE},
	    {"no-subreaper", no_argument, NULL, OPT_NOSUBREAPER},
	    {"no-pivot", no_argument, NULL, OPT_NOPIVOT},
	    {"tcp-established", no_argument, NULL, OPT_TCP},
	    {"tcp-close", no_argument, NULL, OPT_TCPCLOSE},
	    {"ext-unix-sk", no_argument, NULL, OPT_EXTUNIX},
	    {"shell-job", no_argument, NULL, OPT_SHELL},
	    {"file-locks", no_argument, NULL, OPT_LOCKS},
	    {"manage-cgroups-mode", required_argument, NULL, OPT_CGMODE},
	    {"empty-ns", required_argument, NULL, OPT_EMPTYNS},
	    {"auto-dedup", no_argument, NULL, OPT_DEDUP},
	    {"lazy-pages", no_argument, NULL, OPT_LAZY},
	    {"lsm-profile", required_argument, NULL, OPT_LSMPROFILE},
	    {"lsm-mount-context", required_argument, NULL, OPT_LSMMOUNT},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tern_ckpt_opts o = {.status_fd = -1};
	tern_create_opts copts = {.bundle = "."};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *criu = NULL;
	int c, ret, status = 0;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "+:b:dh", longopts, usage)) != -1) {
		switch (c) {
		case 'b':
			copts.bundle = optarg;
			break;
		case 'd':
			copts.detach = true;
			break;
		case OPT_IMAGE:
			o.image_path = optarg;
			break;
		case OPT_WORK:
			o.work_path = optarg;
			break;
		case OPT_PARENT:
			o.parent_path = optarg;
			break;
		case OPT_PIDFILE:
			copts.pid_file = optarg;
			break;
		case OPT_CONSOLE:
			copts.console_socket = optarg;
			break;
		case OPT_NOSUBREAPER:
			copts.no_subreaper = true;
			break;
		case OPT_NOPIVOT:
			copts.no_pivot = true;
			break;
		case OPT_TCP:
			o.tcp_established = true;
			break;
		case OPT_TCPCLOSE:
			o.tcp_close = true;
			break;
		case OPT_EXTUNIX:
			o.ext_unix_sk = true;
			break;
		case OPT_SHELL:
			o.shell_job = true;
			break;
		case OPT_LOCKS:
			o.file_locks = true;
			break;
		case OPT_CGMODE:
			o.manage_cgroups_mode = optarg;
			break;
		case OPT_EMPTYNS:
			o.empty_ns = tern_cli_strv_add(o.empty_ns, optarg);
			break;
		case OPT_DEDUP:
			o.auto_dedup = true;
			break;
		case OPT_LAZY:
			o.lazy_pages = true;
			break;
		case OPT_LSMPROFILE:
			o.lsm_profile = optarg;
			break;
		case OPT_LSMMOUNT:
			o.lsm_mount_context = optarg;
			break;
		}
	}
	tern_cli_require_args(argc, argv, 1, true, "restore", usage);
	ret = tern_criu_find(g->criu, &criu, &err);
	if (ret == 0)
		ret = tern_container_restore(&g->rt, criu, argv[optind], &copts, &o, &status, &err);
	free(o.empty_ns);
	if (ret < 0)
		return tern_error_report(err);
	return status;
}
