/* The CRIU options `checkpoint` and `restore` share (cmd-criu-opts.h): the
 * command line (one argument per line) through tern's option table and its
 * parser, then the check of their values as they are set on libcriu's
 * options (--manage-cgroups-mode, --empty-ns, ...). criu itself is never
 * started: the options say criu was already checked. */
#include "checkpoint.h"
#include "cmd-criu-opts.h"

#include "fuzz-util.h"

#include <criu/criu.h>
#include <getopt.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct option longopts[] = {CKPT_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
	char **lines = fuzz_lines(data, size, 64);
	size_t n = fuzz_strv_len(lines);
	char **argv = calloc(n + 2, sizeof(char *));
	tern_ckpt_opts o = {0};
	criu_opts *opts = NULL;
	tern_error *err = NULL;
	int c;

	if (argv == NULL)
		abort();
	argv[0] = (char *)"checkpoint";
	memcpy(argv + 1, lines, n * sizeof(char *));
	tern_cli_reset();
	opterr = 0;
	while ((c = getopt_long_only((int)n + 1, argv, "+", longopts, NULL)) != -1)
		tern_ckpt_common_opt(c, optarg, &o);
	o.criu_checked = true;
	if (criu_local_init_opts(&opts) < 0)
		abort();
	tern_ckpt_apply_common(opts, &o, &err);
	tern_error_free(err);
	criu_local_free_opts(opts);
	free(o.empty_ns);
	free(argv);
	fuzz_strv_free(lines);
	return 0;
}
