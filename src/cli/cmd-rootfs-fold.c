/* tern rootfs-fold FROM TO (internal, in tern-migrate): make the tree at TO
 * what the tree at FROM is, writing only what differs, with the rootfs
 * sync of tern migrate (rootfs-sync.h) run locally. `tern delete` uses it
 * to copy a container's overlay, since a warm rollback, down into its
 * bundle's own rootfs (snapshot-warm.c). */
#include "cli.h"
#include "rootfs-sync.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static const char usage[] = "Usage: tern rootfs-fold FROM TO\n"
			    "\n"
			    "(internal to tern delete) make the tree at TO the same as the\n"
			    "tree at FROM, writing only what differs.\n";

static int feed(void *data, const void *buf, size_t len, tern_error **err)
{
	return tern_rootfs_applier_feed(data, buf, len, err);
}

int tern_cmd_rootfs_fold(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *manifest = NULL;
	tern_rootfs_applier *a = NULL;
	tern_rootfs_sender *s = NULL;
	size_t len = 0;
	int ret;

	(void)g;
	tern_cli_reset();
	while (tern_cli_next(argc, argv, "h", longopts, usage) != -1)
		;
	tern_cli_require_args(argc, argv, 2, true, "rootfs-fold", usage);
	cleanup_close int from = open(argv[optind], O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cleanup_close int to = open(argv[optind + 1], O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (from < 0 || to < 0) {
		tern_error_make(&err, errno, "`%s`", argv[optind + (from < 0 ? 0 : 1)]);
		return tern_error_report(err);
	}
	ret = tern_rootfs_manifest(to, &manifest, &len, &err);
	if (ret == 0)
		ret = tern_rootfs_applier_new(to, &a, &err);
	if (ret == 0)
		ret = tern_rootfs_sender_new(from, manifest, len, &s, &err);
	if (ret == 0)
		ret = tern_rootfs_sender_round(s, feed, a, NULL, &err);
	if (ret == 0)
		ret = tern_rootfs_applier_finish_round(a, &err);
	if (s)
		tern_rootfs_sender_free(s);
	if (a)
		tern_rootfs_applier_free(a);
	return ret < 0 ? tern_error_report(err) : 0;
}
