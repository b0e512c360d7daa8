/* Unit tests for the cgroup v2 module: pure conversions everywhere; the
 * eBPF device program and the freezer when run as root on a host with a
 * cgroup2 mount at /sys/fs/cgroup/unified or /sys/fs/cgroup. */
#include "cgroup-v2.h"
#include "tap.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static void test_conversions(void)
{
	int64_t out = 0;
	is_int(tern_cgroup_v2_shares_to_weight(0), 0, "shares 0 -> unset");
	is_int(tern_cgroup_v2_shares_to_weight(2), 1, "shares 2 -> weight 1");
	is_int(tern_cgroup_v2_shares_to_weight(1024), 39, "shares 1024 -> weight 39");
	is_int(tern_cgroup_v2_shares_to_weight(262144), 10000, "shares 262144 -> weight 10000");
	is_int(tern_cgroup_v2_blkio_to_io_weight(10), 1, "blkio 10 -> 1");
	is_int(tern_cgroup_v2_blkio_to_io_weight(500), 4950, "blkio 500 -> 4950");
	is_int(tern_cgroup_v2_blkio_to_io_weight(1000), 10000, "blkio 1000 -> 10000");

	is_int(tern_cgroup_v2_swap_max(true, 100, 300, &out), 0, "swap 300 limit 100 ok");
	is_int(out, 200, "swap.max = swap - limit");
	is_int(tern_cgroup_v2_swap_max(true, 100, 100, &out), 0, "swap == limit ok");
	is_int(out, 0, "swap.max 0 when swap == limit");
	is_int(tern_cgroup_v2_swap_max(true, 100, -1, &out), 0, "swap -1 ok");
	is_int(out, -1, "swap -1 -> max");
	is_int(tern_cgroup_v2_swap_max(true, 100, 50, &out), -EINVAL, "swap below limit rejected");
	is_int(tern_cgroup_v2_swap_max(false, 0, 300, &out), -EINVAL,
	       "finite swap w/o limit rejected");
	is_int(tern_cgroup_v2_swap_max(true, -1, 300, &out), -EINVAL,
	       "finite swap, unlimited memory rejected");
	is_int(tern_cgroup_v2_swap_max(true, 100, 0, &out), 1, "swap 0 = unset");
	is_int(tern_cgroup_v2_swap_max(true, 100, -5, &out), -EINVAL, "swap -5 rejected");

	bool set[4] = {true, false, true, false};
	uint64_t rate[4] = {1048576, 0, 0, 7};
	cleanup_free char *l1 = tern_cgroup_v2_io_max_line(8, 0, set, rate);
	is_str(l1, "8:0 rbps=1048576 riops=max", "io.max line, partial, 0 -> max");
	bool all[4] = {true, true, true, true};
	uint64_t r2[4] = {1, 2, 3, 4};
	cleanup_free char *l2 = tern_cgroup_v2_io_max_line(259, 3, all, r2);
	is_str(l2, "259:3 rbps=1 wbps=2 riops=3 wiops=4", "io.max line, all keys");

	cleanup_free char *c1 = tern_cgroup_v2_cpu_max_value(-1, 100000);
	is_str(c1, "max 100000", "cpu.max unlimited");
	cleanup_free char *c2 = tern_cgroup_v2_cpu_max_value(50000, 200000);
	is_str(c2, "50000 200000", "cpu.max quota period");
}

static void test_validate(void)
{
	oci_cpu cpu = {0};
	oci_resources r = {0};
	tern_error *err = NULL;

	r.cpu = &cpu;
	cpu.cpus = "0-3,5";
	is_int(tern_cgroup_v2_validate(&r, &err), 0, "cpus 0-3,5 ok");
	cpu.cpus = "abc";
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "cpus abc rejected");
	ok(err && strstr(err->msg, "linux.resources.cpu.cpus"), "error names the field: %s",
	   err ? err->msg : "");
	tern_error_free(err), err = NULL;
	cpu.cpus = "3-1";
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "cpus 3-1 rejected");
	tern_error_free(err), err = NULL;
	cpu.cpus = NULL;
	cpu.shares.set = true, cpu.shares.value = 1;
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "shares 1 rejected");
	tern_error_free(err), err = NULL;
	cpu.shares.value = 1024;
	is_int(tern_cgroup_v2_validate(&r, &err), 0, "shares 1024 ok");

	oci_kv kv[] = {{"../memory.max", "1"}};
	r.unified.items = kv, r.unified.len = 1;
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "unified ../ rejected");
	tern_error_free(err), err = NULL;
	kv[0].key = "memory/max";
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "unified key with / rejected");
	tern_error_free(err), err = NULL;
	kv[0].key = "memory.high";
	is_int(tern_cgroup_v2_validate(&r, &err), 0, "unified memory.high ok");
	kv[0].key = "cgroup.procs";
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "unified cgroup.procs rejected");
	ok(err && strstr(err->msg, "managed by the runtime"), "  the error says why");
	tern_error_free(err), err = NULL;
	kv[0].key = "cgroup.freeze";
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "unified cgroup.freeze rejected");
	tern_error_free(err), err = NULL;
	kv[0].key = "cgroup.max.depth";
	is_int(tern_cgroup_v2_validate(&r, &err), 0, "unified cgroup.max.depth ok");
	r.unified.len = 0;

	oci_memory m = {0};
	r.memory = &m;
	m.limit.set = true, m.limit.value = 1000;
	m.swap.set = true, m.swap.value = 500;
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "swap < limit rejected");
	tern_error_free(err), err = NULL;

	oci_device_cgroup_rule d = {.allow = true, .type = "x", .access = "rwm"};
	r.memory = NULL;
	r.devices = &d, r.devices_len = 1;
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "device type x rejected");
	tern_error_free(err), err = NULL;
	d.type = "c", d.access = "rwx";
	is_int(tern_cgroup_v2_validate(&r, &err), -EINVAL, "device access rwx rejected");
	tern_error_free(err), err = NULL;
}

/* ---- device program on a real cgroup2 mount ---- */

static const char *cg;

/* Fork a child into the cgroup, let it open `path` with `flags`; return
 * 0 or the errno it saw. */
static int try_open_in_cgroup(const char *path, int flags)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(100);
		int fd = open(path, flags | O_CLOEXEC);
		_exit(fd < 0 ? errno : 0);
	}
	close(pipefd[0]);
	cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", cg);
	cleanup_free char *spid = tern_strdup_printf("%d", pid);
	int ret = tern_write_file_at(AT_FDCWD, procs, spid, strlen(spid), NULL);
	if (write(pipefd[1], "x", 1) != 1)
		ret = -1;
	close(pipefd[1]);
	int status;
	waitpid(pid, &status, 0);
	if (ret < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_devices(void)
{
	tern_error *err = NULL;
	mkdir("/tmp/tern-unit-cgroup-v2", 0755);
	mknod("/tmp/tern-unit-cgroup-v2/kmsg", S_IFCHR | 0600, makedev(1, 11));
	mknod("/tmp/tern-unit-cgroup-v2/loop", S_IFBLK | 0600, makedev(7, 0));

	oci_device_cgroup_rule deny_all = {.allow = false, .access = "rwm"};
	is_int(tern_cgroup_v2_devices_apply(cg, &deny_all, 1, &err), 0,
	       "deny-all program attached %s", err ? err->msg : "");
	tern_error_free(err), err = NULL;
	is_int(try_open_in_cgroup("/dev/null", O_RDWR), 0, "default: /dev/null rw allowed");
	is_int(try_open_in_cgroup("/dev/zero", O_RDONLY), 0, "default: /dev/zero allowed");
	is_int(try_open_in_cgroup("/dev/full", O_WRONLY), 0, "default: /dev/full allowed");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/kmsg", O_RDONLY), EPERM,
	       "c 1:11 denied");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/loop", O_RDONLY), EPERM,
	       "b 7:0 denied");

	/* update: allow c 1:11 read only; the old program must be detached */
	oci_device_cgroup_rule rules[2] = {
	    {.allow = false, .access = "rwm"},
	    {.allow = true, .type = "c", .major = {true, 1}, .minor = {true, 11}, .access = "r"},
	};
	is_int(tern_cgroup_v2_devices_apply(cg, rules, 2, &err), 0, "update program %s",
	       err ? err->msg : "");
	tern_error_free(err), err = NULL;
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/kmsg", O_RDONLY), 0,
	       "c 1:11 r allowed after update");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/kmsg", O_WRONLY), EPERM,
	       "c 1:11 w denied");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/kmsg", O_RDWR), EPERM,
	       "c 1:11 rw denied");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/loop", O_RDONLY), EPERM,
	       "b 7:0 still denied");

	/* allow all, then deny block 7:* writes: last match wins */
	oci_device_cgroup_rule rules2[2] = {
	    {.allow = true, .access = "rwm"},
	    {.allow = false, .type = "b", .major = {true, 7}, .access = "w"},
	};
	is_int(tern_cgroup_v2_devices_apply(cg, rules2, 2, &err), 0, "allow-all + deny b 7:* w %s",
	       err ? err->msg : "");
	tern_error_free(err), err = NULL;
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/loop", O_RDONLY), 0,
	       "b 7:0 read allowed");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/loop", O_RDWR), EPERM,
	       "b 7:0 rw denied (deny w overlaps)");
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/kmsg", O_RDWR), 0,
	       "c 1:11 rw allowed by allow-all");

	/* a defaults-only program (create without rules) */
	is_int(tern_cgroup_v2_devices_apply(cg, NULL, 0, &err), 0, "defaults only");
	tern_error_free(err), err = NULL;
	is_int(try_open_in_cgroup("/tmp/tern-unit-cgroup-v2/kmsg", O_RDONLY), EPERM,
	       "c 1:11 denied by default");
	is_int(try_open_in_cgroup("/dev/urandom", O_RDONLY), 0, "/dev/urandom allowed by default");

	unlink("/tmp/tern-unit-cgroup-v2/kmsg");
	unlink("/tmp/tern-unit-cgroup-v2/loop");
}

static void test_freeze_and_stats(void)
{
	tern_error *err = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", cg);
	cleanup_free char *spid = tern_strdup_printf("%d", pid);
	tern_write_file_at(AT_FDCWD, procs, spid, strlen(spid), NULL);
	is_int(tern_cgroup_v2_freeze(cg, true, &err), 0, "freeze %s", err ? err->msg : "");
	tern_error_free(err), err = NULL;
	cleanup_free char *ev = NULL;
	cleanup_free char *evf = tern_strdup_printf("%s/cgroup.events", cg);
	tern_read_file(evf, &ev, NULL, 0, NULL);
	ok(ev && strstr(ev, "frozen 1"), "cgroup.events frozen 1");
	is_int(tern_cgroup_v2_freeze(cg, false, &err), 0, "thaw %s", err ? err->msg : "");
	tern_error_free(err), err = NULL;

	tern_cgroup_stats st = {0};
	is_int(tern_cgroup_v2_stats(cg, &st, &err), 0, "stats read");
	ok(st.has_cpu, "cpu stats present, usage %llu ns", (unsigned long long)st.cpu_usage.total);
	tern_cgroup_stats_free(&st);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	is_int(tern_cgroup_v2_stats("/nonexistent/cg", &st, &err), -ENOENT,
	       "stats on missing dir fails");
	tern_error_free(err), err = NULL;
}

/* ---- apply / prepare / oom on a pure v2 host (the guest) ---- */

static char *slurp(const char *dir, const char *file)
{
	char *data = NULL;
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, file);
	if (tern_read_file(path, &data, NULL, 0, NULL) < 0)
		return tern_xstrdup("(unreadable)");
	data[strcspn(data, "\n")] = '\0';
	return data;
}

static void test_apply_v2(void)
{
	tern_error *err = NULL;
	cleanup_free char *top = tern_strdup_printf("/sys/fs/cgroup/tern-v2-u-%d", getpid());
	cleanup_free char *rel = tern_strdup_printf("/tern-v2-u-%d/c", getpid());
	cleanup_free char *dir = tern_strdup_printf("%s/c", top);

	mkdir(top, 0755);
	mkdir(dir, 0755);
	is_int(tern_cgroup_v2_prepare("/sys/fs/cgroup", rel, &err), 0, "prepare %s",
	       err ? err->msg : "");
	tern_error_free(err), err = NULL;
	cleanup_free char *sc = slurp(top, "cgroup.subtree_control");
	ok(strstr(sc, "memory") && strstr(sc, "pids") && strstr(sc, "cpu"), "delegated: %s", sc);

	oci_memory m = {
	    .limit = {true, 32 << 20}, .swap = {true, 64 << 20}, .reservation = {true, 1 << 20}};
	oci_cpu c = {.shares = {true, 1024}, .quota = {true, 20000}, .cpus = "0"};
	oci_kv kv[] = {{"memory.high", "31457280"}};
	oci_resources r = {.memory = &m, .cpu = &c, .pids_limit = {true, -1}, .unified = {kv, 1}};
	is_int(tern_cgroup_v2_apply(dir, &r, false, &err), 0, "apply %s", err ? err->msg : "");
	tern_error_free(err), err = NULL;
	char *v;
	is_str(v = slurp(dir, "memory.max"), "33554432", "memory.max");
	free(v);
	is_str(v = slurp(dir, "memory.low"), "1048576", "memory.low");
	free(v);
	is_str(v = slurp(dir, "memory.high"), "31457280", "memory.high from unified");
	free(v);
	if (access("/sys/fs/cgroup/tern-v2-u-dummy", F_OK) != 0) {
		cleanup_free char *swf = tern_strdup_printf("%s/memory.swap.max", dir);
		if (access(swf, F_OK) == 0) {
			is_str(v = slurp(dir, "memory.swap.max"), "33554432",
			       "memory.swap.max = swap - limit");
			free(v);
		}
	}
	is_str(v = slurp(dir, "cpu.weight"), "39", "cpu.weight from shares");
	free(v);
	is_str(v = slurp(dir, "cpu.max"), "20000 100000", "cpu.max quota, default period");
	free(v);
	is_str(v = slurp(dir, "cpuset.cpus"), "0", "cpuset.cpus");
	free(v);
	is_str(v = slurp(dir, "pids.max"), "max", "pids.max -1 -> max");
	free(v);

	/* update: period alone keeps the quota */
	oci_cpu c2 = {.period = {true, 50000}};
	oci_resources r2 = {.cpu = &c2};
	is_int(tern_cgroup_v2_apply(dir, &r2, true, &err), 0, "update period");
	tern_error_free(err), err = NULL;
	is_str(v = slurp(dir, "cpu.max"), "20000 50000", "cpu.max keeps quota on period update");
	free(v);
	/* update: swap alone converts against the current memory.max */
	oci_memory m3 = {.swap = {true, 48 << 20}};
	oci_resources r3 = {.memory = &m3};
	is_int(tern_cgroup_v2_apply(dir, &r3, true, &err), 0, "update swap alone %s",
	       err ? err->msg : "");
	tern_error_free(err), err = NULL;
	cleanup_free char *swf = tern_strdup_printf("%s/memory.swap.max", dir);
	if (access(swf, F_OK) == 0) {
		is_str(v = slurp(dir, "memory.swap.max"), "16777216", "swap alone: 48M - 32M");
		free(v);
	}
	/* realtime is refused, unknown controller refused */
	oci_cpu c4 = {.realtime_runtime = {true, 1000}};
	oci_resources r4 = {.cpu = &c4};
	is_int(tern_cgroup_v2_apply(dir, &r4, true, &err), -ENOTSUP, "realtime refused");
	tern_error_free(err), err = NULL;
	oci_kv kv5[] = {{"nosuch.max", "1"}};
	oci_resources r5 = {.unified = {kv5, 1}};
	is_int(tern_cgroup_v2_apply(dir, &r5, true, &err), -EINVAL, "unknown controller refused");
	ok(err && strstr(err->msg, "nosuch"), "names it: %s", err ? err->msg : "");
	tern_error_free(err), err = NULL;

	/* OOM: a child that touches 64 MiB under a 32 MiB limit, no swap */
	oci_memory m6 = {.limit = {true, 32 << 20}, .swap = {true, 32 << 20}};
	oci_resources r6 = {.memory = &m6};
	tern_cgroup_v2_apply(dir, &r6, true, NULL);
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		char ch;
		if (read(pipefd[0], &ch, 1) != 1)
			_exit(1);
		for (int i = 0; i < 64; i++) {
			char *b = malloc(1 << 20);
			memset(b, 1, 1 << 20);
		}
		_exit(0);
	}
	cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", dir);
	cleanup_free char *spid = tern_strdup_printf("%d", pid);
	tern_write_file_at(AT_FDCWD, procs, spid, strlen(spid), NULL);
	uint64_t n = 0;
	if (write(pipefd[1], "x", 1) != 1)
		abort();
	close(pipefd[0]), close(pipefd[1]);
	int rc = tern_cgroup_v2_oom_wait(dir, &n, 20000, &err);
	is_int(rc, 1, "oom_wait saw the OOM kill (count %llu)", (unsigned long long)n);
	int status;
	waitpid(pid, &status, 0);
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "allocator was SIGKILLed");

	tern_cgroup_stats st = {0};
	is_int(tern_cgroup_v2_stats(dir, &st, &err), 0, "stats");
	ok(st.has_memory && st.memory_usage.limit == 32 << 20, "stats memory limit %llu",
	   (unsigned long long)st.memory_usage.limit);
	ok(st.has_pids && st.pids_limit == 0, "stats pids max -> 0");
	ok(st.memory_raw_len > 10, "memory.stat raw keys: %zu", st.memory_raw_len);
	tern_cgroup_stats_free(&st);

	/* EBUSY: a process in the middle level */
	cleanup_free char *deep = tern_strdup_printf("%s/d", dir);
	cleanup_free char *deeprel = tern_strdup_printf("%s/d", rel);
	mkdir(deep, 0755);
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	tern_write_file_at(AT_FDCWD, procs, tern_strdup_printf("%d", pid),
			   strlen(tern_strdup_printf("%d", pid)), NULL);
	is_int(tern_cgroup_v2_prepare("/sys/fs/cgroup", deeprel, &err), -EBUSY,
	       "prepare with a busy parent: EBUSY");
	ok(err && strstr(err->msg, dir), "error names the directory: %s", err ? err->msg : "");
	tern_error_free(err), err = NULL;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	rmdir(deep);
	usleep(100000);
	ok(rmdir(dir) == 0, "rmdir %s", dir);
	ok(rmdir(top) == 0, "rmdir %s", top);
}

int main(void)
{
	struct statfs sfs;
	test_conversions();
	test_validate();

	const char *mnt = NULL;
	if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
		mnt = "/sys/fs/cgroup";
	else if (statfs("/sys/fs/cgroup/unified", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
		mnt = "/sys/fs/cgroup/unified";
	if (geteuid() != 0 || mnt == NULL) {
		printf("# skipping cgroup2 device/freeze tests: need root and a cgroup2 mount\n");
	} else {
		cg = tern_strdup_printf("%s/tern-v2-test-%d", mnt, getpid());
		if (mkdir(cg, 0755) < 0) {
			ok(0, "mkdir %s", cg);
		} else {
			test_devices();
			test_freeze_and_stats();
			ok(rmdir(cg) == 0, "rmdir %s", cg);
		}
		if (strcmp(mnt, "/sys/fs/cgroup") == 0)
			test_apply_v2();
	}
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
