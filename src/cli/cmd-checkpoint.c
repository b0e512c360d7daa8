/* tern checkpoint [options] ID: dump a running container with CRIU. */
#include "checkpoint.h"
#include "criu-kdat.h"
#include "cli.h"
#include "cmd-criu-opts.h"
#include "log.h"
#include "snapshot.h"
#include "utils.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: tern checkpoint [options] CONTAINER-ID\n"
    "\n"
    "Checkpoint a running container with CRIU. Unless --leave-running (or\n"
    "--pre-dump), the container is deleted afterwards, as runc does: its\n"
    "processes, state and cgroup go and its poststop hooks run (its snapshots\n"
    "stay), so it can be restored under the same id. The image directory also holds\n"
    "the container's config, so it can be restored under another --root and\n"
    "from another bundle path.\n"
    "\n"
    "A network namespace of the container's own that a new one would equal\n"
    "(only lo, its usual addresses, no routes or firewall tables, and no\n"
    "process that could have changed it: none with CAP_NET_ADMIN or\n"
    "CAP_SYS_ADMIN, no root with /proc/sys writable) is not dumped: the\n"
    "restore makes a new one, as create did.\n"
    "\n"
    "User namespaces: root checkpoints and restores containers with a user\n"
    "namespace (uid/gid maps, idmapped mounts), rootless ones included.\n"
    "Without root (rootless), checkpoint, restore and snapshot are refused\n"
    "before anything is done, with the reason: criu 4.2's unprivileged mode\n"
    "(criu with the file capability cap_checkpoint_restore, as\n"
    "scripts/install-criu.sh installs it) cannot dump a user namespace, which\n"
    "every rootless container has, nor keep TCP connections\n"
    "(--tcp-established) or restore lazily (--lazy-pages). See\n"
    "tern-checkpoint(1), USER NAMESPACES AND ROOTLESS.\n"
    "\n"
    "Options:\n"
    "  --image-path DIR             where to write the images (default ./checkpoint)\n"
    "  --work-path DIR              where criu writes its log (default: the image path)\n"
    "  --parent-path DIR            the previous pre-dump, relative to --image-path\n"
    "  --leave-running              keep the container running after the dump\n"
    "  --pre-dump                   dump memory only, keep running (needs soft-dirty)\n"
    "  --tcp-established            dump established TCP connections\n"
    "  --ext-unix-sk                allow unix sockets connected to the outside\n"
    "  --shell-job                  allow a process attached to a shell/terminal\n"
    "  --file-locks                 dump file locks\n"
    "  --link-remap                 allow open files that were unlinked\n"
    "  --manage-cgroups-mode MODE   soft (default), full, strict or ignore\n"
    "  --empty-ns NS                do not dump namespace NS (network)\n"
    "  --auto-dedup                 deduplicate against the parent images\n"
    "  --page-server IP:PORT        send memory pages to a criu page server\n"
    "  --lazy-pages                 leave memory behind, served on demand from\n"
    "                               --page-server until the restore has it all\n"
    "                               (the command returns only then)\n"
    "  --status-fd FD               write a byte to FD when the dump is complete\n"
    "                               (with --lazy-pages: when the restore may start)\n"
    "  -h, --help                   this help\n";

int tern_cmd_checkpoint(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_LEAVE = CKPT_OPT_NEXT,
		OPT_PREDUMP,
		OPT_LINKREMAP,
		OPT_PAGESERVER,
		OPT_STATUSFD
	};
	static const struct option longopts[] = {
	    CKPT_COMMON_LONGOPTS,
	    {"leave-running", no_argument, NULL, OPT_LEAVE},
	    {"pre-dump", no_argument, NULL, OPT_PREDUMP},
	    {"link-remap", no_argument, NULL, OPT_LINKREMAP},
	    {"page-server", required_argument, NULL, OPT_PAGESERVER},
	    {"status-fd", required_argument, NULL, OPT_STATUSFD},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	/* a network namespace a fresh one would equal is left out of the
	 * images (criu's own dump of it runs ip and iptables a dozen times):
	 * the restore makes a fresh one, as create did */
	tern_ckpt_opts o = {.status_fd = -1, .netns_fresh_if_plain = true};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *criu = NULL;
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, ":h", longopts, usage)) != -1) {
		if (tern_ckpt_common_opt(c, optarg, &o))
			continue;
		switch (c) {
		case OPT_LEAVE:
			o.leave_running = true;
			break;
		case OPT_PREDUMP:
			o.pre_dump = true;
			break;
		case OPT_LINKREMAP:
			o.link_remap = true;
			break;
		case OPT_PAGESERVER:
			o.page_server = optarg;
			break;
		case OPT_STATUSFD:
			o.status_fd = tern_cli_parse_int("status-fd", optarg);
			break;
		}
	}
	tern_cli_require_args(argc, argv, 1, true, "checkpoint", usage);
	ret = tern_criu_find(g->criu, &criu, &err);
	if (ret == 0) {
		tern_criu_kdat_prepare(criu);
		tern_ckpt_skip_known_checks(g->rt.root, criu, &o);
		ret = tern_container_checkpoint(&g->rt, criu, argv[optind], &o, &err);
	}
	/* runc destroys the container after a dump that stopped it, poststop
	 * hooks included, so that `restore` can take the same id. Only this
	 * command does: snapshot and migrate call the dump themselves. As in
	 * runc, a failed cleanup is only a warning: the images are whole. The
	 * snapshots stay: they are not the dump's to throw away. */
	if (ret == 0 && !o.leave_running && !o.pre_dump) {
		cleanup_error tern_error *del_err = NULL;
		if (tern_snapshot_container_delete(&g->rt, argv[optind], true, true, &del_err) < 0)
			tern_warn("checkpoint of `%s` is complete, but deleting the container "
				  "afterwards failed: %s",
				  argv[optind], del_err->msg);
	}
	free(o.empty_ns);
	if (ret < 0)
		return tern_error_report(err);
	return 0;
}

bool tern_ckpt_common_opt(int c, char *arg, tern_ckpt_opts *o)
{
	switch (c) {
	case CKPT_OPT_IMAGE:
		o->image_path = arg;
		return true;
	case CKPT_OPT_WORK:
		o->work_path = arg;
		return true;
	case CKPT_OPT_PARENT:
		o->parent_path = arg;
		return true;
	case CKPT_OPT_TCP:
		o->tcp_established = true;
		return true;
	case CKPT_OPT_EXTUNIX:
		o->ext_unix_sk = true;
		return true;
	case CKPT_OPT_SHELL:
		o->shell_job = true;
		return true;
	case CKPT_OPT_LOCKS:
		o->file_locks = true;
		return true;
	case CKPT_OPT_CGMODE:
		o->manage_cgroups_mode = arg;
		return true;
	case CKPT_OPT_EMPTYNS:
		o->empty_ns = tern_strv_add(o->empty_ns, arg);
		return true;
	case CKPT_OPT_DEDUP:
		o->auto_dedup = true;
		return true;
	case CKPT_OPT_LAZY:
		o->lazy_pages = true;
		return true;
	}
	return false;
}
