/* tern list [--format table|json] [--quiet] */
#include "cli.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yajl/yajl_gen.h>

static const char usage[] = "Usage: tern list [options]\n"
			    "\n"
			    "List the containers under --root.\n"
			    "\n"
			    "Options:\n"
			    "  -f, --format FORMAT   table (default) or json\n"
			    "  -q, --quiet           print only the ids\n"
			    "  -h, --help            this help\n";

typedef struct {
	oci_state *st;
	char pid[24];
	char *owner;
} row;

static char *owner_of(const char *root, const char *id)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", root, id);
	struct stat st;
	struct passwd *pw;

	if (stat(path, &st) < 0)
		return tern_xstrdup("");
	pw = getpwuid(st.st_uid);
	if (pw)
		return tern_xstrdup(pw->pw_name);
	return tern_strdup_printf("#%u", (unsigned)st.st_uid);
}

/* Columns as a tab writer lays them out: at least 12 wide, 3 spaces of
 * padding after the longest cell (what runc prints). */
static void print_table(row *rows, size_t n)
{
	const char *head[6] = {"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"};
	size_t w[5];

	for (int c = 0; c < 5; c++)
		w[c] = strlen(head[c]);
	for (size_t i = 0; i < n; i++) {
		const char *cells[5] = {rows[i].st->id, rows[i].pid, rows[i].st->status,
					rows[i].st->bundle, rows[i].st->created};
		for (int c = 0; c < 5; c++)
			if (cells[c] && strlen(cells[c]) > w[c])
				w[c] = strlen(cells[c]);
	}
	for (int c = 0; c < 5; c++) {
		w[c] += 3;
		if (w[c] < 12)
			w[c] = 12;
	}
	for (int c = 0; c < 5; c++)
		printf("%-*s", (int)w[c], head[c]);
	printf("%s\n", head[5]);
	for (size_t i = 0; i < n; i++) {
		const char *cells[5] = {rows[i].st->id, rows[i].pid, rows[i].st->status,
					rows[i].st->bundle, rows[i].st->created};
		for (int c = 0; c < 5; c++)
			printf("%-*s", (int)w[c], cells[c] ? cells[c] : "");
		printf("%s\n", rows[i].owner);
	}
}

static void gen_str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void print_json(row *rows, size_t n)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	const unsigned char *buf;
	size_t len;

	if (n == 0) {
		printf("null\n");
		yajl_gen_free(g);
		return;
	}
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++) {
		oci_state *s = rows[i].st;
		yajl_gen_map_open(g);
		gen_str(g, "ociVersion");
		gen_str(g, s->oci_version ? s->oci_version : "");
		gen_str(g, "id");
		gen_str(g, s->id);
		gen_str(g, "pid");
		yajl_gen_integer(g, s->pid);
		gen_str(g, "status");
		gen_str(g, s->status);
		gen_str(g, "bundle");
		gen_str(g, s->bundle ? s->bundle : "");
		gen_str(g, "rootfs");
		gen_str(g, s->rootfs ? s->rootfs : "");
		gen_str(g, "created");
		gen_str(g, s->created ? s->created : "");
		gen_str(g, "owner");
		gen_str(g, rows[i].owner);
		if (s->annotations.len > 0) {
			gen_str(g, "annotations");
			yajl_gen_map_open(g);
			for (size_t a = 0; a < s->annotations.len; a++) {
				gen_str(g, s->annotations.items[a].key);
				gen_str(g, s->annotations.items[a].value);
			}
			yajl_gen_map_close(g);
		}
		/* tern's own, only for a migrated container (as `tern state`) */
		if (s->migrated_to) {
			gen_str(g, "migratedTo");
			gen_str(g, s->migrated_to);
		}
		if (s->migrated_to && s->migrated_as) {
			gen_str(g, "migratedAs");
			gen_str(g, s->migrated_as);
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	fwrite(buf, 1, len, stdout);
	printf("\n");
	yajl_gen_free(g);
}

int tern_cmd_list(tern_global_opts *g, int argc, char **argv)
{
	static const struct option longopts[] = {{"format", required_argument, NULL, 'f'},
						 {"quiet", no_argument, NULL, 'q'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	cleanup_strv char **ids = NULL;
	const char *format = "table";
	bool quiet = false;
	row *rows;
	size_t n = 0;
	int c;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "f:qh", longopts, usage)) != -1) {
		if (c == 'f')
			format = optarg;
		else if (c == 'q')
			quiet = true;
	}
	if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0) {
		tern_error_make(&err, EINVAL, "--format `%s`: expected table or json", format);
		return tern_error_report(err);
	}
	if (tern_state_list_ids(g->rt.root, &ids, &err) < 0)
		return tern_error_report(err);
	rows = tern_xmalloc0((oci_strv_len(ids) + 1) * sizeof(row));
	for (char **id = ids; *id; id++) {
		tern_container_dir *dir = NULL;
		oci_state *st = NULL;
		/* a container deleted meanwhile is simply not listed */
		if (tern_container_peek(&g->rt, *id, &dir, &st, NULL) < 0)
			continue;
		tern_state_dir_free(dir);
		rows[n].st = st;
		snprintf(rows[n].pid, sizeof(rows[n].pid), "%d", st->pid);
		rows[n].owner = owner_of(g->rt.root, *id);
		n++;
	}
	if (quiet) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", rows[i].st->id);
	} else if (strcmp(format, "json") == 0) {
		print_json(rows, n);
	} else {
		print_table(rows, n);
	}
	for (size_t i = 0; i < n; i++) {
		oci_state_free(rows[i].st);
		free(rows[i].owner);
	}
	free(rows);
	return 0;
}
