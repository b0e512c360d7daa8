#include "cli.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tern_command *tern_command_find(const char *name)
{
	for (const tern_command *c = tern_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void tern_cli_reset(void)
{
	optind = 0; /* glibc: 0 fully reinitialises getopt */
	opterr = 0;
}

/* getopt's '?' with optopt set to an option it knows: that option's value
 * was missing (optopt is a long option's val, or a short option's letter);
 * with optopt 0 or a letter it does not know, the option was unknown. */
static bool takes_value(int opt, const char *shortopts, const struct option *longopts)
{
	if (opt <= 0 || opt == '?')
		return false;
	if (opt < 256 && strchr(shortopts, opt))
		return true;
	for (const struct option *o = longopts; o && o->name; o++)
		if (o->flag == NULL && o->val == opt && o->has_arg == required_argument)
			return true;
	return false;
}

int tern_cli_next(int argc, char **argv, const char *shortopts, const struct option *longopts,
		  const char *usage)
{
	int idx = 0;
	int c = getopt_long_only(argc, argv, shortopts, longopts, &idx);

	if (c == 'h') {
		fputs(usage, stdout);
		exit(0);
	}
	if (c == '?' || c == ':') {
		const char *bad = argv[optind - 1];
		if (c == ':' || takes_value(optopt, shortopts, longopts))
			fprintf(stderr, "tern: option `%s` requires an argument\n", bad);
		else
			fprintf(stderr, "tern: unknown option `%s`\n", bad);
		fputs(usage, stderr);
		exit(1);
	}
	return c;
}

void tern_cli_require_args(int argc, char **argv, int n, bool exact, const char *cmd,
			   const char *usage)
{
	int have = argc - optind;

	if ((exact && have != n) || (!exact && have < n)) {
		if (have < n)
			fprintf(stderr, "tern: %s: %s\n", cmd,
				n == 1 ? "a container id is required" : "missing arguments");
		else
			fprintf(stderr, "tern: %s: too many arguments\n", cmd);
		fputs(usage, stderr);
		exit(1);
	}
	(void)argv;
}

int tern_cli_parse_int(const char *opt, const char *value)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (errno || end == value || *end || v < 0 || v > 1 << 20) {
		fprintf(stderr, "tern: --%s: invalid value `%s`\n", opt, value);
		exit(1);
	}
	return (int)v;
}

bool tern_cli_bool_value(const char *value)
{
	if (value == NULL)
		return true;
	return strcmp(value, "false") != 0 && strcmp(value, "0") != 0;
}

int tern_cli_parse_globals(int argc, char **argv, tern_global_opts *g, int *action)
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
	int c;

	*action = 0;
	opterr = 0;
	while ((c = getopt_long_only(argc, argv, "+vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ROOT:
			/* absolute once, here: every command and every helper it
			 * starts (lazy-pages daemon, filler, spares, tern-migrate)
			 * may run in another directory. The root need not exist
			 * yet; it lives as long as the process. */
			g->rt.root = *optarg ? tern_absolute_path(optarg) : optarg;
			if (g->rt.root == NULL) {
				fprintf(stderr, "tern: --root `%s`: %s\n", optarg, strerror(errno));
				return -1;
			}
			break;
		case OPT_LOG:
			g->log = optarg;
			break;
		case OPT_LOG_FORMAT:
			g->log_format = optarg;
			break;
		case OPT_DEBUG:
			g->debug = true;
			break;
		case OPT_SYSTEMD:
			g->rt.systemd_cgroup = true;
			break;
		case OPT_CRIU:
			g->criu = optarg;
			break;
		case OPT_ROOTLESS:
			if (strcmp(optarg, "auto") == 0) {
				g->rt.rootless = TERN_ROOTLESS_AUTO;
			} else if (strcmp(optarg, "true") == 0) {
				g->rt.rootless = TERN_ROOTLESS_ON;
			} else if (strcmp(optarg, "false") == 0) {
				g->rt.rootless = TERN_ROOTLESS_OFF;
			} else {
				fprintf(stderr, "tern: --rootless `%s`: want true, false or auto\n",
					optarg);
				return -1;
			}
			break;
		case 'v':
		case 'h':
			*action = c;
			return optind;
		default:
			fprintf(stderr, "tern: unknown or incomplete global option `%s`\n",
				argv[optind - 1]);
			return -1;
		}
	}
	return optind;
}
