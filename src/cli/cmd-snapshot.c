/* tern snapshot ID NAME | --list ID | --delete ID NAME (snapshot.h) */
#include "checkpoint.h"
#include "cli.h"
#include "criu-kdat.h"
#include "snapshot.h"
#include "utils.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

static const char usage[] =
    "Usage: tern snapshot [options] CONTAINER-ID NAME\n"
    "       tern snapshot --list [--format table|json] CONTAINER-ID\n"
    "       tern snapshot --delete CONTAINER-ID NAME\n"
    "\n"
    "Record a running container's whole state under NAME: its processes and\n"
    "memory (CRIU) and its root filesystem, at one instant. The container is\n"
    "frozen while it is recorded and runs on afterwards. `tern rollback`\n"
    "puts it back to a snapshot. A snapshot shares the files that did not\n"
    "change with the one before it. `tern delete` removes a container's\n"
    "snapshots unless given --keep-snapshots.\n"
    "\n"
    "Options:\n"
    "  --list                  list the snapshots of CONTAINER-ID\n"
    "  --delete                remove snapshot NAME\n"
    "  -f, --format FORMAT     text (default: snapshot prints the dump's progress\n"
    "                          on a terminal, else nothing; list a table) or\n"
    "                          json (the progress, then what it took; or the list)\n"
    "  --tcp-established       keep established TCP connections\n"
    "  --ext-unix-sk           allow unix sockets connected to the outside\n"
    "  --shell-job             allow a process attached to a shell/terminal\n"
    "  --file-locks            keep file locks\n"
    "  --link-remap            allow open files that were unlinked\n"
    "  --keep-warm             then make a warm spare of NAME in the background:\n"
    "                          its processes restored and held frozen, so that\n"
    "                          `tern rollback` to NAME is a swap of milliseconds\n"
    "                          (memory: a second copy of the container's)\n"
    "  -h, --help              this help\n"
    "(rollback uses the same flags as the snapshot was taken with)\n";

static void gen_str(yajl_gen g, const char *k, const char *v)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
	yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

static void gen_u64(yajl_gen g, const char *k, uint64_t v)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
	yajl_gen_integer(g, (long long)v);
}

/* milliseconds with two decimals (yajl_gen_double prints 17 digits) */
static void gen_ms(yajl_gen g, const char *k, uint64_t ns)
{
	char num[32];
	int n = snprintf(num, sizeof(num), "%llu.%02llu", (unsigned long long)(ns / 1000000),
			 (unsigned long long)(ns / 10000 % 100));

	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
	yajl_gen_number(g, num, (size_t)n);
}

static void print_gen(yajl_gen g)
{
	const unsigned char *buf;
	size_t len;

	yajl_gen_get_buf(g, &buf, &len);
	fwrite(buf, 1, len, stdout);
	printf("\n");
	yajl_gen_free(g);
}

void tern_snapshot_stats_json(const char *id, const char *name, const tern_snapshot_stats *s)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	yajl_gen_map_open(g);
	gen_str(g, "id", id);
	gen_str(g, "name", name);
	gen_ms(g, "total_ms", s->total_ns);
	gen_ms(g, "frozen_ms", s->frozen_ns);
	gen_ms(g, "fs_ms", s->fs_ns);
	gen_ms(g, "criu_ms", s->criu_ns);
	if (s->fill_ns)
		gen_ms(g, "fill_ms", s->fill_ns);
	gen_u64(g, "files_copied", s->files_copied);
	gen_u64(g, "files_linked", s->files_linked);
	gen_u64(g, "bytes_copied", s->bytes_copied);
	gen_u64(g, "entries_removed", s->entries_removed);
	if (s->bytes)
		gen_u64(g, "bytes", s->bytes);
	if (s->warm) {
		yajl_gen_string(g, (const unsigned char *)"warm", 4);
		yajl_gen_bool(g, 1);
	}
	if (s->spare) {
		yajl_gen_string(g, (const unsigned char *)"spare", 5);
		yajl_gen_bool(g, 1);
	}
	yajl_gen_map_close(g);
	print_gen(g);
}

static char *human_bytes(uint64_t b)
{
	if (b < 1024)
		return tern_strdup_printf("%lluB", (unsigned long long)b);
	if (b < 1024 * 1024)
		return tern_strdup_printf("%.1fKiB", (double)b / 1024);
	if (b < 1024ULL * 1024 * 1024)
		return tern_strdup_printf("%.1fMiB", (double)b / (1024 * 1024));
	return tern_strdup_printf("%.1fGiB", (double)b / (1024.0 * 1024 * 1024));
}

static int list(const char *root, const char *id, bool json)
{
	cleanup_error tern_error *err = NULL;
	tern_snapshot_info *v = NULL;
	size_t n = 0;

	if (tern_snapshot_list(root, id, &v, &n, &err) < 0)
		return tern_error_report(err);
	if (json) {
		yajl_gen g = yajl_gen_alloc(NULL);
		yajl_gen_array_open(g);
		for (size_t i = 0; i < n; i++) {
			yajl_gen_map_open(g);
			gen_str(g, "name", v[i].name);
			gen_str(g, "created", v[i].created ? v[i].created : "");
			gen_u64(g, "size", v[i].bytes);
			gen_str(g, "parent", v[i].parent ? v[i].parent : "");
			if (v[i].warm)
				gen_str(g, "warm", v[i].warm);
			if (v[i].spares_wanted || v[i].spares_ready || v[i].spares_failed) {
				yajl_gen_string(g, (const unsigned char *)"spares", 6);
				yajl_gen_map_open(g);
				gen_u64(g, "wanted", v[i].spares_wanted);
				gen_u64(g, "ready", v[i].spares_ready);
				yajl_gen_string(g, (const unsigned char *)"failed", 6);
				yajl_gen_bool(g, v[i].spares_failed);
				yajl_gen_map_close(g);
			}
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		print_gen(g);
	} else {
		size_t w = 4;
		for (size_t i = 0; i < n; i++)
			w = strlen(v[i].name) > w ? strlen(v[i].name) : w;
		printf("%-*s  %-30s  %-9s  %-8s  %s\n", (int)w, "NAME", "CREATED", "SIZE", "WARM",
		       "PARENT");
		for (size_t i = 0; i < n; i++) {
			cleanup_free char *size = human_bytes(v[i].bytes);
			printf("%-*s  %-30s  %-9s  %-8s  %s\n", (int)w, v[i].name,
			       v[i].created ? v[i].created : "", size, v[i].warm ? v[i].warm : "-",
			       v[i].parent && *v[i].parent ? v[i].parent : "-");
		}
	}
	for (size_t i = 0; i < n; i++)
		tern_snapshot_info_clear(&v[i]);
	free(v);
	return 0;
}

int tern_cmd_snapshot(tern_global_opts *g, int argc, char **argv)
{
	enum {
		OPT_LIST = 256,
		OPT_DELETE,
		OPT_TCP,
		OPT_EXTUNIX,
		OPT_SHELL,
		OPT_LOCKS,
		OPT_REMAP,
		OPT_WARM
	};
	static const struct option longopts[] = {
	    {"list", no_argument, NULL, OPT_LIST},
	    {"delete", no_argument, NULL, OPT_DELETE},
	    {"format", required_argument, NULL, 'f'},
	    {"tcp-established", no_argument, NULL, OPT_TCP},
	    {"ext-unix-sk", no_argument, NULL, OPT_EXTUNIX},
	    {"shell-job", no_argument, NULL, OPT_SHELL},
	    {"file-locks", no_argument, NULL, OPT_LOCKS},
	    {"link-remap", no_argument, NULL, OPT_REMAP},
	    {"keep-warm", no_argument, NULL, OPT_WARM},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	cleanup_error tern_error *err = NULL;
	cleanup_free char *criu = NULL;
	tern_snapshot_opts o = {0};
	tern_snapshot_stats stats;
	bool do_list = false, do_delete = false;
	const char *format = "text";
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "f:h", longopts, usage)) != -1) {
		switch (c) {
		case OPT_LIST:
			do_list = true;
			break;
		case OPT_DELETE:
			do_delete = true;
			break;
		case 'f':
			format = optarg;
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
		case OPT_REMAP:
			o.link_remap = true;
			break;
		case OPT_WARM:
			o.keep_warm = true;
			break;
		}
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "table") != 0 &&
	    strcmp(format, "json") != 0) {
		fprintf(stderr, "tern snapshot: --format `%s`: want text or json\n", format);
		return 1;
	}
	bool json = strcmp(format, "json") == 0;
	/* the dump's progress: JSON lines before the result, or text on a
	 * terminal (a script's stderr gets nothing) */
	o.progress_json = json;
	o.progress = json || isatty(STDERR_FILENO);
	if (do_list && do_delete) {
		fprintf(stderr, "tern snapshot: --list and --delete exclude each other\n");
		return 1;
	}
	if (do_list) {
		tern_cli_require_args(argc, argv, 1, true, "snapshot --list", usage);
		return list(g->rt.root, argv[optind], json);
	}
	tern_cli_require_args(argc, argv, 2, true, "snapshot", usage);
	const char *id = argv[optind], *name = argv[optind + 1];
	if (do_delete) {
		if (tern_snapshot_delete(g->rt.root, id, name, &err) < 0)
			return tern_error_report(err);
		return 0;
	}
	ret = tern_criu_find(g->criu, &criu, &err);
	if (ret == 0)
		tern_criu_kdat_prepare(criu);
	if (ret == 0)
		ret = tern_snapshot_take(&g->rt, criu, id, name, &o, &stats, &err);
	if (ret < 0)
		return tern_error_report(err);
	if (json)
		tern_snapshot_stats_json(id, name, &stats);
	return 0;
}
