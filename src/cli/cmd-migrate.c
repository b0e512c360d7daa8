/* tern migrate / tern migrate-receive: the command lines (see
 * man/tern-migrate.1). */
#include "cli.h"
#include "migrate.h"
#include "utils.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what the migration takes from the global options */
static tern_mig_env mig_env(const tern_global_opts *g)
{
	return (tern_mig_env){.rt = &g->rt, .criu = g->criu, .debug = g->debug};
}

static const char migrate_usage[] =
    "Usage: tern migrate --to IP:PORT --token-file FILE [options] CONTAINER-ID\n"
    "\n"
    "Move a running container to the node where `tern migrate-receive` listens\n"
    "on IP:PORT. Returns 0 once the container runs there; the container here is\n"
    "then deleted. On a failure before that it keeps running here.\n"
    "\n"
    "Options:\n"
    "  --to IP:PORT                 the receiver's address\n"
    "  --token-file FILE            the shared secret (mode 0600, at least 16 bytes)\n"
    "  --mode MODE                  auto (default: pre-copy where the kernel tracks\n"
    "                               dirty pages, else post-copy where it can, else\n"
    "                               stop-and-copy), pre-copy, post-copy, stop-and-copy\n"
    "  --tcp-established            move established TCP connections too\n"
    "  --with-snapshots             send the container's snapshots along: the\n"
    "                               target keeps them under the same names\n"
    "  --drop-snapshots             delete the container's snapshots with it\n"
    "                               (a container that has snapshots is refused\n"
    "                               without one of these two)\n"
    "  --max-rounds N               pre-copy: at most N memory rounds while it runs\n"
    "                               (default 5)\n"
    "  --criu-timeout SECONDS       kill a criu dump that takes longer and keep the\n"
    "                               container here (default: $TERN_CRIU_TIMEOUT,\n"
    "                               else 300)\n"
    "  --format text|json           progress as text on stderr (default) or one\n"
    "                               JSON object per event on stdout\n"
    "  -h, --help                   this help\n";

static const char receive_usage[] =
    "Usage: tern migrate-receive --listen IP:PORT --bundle DIR --token-file FILE [options]\n"
    "\n"
    "Wait for one migration, restore the container detached from the bundle DIR\n"
    "(its rootfs is brought up to date with the source's; its config.json is\n"
    "used if present, else the source's is written there), and exit 0 once it\n"
    "runs here.\n"
    "\n"
    "Options:\n"
    "  --listen IP:PORT             where to listen (PORT 0: any free port)\n"
    "  -b, --bundle DIR             the bundle to restore into\n"
    "  --token-file FILE            the shared secret (mode 0600, at least 16 bytes)\n"
    "  --id NEW-ID                  restore under this id (default: the source's)\n"
    "  --timeout SECONDS            give up when no source connects in time\n"
    "  --handshake-timeout SECONDS  refuse a connection that has not proved the\n"
    "                               token within SECONDS (default 5)\n"
    "  --max-failed-peers N         give up after N refused connections (port\n"
    "                               scans, wrong tokens; default 16)\n"
    "  --criu-timeout SECONDS       kill a criu restore or lazy-pages that takes\n"
    "                               longer and give up (default: $TERN_CRIU_TIMEOUT,\n"
    "                               else 300)\n"
    "  --format text|json           progress as text on stderr (default) or JSON\n"
    "                               lines on stdout\n"
    "  -h, --help                   this help\n";

static bool parse_format(const char *v)
{
	if (strcmp(v, "json") == 0)
		return true;
	if (strcmp(v, "text") != 0) {
		fprintf(stderr, "tern: --format `%s`: want text or json\n", v);
		exit(1);
	}
	return false;
}

static int positive(const char *flag, const char *value)
{
	int v = tern_cli_parse_int(flag, value);

	if (v == 0) {
		fprintf(stderr, "tern: --%s: want at least 1\n", flag);
		exit(1);
	}
	return v;
}

/* --criu-timeout's seconds, kept in ms */
static int criu_timeout(const char *value)
{
	int v = positive("criu-timeout", value);

	if (v > INT_MAX / 1000) {
		fprintf(stderr, "tern: --criu-timeout: want at most %d\n", INT_MAX / 1000);
		exit(1);
	}
	return v * 1000;
}

/* TERN_CRIU_TIMEOUT, or the default: what --criu-timeout overrides */
static int criu_timeout_default(void)
{
	cleanup_error tern_error *err = NULL;
	int ms;

	if (tern_mig_criu_timeout_env(&ms, &err) < 0) {
		fprintf(stderr, "tern: %s\n", err->msg);
		exit(1);
	}
	return ms;
}

static void require(const char *value, const char *flag, const char *cmd, const char *usage)
{
	if (value == NULL) {
		fprintf(stderr, "tern: %s: %s is required\n", cmd, flag);
		fputs(usage, stderr);
		exit(1);
	}
}

int tern_cmd_migrate(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_TO = 256,
		OPT_TOKEN,
		OPT_MODE,
		OPT_TCP,
		OPT_ROUNDS,
		OPT_FORMAT,
		OPT_CRIU_TIMEOUT,
		OPT_WITH_SNAPS,
		OPT_DROP_SNAPS
	};
	static const struct option longopts[] = {
	    {"to", required_argument, NULL, OPT_TO},
	    {"with-snapshots", no_argument, NULL, OPT_WITH_SNAPS},
	    {"drop-snapshots", no_argument, NULL, OPT_DROP_SNAPS},
	    {"token-file", required_argument, NULL, OPT_TOKEN},
	    {"mode", required_argument, NULL, OPT_MODE},
	    {"tcp-established", no_argument, NULL, OPT_TCP},
	    {"max-rounds", required_argument, NULL, OPT_ROUNDS},
	    {"criu-timeout", required_argument, NULL, OPT_CRIU_TIMEOUT},
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tern_migrate_opts o = {.max_rounds = 5, .criu_timeout_ms = criu_timeout_default()};
	cleanup_error tern_error *err = NULL;
	int c;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, ":h", longopts, migrate_usage)) != -1) {
		switch (c) {
		case OPT_TO:
			o.to = optarg;
			break;
		case OPT_TOKEN:
			o.token_file = optarg;
			break;
		case OPT_MODE:
			if (tern_mig_mode_parse(optarg, &o.mode) < 0) {
				fprintf(stderr,
					"tern: --mode `%s`: want auto, pre-copy, post-copy or "
					"stop-and-copy\n",
					optarg);
				return 1;
			}
			break;
		case OPT_TCP:
			o.tcp_established = true;
			break;
		case OPT_WITH_SNAPS:
			o.with_snapshots = true;
			break;
		case OPT_DROP_SNAPS:
			o.drop_snapshots = true;
			break;
		case OPT_ROUNDS:
			o.max_rounds = tern_cli_parse_int("max-rounds", optarg);
			break;
		case OPT_CRIU_TIMEOUT:
			o.criu_timeout_ms = criu_timeout(optarg);
			break;
		case OPT_FORMAT:
			o.json = parse_format(optarg);
			break;
		}
	}
	tern_cli_require_args(argc, argv, 1, true, "migrate", migrate_usage);
	require(o.to, "--to IP:PORT", "migrate", migrate_usage);
	require(o.token_file, "--token-file FILE", "migrate", migrate_usage);
	if (o.with_snapshots && o.drop_snapshots) {
		fprintf(stderr, "tern: migrate: --with-snapshots and --drop-snapshots exclude each "
				"other\n");
		return 1;
	}
	o.id = argv[optind];
	tern_mig_env env = mig_env(g);
	if (tern_migrate_source(&env, &o, &err) < 0)
		return tern_error_report(err);
	return 0;
}

int tern_cmd_migrate_receive(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_LISTEN = 256,
		OPT_TOKEN,
		OPT_ID,
		OPT_TIMEOUT,
		OPT_FORMAT,
		OPT_HANDSHAKE_TIMEOUT,
		OPT_MAX_FAILED,
		OPT_CRIU_TIMEOUT
	};
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, OPT_LISTEN},
	    {"bundle", required_argument, NULL, 'b'},
	    {"token-file", required_argument, NULL, OPT_TOKEN},
	    {"id", required_argument, NULL, OPT_ID},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE_TIMEOUT},
	    {"max-failed-peers", required_argument, NULL, OPT_MAX_FAILED},
	    {"criu-timeout", required_argument, NULL, OPT_CRIU_TIMEOUT},
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tern_receive_opts o = {.timeout_ms = -1,
			       .handshake_timeout_ms = TERN_MIG_HANDSHAKE_TIMEOUT_S * 1000,
			       .max_failed_peers = TERN_MIG_MAX_FAILED_PEERS,
			       .criu_timeout_ms = criu_timeout_default()};
	cleanup_error tern_error *err = NULL;
	int c;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, ":b:h", longopts, receive_usage)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			o.listen = optarg;
			break;
		case 'b':
			o.bundle = optarg;
			break;
		case OPT_TOKEN:
			o.token_file = optarg;
			break;
		case OPT_ID:
			o.new_id = optarg;
			break;
		case OPT_TIMEOUT:
			o.timeout_ms = tern_cli_parse_int("timeout", optarg) * 1000;
			break;
		case OPT_HANDSHAKE_TIMEOUT:
			o.handshake_timeout_ms = positive("handshake-timeout", optarg) * 1000;
			break;
		case OPT_MAX_FAILED:
			o.max_failed_peers = positive("max-failed-peers", optarg);
			break;
		case OPT_CRIU_TIMEOUT:
			o.criu_timeout_ms = criu_timeout(optarg);
			break;
		case OPT_FORMAT:
			o.json = parse_format(optarg);
			break;
		}
	}
	tern_cli_require_args(argc, argv, 0, true, "migrate-receive", receive_usage);
	require(o.listen, "--listen IP:PORT", "migrate-receive", receive_usage);
	require(o.bundle, "--bundle DIR", "migrate-receive", receive_usage);
	require(o.token_file, "--token-file FILE", "migrate-receive", receive_usage);
	tern_mig_env env = mig_env(g);
	if (tern_migrate_target(&env, &o, &err) < 0)
		return tern_error_report(err);
	return 0;
}
