/* tern spec [--rootless] [--bundle DIR]: write a default config.json. */
#include "cli.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "Usage: tern spec [options]\n"
			    "\n"
			    "Write a default config.json (the same one runc writes) into the\n"
			    "bundle directory.\n"
			    "\n"
			    "Options:\n"
			    "  -b, --bundle DIR   where to write it (default: current directory)\n"
			    "  --rootless         a config for an unprivileged user\n"
			    "  -h, --help         this help\n";

int tern_cmd_spec(tern_global_opts *g, int argc, char **argv)
{
	enum { OPT_ROOTLESS = 256 };
	static const struct option longopts[] = {{"bundle", required_argument, NULL, 'b'},
						 {"rootless", no_argument, NULL, OPT_ROOTLESS},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *json = NULL;
	cleanup_free char *path = NULL;
	const char *bundle = ".";
	bool rootless = false;
	int c, fd;

	(void)g;
	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "b:h", longopts, usage)) != -1) {
		if (c == 'b')
			bundle = optarg;
		else if (c == OPT_ROOTLESS)
			rootless = true;
	}
	tern_cli_require_args(argc, argv, 0, true, "spec", usage);
	json = oci_default_spec_json(rootless);
	if (json == NULL) {
		tern_error_make(&err, ENOMEM, "generate the default config.json");
		return tern_error_report(err);
	}
	path = tern_strdup_printf("%s/config.json", bundle);
	/* O_EXCL: never overwrite someone's config (runc refuses too) */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0) {
		if (errno == EEXIST)
			tern_error_make(&err, EEXIST, "`%s` exists: remove it first", path);
		else
			tern_error_make(&err, errno, "write `%s`", path);
		return tern_error_report(err);
	}
	int ret = tern_write_all(fd, json, strlen(json));
	close(fd);
	if (ret < 0) {
		tern_error_make(&err, -ret, "write `%s`", path);
		return tern_error_report(err);
	}
	return 0;
}
