/* tern checkpoint [options] ID: dump a running container with CRIU. */
#include "checkpoint.h"
#include "cli.h"
#include "utils.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: tern checkpoint [options] CONTAINER-ID\n"
    "\n"
    "Checkpoint a running container with CRIU. Unless --leave-running, the\n"
    "container is stopped afterwards (its state is `stopped`; delete it, or\n"
    "restore the images under another id). The image directory also holds\n"
    "the container's config, so it can be restored under another --root and\n"
    "from another bundle path.\n"
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
    "  --lazy-pages                 leave memory to be fetched on demand (not\n"
    "                               available with this libcriu)\n"
    "  --status-fd FD               write a byte to FD when the dump is complete\n"
    "  -h, --help                   this help\n";

int tern_cmd_checkpoint(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_IMAGE = 256,
		OPT_WORK,
		OPT_PARENT,
		OPT_LEAVE,
		OPT_PREDUMP,
		OPT_TCP,
		OPT_EXTUNIX,
		OPT_SHELL,
		OPT_LOCKS,
		OPT_LINKREMAP,
		OPT_CGMODE,
		OPT_EMPTYNS,
		OPT_DEDUP,
		OPT_PAGESERVER,
		OPT_LAZY,
		OPT_STATUSFD
	};
	static const struct option longopts[] = {
	    {"image-path", required_argument, NULL, OPT_IMAGE},
	    {"work-path", required_argument, NULL, OPT_WORK},
	    {"parent-path", required_argument, NULL, OPT_PARENT},
	    {"leave-running", no_argument, NULL, OPT_LEAVE},
	    {"pre-dump", no_argument, NULL, OPT_PREDUMP},
	    {"tcp-established", no_argument, NULL, OPT_TCP},
	    {"ext-unix-sk", no_argument, NULL, OPT_EXTUNIX},
	    {"shell-job", no_argument, NULL, OPT_SHELL},
	    {"file-locks", no_argument, NULL, OPT_LOCKS},
	    {"link-remap", no_argument, NULL, OPT_LINKREMAP},
	    {"manage-cgroups-mode", required_argument, NULL, OPT_CGMODE},
	    {"empty-ns", required_argument, NULL, OPT_EMPTYNS},
	    {"auto-dedup", no_argument, NULL, OPT_DEDUP},
	    {"page-server", required_argument, NULL, OPT_PAGESERVER},
	    {"lazy-pages", no_argument, NULL, OPT_LAZY},
	    {"status-fd", required_argument, NULL, OPT_STATUSFD},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tern_ckpt_opts o = {.status_fd = -1};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *criu = NULL;
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "+:h", longopts, usage)) != -1) {
		switch (c) {
		case OPT_IMAGE:
			o.image_path = optarg;
			break;
		case OPT_WORK:
			o.work_path = optarg;
			break;
		case OPT_PARENT:
			o.parent_path = optarg;
			break;
		case OPT_LEAVE:
			o.leave_running = true;
			break;
		case OPT_PREDUMP:
			o.pre_dump = true;
			break;
		case OPT_TCP:
			o.tcp_established = true;
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
		case OPT_LINKREMAP:
			o.link_remap = true;
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
		case OPT_PAGESERVER:
			o.page_server = optarg;
			break;
		case OPT_LAZY:
			o.lazy_pages = true;
			break;
		case OPT_STATUSFD:
			o.status_fd = tern_cli_parse_int("status-fd", optarg);
			break;
		}
	}
	tern_cli_require_args(argc, argv, 1, true, "checkpoint", usage);
	ret = tern_criu_find(g->criu, &criu, &err);
	if (ret == 0)
		ret = tern_container_checkpoint(&g->rt, criu, argv[optind], &o, &err);
	free(o.empty_ns);
	if (ret < 0)
		return tern_error_report(err);
	return 0;
}
