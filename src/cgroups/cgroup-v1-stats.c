/* cgroup v1: what a hierarchy's directory reports back: the usage counters
 * of each controller, and the OOM notification through an eventfd
 * (cgroup.event_control). */
#include "cgroup-v1.h"
#include "cgroup-v1-internal.h"
#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ---- stats ---- */

static void read_memory_entry(const char *dir, const char *prefix, tern_cgroup_memory_entry *e)
{
	static const struct {
		const char *suffix;
		size_t off;
	} files[] = {
	    {"limit_in_bytes", offsetof(tern_cgroup_memory_entry, limit)},
	    {"usage_in_bytes", offsetof(tern_cgroup_memory_entry, usage)},
	    {"max_usage_in_bytes", offsetof(tern_cgroup_memory_entry, max)},
	    {"failcnt", offsetof(tern_cgroup_memory_entry, failcnt)},
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		cleanup_free char *f = tern_strdup_printf("%s.%s", prefix, files[i].suffix);
		uint64_t v;
		if (tern_cgv1_read_u64(dir, f, &v) == 0)
			*(uint64_t *)((char *)e + files[i].off) = v;
	}
}

static void push_kv(tern_cgroup_stats *s, const char *key, uint64_t value)
{
	s->memory_raw = realloc(s->memory_raw, (s->memory_raw_len + 1) * sizeof(*s->memory_raw));
	if (s->memory_raw == NULL)
		abort();
	s->memory_raw[s->memory_raw_len].key = tern_xstrdup(key);
	s->memory_raw[s->memory_raw_len].value = value;
	s->memory_raw_len++;
}

static int stats_memory(const char *dir, tern_cgroup_stats *s, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/memory.stat", dir);
	cleanup_free char *data = NULL;
	char *save = NULL;
	int ret = tern_read_file(path, &data, NULL, 0, err);

	if (ret < 0)
		return ret;
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[128];
		uint64_t v;
		if (sscanf(line, "%127s %" SCNu64, key, &v) != 2)
			continue;
		push_kv(s, key, v);
		if (strcmp(key, "cache") == 0)
			s->memory_cache = v;
	}
	read_memory_entry(dir, "memory", &s->memory_usage);
	read_memory_entry(dir, "memory.memsw", &s->memory_swap);
	read_memory_entry(dir, "memory.kmem", &s->memory_kernel);
	read_memory_entry(dir, "memory.kmem.tcp", &s->memory_kernel_tcp);
	s->has_memory = true;
	return 0;
}

/* Numbers separated by blanks, e.g. cpuacct.usage_percpu. */
static size_t parse_numbers(const char *data, uint64_t **out)
{
	size_t n = 0;
	const char *p = data;
	char *end;

	*out = NULL;
	for (;;) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!isdigit((unsigned char)*p))
			break;
		uint64_t v = strtoull(p, &end, 10);
		p = end;
		*out = realloc(*out, (n + 1) * sizeof(uint64_t));
		if (*out == NULL)
			abort();
		(*out)[n++] = v;
	}
	return n;
}

static void stats_cpuacct(const char *dir, tern_cgroup_stats *s)
{
	tern_cgroup_cpu_usage *u = &s->cpu_usage;
	cleanup_free char *percpu_path = tern_strdup_printf("%s/cpuacct.usage_percpu", dir);
	cleanup_free char *all_path = tern_strdup_printf("%s/cpuacct.usage_all", dir);
	cleanup_free char *stat_path = tern_strdup_printf("%s/cpuacct.stat", dir);
	cleanup_free char *data = NULL;
	char *save = NULL;

	tern_cgv1_read_u64(dir, "cpuacct.usage", &u->total);
	if (tern_read_file(percpu_path, &data, NULL, 0, NULL) == 0) {
		free(u->percpu);
		u->n_cpus = parse_numbers(data, &u->percpu);
	}
	free(data);
	data = NULL;
	/* "cpu user system" then one line per cpu, in ns */
	if (tern_read_file(all_path, &data, NULL, 0, NULL) == 0 && u->n_cpus > 0) {
		free(u->percpu_user);
		free(u->percpu_kernel);
		u->percpu_user = tern_xmalloc0(u->n_cpus * sizeof(uint64_t));
		u->percpu_kernel = tern_xmalloc0(u->n_cpus * sizeof(uint64_t));
		for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			unsigned long cpu;
			uint64_t user, sys;
			if (sscanf(l, "%lu %" SCNu64 " %" SCNu64, &cpu, &user, &sys) == 3 &&
			    cpu < u->n_cpus) {
				u->percpu_user[cpu] = user;
				u->percpu_kernel[cpu] = sys;
			}
		}
	}
	free(data);
	data = NULL;
	/* cpuacct.stat counts clock ticks; runc reports ns */
	if (tern_read_file(stat_path, &data, NULL, 0, NULL) == 0) {
		long hz = sysconf(_SC_CLK_TCK);
		uint64_t per_tick = hz > 0 ? 1000000000ULL / (uint64_t)hz : 10000000ULL;
		for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			uint64_t v;
			if (sscanf(l, "user %" SCNu64, &v) == 1)
				u->user = v * per_tick;
			else if (sscanf(l, "system %" SCNu64, &v) == 1)
				u->kernel = v * per_tick;
		}
	}
	s->has_cpu = true;
}

static void stats_cpu(const char *dir, tern_cgroup_stats *s)
{
	cleanup_free char *path = tern_strdup_printf("%s/cpu.stat", dir);
	cleanup_free char *data = NULL;
	char *save = NULL;

	if (tern_read_file(path, &data, NULL, 0, NULL) < 0)
		return;
	for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		uint64_t v;
		if (sscanf(l, "nr_periods %" SCNu64, &v) == 1)
			s->cpu_throttling.periods = v;
		else if (sscanf(l, "nr_throttled %" SCNu64, &v) == 1)
			s->cpu_throttling.throttled_periods = v;
		else if (sscanf(l, "throttled_time %" SCNu64, &v) == 1)
			s->cpu_throttling.throttled_time = v;
	}
	s->has_cpu = true;
}

static void stats_pids(const char *dir, tern_cgroup_stats *s)
{
	uint64_t max = 0;

	tern_cgv1_read_u64(dir, "pids.current", &s->pids_current);
	if (tern_cgv1_read_u64(dir, "pids.max", &max) == 0)
		s->pids_limit = max == UINT64_MAX ? 0 : max;
	s->has_pids = true;
}

/* Lines "MAJ:MIN Op value", "MAJ:MIN value" (no op) or "Total value". A
 * missing file leaves the list empty. */
static void read_blkio_list(const char *dir, const char *file, tern_cgroup_blkio_list *l)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, file);
	cleanup_free char *data = NULL;
	char *save = NULL;

	if (tern_read_file(path, &data, NULL, 0, NULL) < 0)
		return;
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t maj, min, v;
		char op[32] = "";
		if (sscanf(line, "%" SCNu64 ":%" SCNu64 " %31s %" SCNu64, &maj, &min, op, &v) !=
		    4) {
			op[0] = '\0';
			if (sscanf(line, "%" SCNu64 ":%" SCNu64 " %" SCNu64, &maj, &min, &v) != 3)
				continue; /* "Total N" and anything unknown */
		}
		l->items = realloc(l->items, (l->len + 1) * sizeof(*l->items));
		if (l->items == NULL)
			abort();
		l->items[l->len++] = (tern_cgroup_blkio_entry){maj, min, tern_xstrdup(op), v};
	}
}

static void stats_blkio(const char *dir, tern_cgroup_stats *s)
{
	/* CFQ files when the kernel has them, else BFQ's, else what the
	 * throttle layer counts (always there), as runc does */
	if (tern_cgv1_file_exists(dir, "blkio.io_serviced_recursive")) {
		read_blkio_list(dir, "blkio.io_service_bytes_recursive",
				&s->io_service_bytes_recursive);
		read_blkio_list(dir, "blkio.io_serviced_recursive", &s->io_serviced_recursive);
		read_blkio_list(dir, "blkio.io_queued_recursive", &s->io_queued_recursive);
		read_blkio_list(dir, "blkio.io_service_time_recursive",
				&s->io_service_time_recursive);
		read_blkio_list(dir, "blkio.io_wait_time_recursive", &s->io_wait_time_recursive);
		read_blkio_list(dir, "blkio.io_merged_recursive", &s->io_merged_recursive);
		read_blkio_list(dir, "blkio.time_recursive", &s->io_time_recursive);
		read_blkio_list(dir, "blkio.sectors_recursive", &s->sectors_recursive);
	} else if (tern_cgv1_file_exists(dir, "blkio.bfq.io_serviced_recursive")) {
		read_blkio_list(dir, "blkio.bfq.io_service_bytes_recursive",
				&s->io_service_bytes_recursive);
		read_blkio_list(dir, "blkio.bfq.io_serviced_recursive", &s->io_serviced_recursive);
	} else {
		read_blkio_list(dir, "blkio.throttle.io_service_bytes_recursive",
				&s->io_service_bytes_recursive);
		read_blkio_list(dir, "blkio.throttle.io_serviced_recursive",
				&s->io_serviced_recursive);
	}
	s->has_blkio = true;
}

static int stats_hugetlb(const char *dir, tern_cgroup_stats *s, tern_error **err)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return tern_error_make(err, errno, "open `%s`", dir);
	while ((e = readdir(d)) != NULL) {
		/* hugetlb.<size>.limit_in_bytes, not the .rsvd. variant */
		const char *name = e->d_name, *suffix = ".limit_in_bytes";
		size_t len = strlen(name), sl = strlen(suffix);
		if (strncmp(name, "hugetlb.", 8) != 0 || len <= 8 + sl ||
		    strcmp(name + len - sl, suffix) != 0 || strstr(name, ".rsvd.") != NULL)
			continue;
		cleanup_free char *size = strndup(name + 8, len - 8 - sl);
		if (size == NULL)
			abort();
		cleanup_free char *usage = tern_strdup_printf("hugetlb.%s.usage_in_bytes", size);
		cleanup_free char *max = tern_strdup_printf("hugetlb.%s.max_usage_in_bytes", size);
		cleanup_free char *failcnt = tern_strdup_printf("hugetlb.%s.failcnt", size);
		tern_cgroup_hugetlb_entry h = {.pagesize = NULL};
		tern_cgv1_read_u64(dir, usage, &h.usage);
		tern_cgv1_read_u64(dir, max, &h.max);
		tern_cgv1_read_u64(dir, failcnt, &h.failcnt);
		h.pagesize = steal_pointer(&size);
		s->hugetlb = realloc(s->hugetlb, (s->hugetlb_len + 1) * sizeof(*s->hugetlb));
		if (s->hugetlb == NULL)
			abort();
		s->hugetlb[s->hugetlb_len++] = h;
	}
	closedir(d);
	s->has_hugetlb = true;
	return 0;
}

int tern_cgroup_v1_stats(const char *dir, const char *controllers, tern_cgroup_stats *s,
			 tern_error **err)
{
	int ret = 0;

	if (tern_cgv1_has_ctrl(controllers, "cpuacct"))
		stats_cpuacct(dir, s);
	if (tern_cgv1_has_ctrl(controllers, "cpu"))
		stats_cpu(dir, s);
	if (tern_cgv1_has_ctrl(controllers, "pids"))
		stats_pids(dir, s);
	if (tern_cgv1_has_ctrl(controllers, "blkio"))
		stats_blkio(dir, s);
	if (tern_cgv1_has_ctrl(controllers, "memory"))
		ret = stats_memory(dir, s, err);
	if (ret == 0 && tern_cgv1_has_ctrl(controllers, "hugetlb"))
		ret = stats_hugetlb(dir, s, err);
	if (ret < 0)
		return tern_error_wrap(err, "stats of cgroup `%s`", dir);
	return 0;
}

/* ---- OOM notification ---- */

int tern_cgroup_v1_oom_eventfd(const char *dir, tern_error **err)
{
	cleanup_free char *oc_path = tern_strdup_printf("%s/memory.oom_control", dir);
	cleanup_close int efd = eventfd(0, EFD_CLOEXEC);
	cleanup_close int ocfd = -1;
	char line[64];
	int ret;

	if (efd < 0)
		return tern_error_make(err, errno, "eventfd");
	ocfd = open(oc_path, O_RDONLY | O_CLOEXEC);
	if (ocfd < 0)
		return tern_error_make(err, errno, "open `%s`", oc_path);
	/* "<eventfd> <fd of the file to watch>": the kernel looks both up in
	 * our fd table during the write and keeps its own references, so
	 * memory.oom_control can be closed afterwards. */
	snprintf(line, sizeof(line), "%d %d", efd, ocfd);
	ret = tern_cgv1_write_value(dir, "cgroup.event_control", line, "oom notification", err);
	if (ret < 0)
		return ret;
	return steal_fd(&efd);
}
