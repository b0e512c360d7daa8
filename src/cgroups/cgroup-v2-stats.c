/* cgroup v2: what the container's cgroup reports back: the freezer (cgroup.freeze
 * and the wait for cgroup.events to say frozen), the usage counters, and the
 * OOM kills counted in memory.events. */
#include "cgroup-v2.h"
#include "cgroup-v2-internal.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* freezer                                                                */

/* The value of `key` in a flat-keyed file ("key value\n" lines). */
static bool keyed_value(const char *data, const char *key, uint64_t *out)
{
	size_t n = strlen(key);
	for (const char *p = data; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, n) == 0 && p[n] == ' ') {
			*out = strncmp(p + n + 1, "max", 3) == 0 ? UINT64_MAX
								 : strtoull(p + n + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tern_cgroup_v2_freeze(const char *dir, bool freeze, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cleanup_close int efd = -1;
	int ret;

	if (dfd < 0)
		return tern_error_make(err, errno, "open cgroup `%s`", dir);
	/* Open cgroup.events first so no change between write and poll is
	 * lost: kernfs flags the open file on every change. */
	efd = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (efd < 0)
		return tern_error_make(err, errno, "open `%s/cgroup.events`", dir);
	ret = tern_cgv2_write_ctl(dfd, dir, "cgroup.freeze", freeze ? "1" : "0",
				  freeze ? "pause" : "resume", err);
	if (ret < 0)
		return ret;

	int64_t deadline = now_ms() + 10000;
	for (;;) {
		char buf[512];
		ssize_t len = pread(efd, buf, sizeof(buf) - 1, 0);
		uint64_t frozen = 0;
		if (len < 0)
			return tern_error_make(err, errno, "read `%s/cgroup.events`", dir);
		buf[len] = '\0';
		if (keyed_value(buf, "frozen", &frozen) && (frozen == 1) == freeze)
			return 0;
		int64_t left = deadline - now_ms();
		if (left <= 0)
			break;
		/* kernfs signals POLLPRI|POLLERR on change; also wake every
		 * 100 ms in case a notification was coalesced away. */
		struct pollfd pfd = {.fd = efd, .events = POLLPRI};
		if (poll(&pfd, 1, left < 100 ? (int)left : 100) < 0 && errno != EINTR)
			return tern_error_make(err, errno, "poll `%s/cgroup.events`", dir);
	}
	/* Do not leave a half-frozen container behind a failed pause. */
	if (freeze)
		(void)tern_cgv2_write_ctl(dfd, dir, "cgroup.freeze", "0", "pause", NULL);
	return tern_error_make_quiet(err, ETIMEDOUT, "%s: `%s` did not become %s within 10 s",
				     freeze ? "pause" : "resume", dir,
				     freeze ? "frozen" : "thawed");
}

/* ---------------------------------------------------------------------- */
/* statistics                                                             */

static void read_single(int dfd, const char *file, uint64_t *out)
{
	cleanup_free char *data = NULL;
	if (tern_cgv2_read_ctl(dfd, file, &data) < 0)
		return;
	*out = strncmp(data, "max", 3) == 0 ? UINT64_MAX : strtoull(data, NULL, 10);
}

static void stats_cpu(int dfd, tern_cgroup_stats *s)
{
	cleanup_free char *data = NULL;
	uint64_t v;

	/* cpu.stat exists without the cpu controller too (usage only). v2
	 * counts microseconds, runc's stats nanoseconds. */
	if (tern_cgv2_read_ctl(dfd, "cpu.stat", &data) < 0)
		return;
	s->has_cpu = true;
	if (keyed_value(data, "usage_usec", &v))
		s->cpu_usage.total = v * 1000;
	if (keyed_value(data, "user_usec", &v))
		s->cpu_usage.user = v * 1000;
	if (keyed_value(data, "system_usec", &v))
		s->cpu_usage.kernel = v * 1000;
	keyed_value(data, "nr_periods", &s->cpu_throttling.periods);
	keyed_value(data, "nr_throttled", &s->cpu_throttling.throttled_periods);
	if (keyed_value(data, "throttled_usec", &v))
		s->cpu_throttling.throttled_time = v * 1000;
}

static void stats_memory(int dfd, tern_cgroup_stats *s)
{
	cleanup_free char *data = NULL;
	cleanup_free char *events = NULL;
	uint64_t swap_cur = 0, swap_max = 0;

	if (!tern_cgv2_has_file(dfd, "memory.current"))
		return;
	s->has_memory = true;
	read_single(dfd, "memory.current", &s->memory_usage.usage);
	read_single(dfd, "memory.max", &s->memory_usage.limit);
	read_single(dfd, "memory.peak", &s->memory_usage.max);
	if (tern_cgv2_read_ctl(dfd, "memory.events", &events) == 0)
		keyed_value(events, "max", &s->memory_usage.failcnt);
	/* v1 reports memory+swap; so does runc on v2, for its clients. */
	if (tern_cgv2_has_file(dfd, "memory.swap.current")) {
		read_single(dfd, "memory.swap.current", &swap_cur);
		read_single(dfd, "memory.swap.max", &swap_max);
		s->memory_swap.usage = s->memory_usage.usage + swap_cur;
		s->memory_swap.limit = swap_max == UINT64_MAX || s->memory_usage.limit == UINT64_MAX
					   ? UINT64_MAX
					   : swap_max + s->memory_usage.limit;
	}
	if (tern_cgv2_read_ctl(dfd, "memory.stat", &data) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		if (sp == NULL)
			continue;
		*sp = '\0';
		uint64_t v = strtoull(sp + 1, NULL, 10);
		/* v1's "cache" is the page cache: v2 calls it "file". */
		if (strcmp(line, "file") == 0)
			s->memory_cache = v;
		s->memory_raw =
		    realloc(s->memory_raw, (s->memory_raw_len + 1) * sizeof(*s->memory_raw));
		if (s->memory_raw == NULL)
			abort();
		s->memory_raw[s->memory_raw_len++] =
		    (tern_cgroup_stat_kv){.key = tern_xstrdup(line), .value = v};
	}
}

static void stats_pids(int dfd, tern_cgroup_stats *s)
{
	if (!tern_cgv2_has_file(dfd, "pids.current"))
		return;
	s->has_pids = true;
	read_single(dfd, "pids.current", &s->pids_current);
	read_single(dfd, "pids.max", &s->pids_limit);
	if (s->pids_limit == UINT64_MAX)
		s->pids_limit = 0; /* "max", printed as 0 like runc */
}

static void blkio_add(tern_cgroup_blkio_list *l, uint64_t major, uint64_t minor, const char *op,
		      uint64_t value)
{
	l->items = realloc(l->items, (l->len + 1) * sizeof(*l->items));
	if (l->items == NULL)
		abort();
	l->items[l->len++] = (tern_cgroup_blkio_entry){
	    .major = major, .minor = minor, .op = tern_xstrdup(op), .value = value};
}

static void stats_io(int dfd, tern_cgroup_stats *s)
{
	cleanup_free char *data = NULL;

	if (tern_cgv2_read_ctl(dfd, "io.stat", &data) < 0)
		return;
	s->has_blkio = true;
	/* "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device,
	 * mapped onto v1's lists as runc does: bytes -> io_service_bytes,
	 * ios -> io_serviced. */
	for (char *save = NULL, *line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long major, minor;
		if (sscanf(line, "%llu:%llu", &major, &minor) != 2)
			continue;
		for (char *s2 = NULL, *tok = strtok_r(line, " ", &s2); tok;
		     tok = strtok_r(NULL, " ", &s2)) {
			static const struct {
				const char *key, *op;
				bool bytes;
			} map[] = {{"rbytes", "Read", true},	{"wbytes", "Write", true},
				   {"dbytes", "Discard", true}, {"rios", "Read", false},
				   {"wios", "Write", false},	{"dios", "Discard", false}};
			char *eq = strchr(tok, '=');
			if (eq == NULL)
				continue;
			*eq = '\0';
			for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
				if (strcmp(tok, map[i].key) == 0)
					blkio_add(map[i].bytes ? &s->io_service_bytes_recursive
							       : &s->io_serviced_recursive,
						  major, minor, map[i].op,
						  strtoull(eq + 1, NULL, 10));
		}
	}
}

static void stats_hugetlb(int dfd, tern_cgroup_stats *s)
{
	DIR *d = opendir("/sys/kernel/mm/hugepages");
	struct dirent *de;

	if (d == NULL)
		return;
	/* The page sizes this kernel has, as "hugepages-2048kB" entries; the
	 * cgroup files use the kernel's short form: 2MB, 1GB, 64KB. */
	while ((de = readdir(d)) != NULL) {
		unsigned long kb;
		char name[32];
		if (sscanf(de->d_name, "hugepages-%lukB", &kb) != 1)
			continue;
		if (kb >= 1024 * 1024)
			snprintf(name, sizeof(name), "%luGB", kb / (1024 * 1024));
		else if (kb >= 1024)
			snprintf(name, sizeof(name), "%luMB", kb / 1024);
		else
			snprintf(name, sizeof(name), "%luKB", kb);
		cleanup_free char *cur = tern_strdup_printf("hugetlb.%s.current", name);
		if (!tern_cgv2_has_file(dfd, cur))
			continue;
		tern_cgroup_hugetlb_entry h = {.pagesize = tern_xstrdup(name)};
		read_single(dfd, cur, &h.usage);
		cleanup_free char *ev = tern_strdup_printf("hugetlb.%s.events", name);
		cleanup_free char *data = NULL;
		if (tern_cgv2_read_ctl(dfd, ev, &data) == 0)
			keyed_value(data, "max", &h.failcnt);
		s->hugetlb = realloc(s->hugetlb, (s->hugetlb_len + 1) * sizeof(*s->hugetlb));
		if (s->hugetlb == NULL)
			abort();
		s->hugetlb[s->hugetlb_len++] = h;
		s->has_hugetlb = true;
	}
	closedir(d);
}

int tern_cgroup_v2_hugetlb_stats(const char *dir, tern_cgroup_stats *s, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	if (dfd < 0)
		return tern_error_make(err, errno, "stats of cgroup `%s`", dir);
	stats_hugetlb(dfd, s);
	return 0;
}

int tern_cgroup_v2_stats(const char *dir, tern_cgroup_stats *s, tern_error **err)
{
	cleanup_close int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	if (dfd < 0)
		return tern_error_make(err, errno, "stats of cgroup `%s`", dir);
	stats_cpu(dfd, s);
	stats_memory(dfd, s);
	stats_pids(dfd, s);
	stats_io(dfd, s);
	stats_hugetlb(dfd, s);
	return 0;
}

int tern_cgroup_v2_oom_wait(const char *dir, uint64_t *oom_kill, int timeout_ms, tern_error **err)
{
	cleanup_free char *file = tern_strdup_printf("%s/memory.events", dir);
	cleanup_close int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;

	if (ifd < 0)
		return tern_error_make(err, errno, "inotify_init1");
	/* memory.events is a kernfs file that reports changes as IN_MODIFY;
	 * the watch is set before the first read so no event falls between. */
	if (inotify_add_watch(ifd, file, IN_MODIFY) < 0)
		return tern_error_make(err, errno, "watch `%s`", file);
	for (;;) {
		cleanup_free char *data = NULL;
		uint64_t n = 0;
		int ret = tern_read_file(file, &data, NULL, 0, NULL);
		if (ret == -ENOENT || ret == -ENODEV)
			return 0;
		if (ret < 0)
			return tern_error_make(err, -ret, "read `%s`", file);
		if (keyed_value(data, "oom_kill", &n) && n > *oom_kill) {
			*oom_kill = n;
			return 1;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd pfd = {.fd = ifd, .events = POLLIN};
		ret = poll(&pfd, 1, left > INT_MAX ? -1 : (int)left);
		if (ret < 0 && errno != EINTR)
			return tern_error_make(err, errno, "poll inotify for `%s`", file);
		if (ret > 0) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			ssize_t len = read(ifd, buf, sizeof(buf));
			for (char *p = buf; len > 0 && p < buf + len;) {
				const struct inotify_event *ev = (const struct inotify_event *)p;
				if (ev->mask & IN_IGNORED)
					return 0; /* the cgroup was removed */
				p += sizeof(*ev) + ev->len;
			}
		}
	}
}
