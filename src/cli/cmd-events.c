/* tern events [--stats] [--interval D] ID: runc's JSON event stream, one
 * object per line: {"type":"stats","id":ID,"data":{...}} and
 * {"type":"oom","id":ID}. Field names are runc's; like runc (Go's
 * omitempty), zero counters are left out. */
#include "cli.h"
#include "cgroup.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_gen.h>

static const char usage[] =
    "Usage: tern events [options] CONTAINER-ID\n"
    "\n"
    "Print the container's events as JSON lines: resource statistics every\n"
    "--interval, and OOM notifications, until the container stops.\n"
    "\n"
    "Options:\n"
    "  --stats            print the statistics once and exit\n"
    "  --interval D       time between statistics (e.g. 5s, 500ms; default 5s)\n"
    "  -h, --help         this help\n";

static void key(yajl_gen g, const char *k)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

static void u64(yajl_gen g, const char *k, uint64_t v)
{
	if (v == 0)
		return;
	key(g, k);
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	yajl_gen_number(g, buf, (size_t)n);
}

static void u64_array(yajl_gen g, const char *k, const uint64_t *v, size_t n)
{
	if (v == NULL || n == 0)
		return;
	key(g, k);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++) {
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v[i]);
		yajl_gen_number(g, buf, (size_t)len);
	}
	yajl_gen_array_close(g);
}

static void memory_entry(yajl_gen g, const char *k, const tern_cgroup_memory_entry *e)
{
	key(g, k);
	yajl_gen_map_open(g);
	u64(g, "limit", e->limit);
	u64(g, "usage", e->usage);
	u64(g, "max", e->max);
	u64(g, "failcnt", e->failcnt);
	yajl_gen_map_close(g);
}

static void blkio_list(yajl_gen g, const char *k, const tern_cgroup_blkio_list *l)
{
	if (l->len == 0)
		return;
	key(g, k);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < l->len; i++) {
		yajl_gen_map_open(g);
		u64(g, "major", l->items[i].major);
		u64(g, "minor", l->items[i].minor);
		if (l->items[i].op && *l->items[i].op) {
			key(g, "op");
			key(g, l->items[i].op);
		}
		u64(g, "value", l->items[i].value);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static void gen_stats(yajl_gen g, const tern_cgroup_stats *s)
{
	key(g, "cpu");
	yajl_gen_map_open(g);
	key(g, "usage");
	yajl_gen_map_open(g);
	u64(g, "total", s->cpu_usage.total);
	u64_array(g, "percpu", s->cpu_usage.percpu, s->cpu_usage.n_cpus);
	u64_array(g, "percpu_kernel", s->cpu_usage.percpu_kernel, s->cpu_usage.n_cpus);
	u64_array(g, "percpu_user", s->cpu_usage.percpu_user, s->cpu_usage.n_cpus);
	u64(g, "kernel", s->cpu_usage.kernel);
	u64(g, "user", s->cpu_usage.user);
	yajl_gen_map_close(g);
	key(g, "throttling");
	yajl_gen_map_open(g);
	u64(g, "periods", s->cpu_throttling.periods);
	u64(g, "throttled_periods", s->cpu_throttling.throttled_periods);
	u64(g, "throttled_time", s->cpu_throttling.throttled_time);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);

	key(g, "memory");
	yajl_gen_map_open(g);
	if (s->has_memory) {
		u64(g, "cache", s->memory_cache);
		memory_entry(g, "usage", &s->memory_usage);
		memory_entry(g, "swap", &s->memory_swap);
		memory_entry(g, "kernel", &s->memory_kernel);
		memory_entry(g, "kernelTCP", &s->memory_kernel_tcp);
		if (s->memory_raw_len > 0) {
			key(g, "raw");
			yajl_gen_map_open(g);
			for (size_t i = 0; i < s->memory_raw_len; i++) {
				char buf[32];
				int n = snprintf(buf, sizeof(buf), "%llu",
						 (unsigned long long)s->memory_raw[i].value);
				key(g, s->memory_raw[i].key);
				yajl_gen_number(g, buf, (size_t)n);
			}
			yajl_gen_map_close(g);
		}
	}
	yajl_gen_map_close(g);

	key(g, "pids");
	yajl_gen_map_open(g);
	u64(g, "current", s->pids_current);
	u64(g, "limit", s->pids_limit);
	yajl_gen_map_close(g);

	key(g, "blkio");
	yajl_gen_map_open(g);
	blkio_list(g, "ioServiceBytesRecursive", &s->io_service_bytes_recursive);
	blkio_list(g, "ioServicedRecursive", &s->io_serviced_recursive);
	blkio_list(g, "ioQueueRecursive", &s->io_queued_recursive);
	blkio_list(g, "ioServiceTimeRecursive", &s->io_service_time_recursive);
	blkio_list(g, "ioWaitTimeRecursive", &s->io_wait_time_recursive);
	blkio_list(g, "ioMergedRecursive", &s->io_merged_recursive);
	blkio_list(g, "ioTimeRecursive", &s->io_time_recursive);
	blkio_list(g, "sectorsRecursive", &s->sectors_recursive);
	yajl_gen_map_close(g);

	key(g, "hugetlb");
	yajl_gen_map_open(g);
	for (size_t i = 0; i < s->hugetlb_len; i++) {
		key(g, s->hugetlb[i].pagesize);
		yajl_gen_map_open(g);
		u64(g, "usage", s->hugetlb[i].usage);
		u64(g, "max", s->hugetlb[i].max);
		u64(g, "failcnt", s->hugetlb[i].failcnt);
		yajl_gen_map_close(g);
	}
	yajl_gen_map_close(g);
}

static void print_event(const char *type, const char *id, const tern_cgroup_stats *s)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	const unsigned char *buf;
	size_t len;

	yajl_gen_map_open(g);
	key(g, "type");
	key(g, type);
	key(g, "id");
	key(g, id);
	if (s) {
		key(g, "data");
		yajl_gen_map_open(g);
		gen_stats(g, s);
		yajl_gen_map_close(g);
	}
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	fwrite(buf, 1, len, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	yajl_gen_free(g);
}

/* "5s", "500ms", "1m", "2" (seconds) -> milliseconds */
static long parse_interval(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double mult = 1000;

	if (end == s || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (strcmp(end, "s") == 0 || *end == '\0')
		mult = 1000;
	else if (strcmp(end, "m") == 0)
		mult = 60000;
	else
		return -1;
	long ms = (long)(v * mult);
	return ms > 0 ? ms : -1;
}

static int load_cgroup(tern_global_opts *g, const char *id, oci_state **st, tern_error **err)
{
	tern_container_dir *dir = NULL;
	int ret = tern_container_load(&g->rt, id, &dir, st, NULL, err);
	/* the lock is for lifecycle changes, not for a long-running reader */
	tern_state_dir_free(dir);
	/* stats and OOM events come from its cgroup: empty ones would lie */
	if (ret == 0 && tern_cgroup_require_mounts(&(*st)->cgroup_paths, err) < 0) {
		ret = tern_error_wrap(err, "events of container `%s`", id);
		oci_state_free(*st);
		*st = NULL;
	}
	return ret;
}

static int emit_stats(const char *id, const oci_state *st, tern_error **err)
{
	tern_cgroup_stats s = {0};
	int ret = tern_cgroup_stats_read(&st->cgroup_paths, &s, err);
	if (ret == 0)
		print_event("stats", id, &s);
	tern_cgroup_stats_free(&s);
	return ret;
}

int tern_cmd_events(tern_global_opts *g, int argc, char **argv)
{
	enum { OPT_STATS = 256, OPT_INTERVAL };
	static const struct option longopts[] = {
	    {"stats", no_argument, NULL, OPT_STATS},
	    {"interval", required_argument, NULL, OPT_INTERVAL},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0}};
	cleanup_error tern_error *err = NULL;
	bool once = false;
	long interval_ms = 5000;
	oci_state *st = NULL;
	int c, ret;

	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, "h", longopts, usage)) != -1) {
		if (c == OPT_STATS) {
			once = true;
		} else if (c == OPT_INTERVAL) {
			interval_ms = parse_interval(optarg);
			if (interval_ms < 0) {
				tern_error_make(&err, EINVAL,
						"--interval `%s`: expected e.g. 5s or 500ms",
						optarg);
				return tern_error_report(err);
			}
		}
	}
	tern_cli_require_args(argc, argv, 1, true, "events", usage);
	const char *id = argv[optind];
	if (load_cgroup(g, id, &st, &err) < 0)
		return tern_error_report(err);
	if (strcmp(st->status, "stopped") == 0) {
		oci_state_free(st);
		tern_error_make_quiet(&err, EINVAL, "container `%s` is not running", id);
		return tern_error_report(err);
	}
	if (once) {
		ret = emit_stats(id, st, &err);
		oci_state_free(st);
		return ret < 0 ? tern_error_report(err) : 0;
	}

	/* The stream: OOM events as they come, stats every interval, until
	 * the container is gone. */
	tern_cgroup_oom_watch w = {.v1_eventfd = -1};
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	ret = 0;
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left =
		    (next.tv_sec - now.tv_sec) * 1000 + (next.tv_nsec - now.tv_nsec) / 1000000;
		if (left <= 0) {
			if (emit_stats(id, st, NULL) < 0)
				break;
			next.tv_sec += interval_ms / 1000;
			next.tv_nsec += (interval_ms % 1000) * 1000000;
			if (next.tv_nsec >= 1000000000) {
				next.tv_sec++;
				next.tv_nsec -= 1000000000;
			}
			left = interval_ms;
		}
		/* wake at least every 200 ms to notice the container stopping */
		int r =
		    tern_cgroup_oom_wait(&st->cgroup_paths, &w, left < 200 ? (int)left : 200, NULL);
		if (r > 0)
			print_event("oom", id, NULL);
		oci_state *cur = NULL;
		if (load_cgroup(g, id, &cur, NULL) < 0)
			break;
		bool stopped = strcmp(cur->status, "stopped") == 0;
		oci_state_free(cur);
		if (stopped) {
			/* an OOM kill that stopped it may still be pending */
			if (tern_cgroup_oom_wait(&st->cgroup_paths, &w, 0, NULL) > 0)
				print_event("oom", id, NULL);
			break;
		}
	}
	tern_cgroup_oom_watch_close(&w);
	oci_state_free(st);
	return ret;
}
