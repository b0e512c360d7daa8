/* tern restore [options] ID: a new container from a CRIU checkpoint. */
#include "checkpoint.h"
#include "container.h"
#include "criu-kdat.h"
#include "cli.h"
#include "cmd-criu-opts.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
    "  --lazy-pages                 fetch memory on demand from `criu lazy-pages`,\n"
    "                               listening in --work-path (its socket is\n"
    "                               awaited for up to 5 s)\n"
    "  --lsm-profile TYPE:NAME      LSM profile for the restored processes\n"
    "  --lsm-mount-context CTX      LSM mount context for the restored mounts\n"
    "  -h, --help                   this help\n";

/* A detached restore takes its memory through `criu lazy-pages` reading
 * the images, as rollback and clone do (tern_restore_filled): 256 MiB in
 * about a third of the time. It returns once every page is in; a fill that
 * fails deletes the container (its memory would read as zeros). Not when
 * the caller asked for lazy pages or dedup itself. */
struct restored {
	const tern_runtime *rt;
	const char *id;
};

static void delete_restored(void *data)
{
	struct restored *r = data;
	tern_error *e = NULL;

	if (tern_container_delete(r->rt, r->id, true, &e) < 0) {
		tern_warn("%s", e->msg);
		tern_error_free(e);
	}
}

static int restore(const tern_global_opts *g, const char *criu, const char *id,
		   const tern_create_opts *copts, tern_ckpt_opts *o, int *status, tern_error **err)
{
	const char *images = o->image_path ? o->image_path : "checkpoint";
	struct restored r = {.rt = &g->rt, .id = id};
	uint64_t criu_ns, fill_ns;

	if (!copts->detach || o->lazy_pages || o->auto_dedup)
		return tern_container_restore(&g->rt, criu, id, copts, o, status, err);
	return tern_restore_filled(&g->rt, criu, id, copts, o, images,
				   o->work_path ? o->work_path : images, delete_restored, &r, false,
				   status, &criu_ns, &fill_ns, err);
}

int tern_cmd_restore(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_PIDFILE = CKPT_OPT_NEXT,
		OPT_CONSOLE,
		OPT_NOSUBREAPER,
		OPT_NOPIVOT,
		OPT_TCPCLOSE,
		OPT_LSMPROFILE,
		OPT_LSMMOUNT
	};
	static const struct option longopts[] = {
	    CKPT_COMMON_LONGOPTS,
	    {"bundle", required_argument, NULL, 'b'},
	    {"detach", no_argument, NULL, 'd'},
	    {"pid-file", required_argument, NULL, OPT_PIDFILE},
	    {"console-socket", required_argument, NULL, OPT_CONSOLE},
	    {"no-subreaper", no_argument, NULL, OPT_NOSUBREAPER},
	    {"no-pivot", no_argument, NULL, OPT_NOPIVOT},
	    {"tcp-close", no_argument, NULL, OPT_TCPCLOSE},
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
	while ((c = tern_cli_next(argc, argv, ":b:dh", longopts, usage)) != -1) {
		if (tern_ckpt_common_opt(c, optarg, &o))
			continue;
		switch (c) {
		case 'b':
			copts.bundle = optarg;
			break;
		case 'd':
			copts.detach = true;
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
		case OPT_TCPCLOSE:
			o.tcp_close = true;
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
	if (ret == 0) {
		tern_criu_kdat_prepare(criu);
		tern_ckpt_skip_known_checks(g->rt.root, criu, &o);
		ret = restore(g, criu, argv[optind], &copts, &o, &status, &err);
	}
	free(o.empty_ns);
	if (ret < 0)
		return tern_error_report(err);
	return status;
}
