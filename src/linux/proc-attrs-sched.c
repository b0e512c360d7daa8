/* process.scheduler and process.ioPriority: checked in the parent against
 * what the kernel and our privileges allow (so that the user gets the
 * field's name, not a bare EPERM from the child), set in the child. */
#include "proc-attrs.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/ioprio.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- scheduler ---- */

/* sched_setattr(2)'s argument, first version (48 bytes; the kernel takes
 * any known size). Spelled out: <linux/sched/types.h> redefines glibc's
 * struct sched_param, and glibc 2.36 has no struct sched_attr. */
struct sched_attr_v0 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
/* sched_setattr(2) flags, as <linux/sched.h> numbers them (that header
 * clashes with glibc's <sched.h>). */
static const struct {
	const char *name;
	uint64_t value;
} sched_flags[] = {
    {"SCHED_FLAG_RESET_ON_FORK", 0x01},	 {"SCHED_FLAG_RECLAIM", 0x02},
    {"SCHED_FLAG_DL_OVERRUN", 0x04},	 {"SCHED_FLAG_KEEP_POLICY", 0x08},
    {"SCHED_FLAG_KEEP_PARAMS", 0x10},	 {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
    {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40},
};

static const struct {
	const char *name;
	int policy;
} sched_policies[] = {
    {"SCHED_OTHER", SCHED_OTHER}, {"SCHED_BATCH", SCHED_BATCH}, {"SCHED_IDLE", SCHED_IDLE},
    {"SCHED_FIFO", SCHED_FIFO},	  {"SCHED_RR", SCHED_RR},	{"SCHED_DEADLINE", SCHED_DEADLINE},
};

static int sched_policy(const char *name)
{
	for (size_t i = 0; name && i < sizeof(sched_policies) / sizeof(sched_policies[0]); i++)
		if (strcmp(name, sched_policies[i].name) == 0)
			return sched_policies[i].policy;
	return -1;
}

/* The kernel's deadline parameters must be at least 2^10 ns (its
 * resolution) and below 2^63. */
#define DL_MIN ((uint64_t)1 << 10)
#define DL_MAX ((uint64_t)1 << 63)

/* A kernel.sched_deadline_period_{min,max}_us sysctl (µs), or its default
 * when it cannot be read. */
static uint64_t dl_period_bound_us(const char *name, uint64_t dflt)
{
	cleanup_free char *path = tern_strdup_printf("/proc/sys/kernel/%s", name);
	cleanup_free char *text = NULL;
	size_t len = 0;
	char *end;
	unsigned long long v;

	if (tern_read_file(path, &text, &len, 64, NULL) < 0)
		return dflt;
	errno = 0;
	v = strtoull(text, &end, 10);
	return errno || end == text ? dflt : (uint64_t)v;
}

/* __checkparam_dl's rules (kernel/sched/syscalls.c), each named by its
 * field. `host`: also the period bounds of this host's sysctls (in the
 * parent; the child, whose /proc may be the container's, leaves them to
 * the kernel). */
static int check_deadline(const oci_scheduler *s, bool host, tern_error **err)
{
	uint64_t runtime = s->runtime.value, deadline = s->deadline.value;
	uint64_t period = s->period.value ? s->period.value : deadline;
	const char *pfield = s->period.value ? "period" : "deadline";

	if (!s->runtime.set)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.runtime: is required for "
					     "SCHED_DEADLINE (nanoseconds)");
	if (!s->deadline.set)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.deadline: is required for "
					     "SCHED_DEADLINE (nanoseconds; period defaults to it)");
	if (runtime < DL_MIN)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.runtime: %" PRIu64
					     " ns is below the kernel's minimum of 1024 ns",
					     runtime);
	if (runtime > deadline)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.runtime: %" PRIu64 " ns is more than the deadline, %" PRIu64
		    " ns (SCHED_DEADLINE needs runtime <= deadline <= period)",
		    runtime, deadline);
	if (deadline > period)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.deadline: %" PRIu64 " ns is more than the period, %" PRIu64
		    " ns (SCHED_DEADLINE needs runtime <= deadline <= period)",
		    deadline, period);
	if (period >= DL_MAX)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.%s: %" PRIu64
					     " ns is not below 2^63 ns, the kernel's limit",
					     pfield, period);
	if (host) {
		/* the kernel's defaults: 100 µs and 2^22 µs (about 4.2 s) */
		uint64_t lo = dl_period_bound_us("sched_deadline_period_min_us", 100);
		uint64_t hi = dl_period_bound_us("sched_deadline_period_max_us", 1 << 22);
		if (period < lo * 1000 || (hi < UINT64_MAX / 1000 && period > hi * 1000))
			return tern_error_make_quiet(
			    err, EINVAL,
			    "process.scheduler.%s: a period of %" PRIu64
			    " ns is outside what this kernel takes, %" PRIu64 " to %" PRIu64
			    " ns (kernel.sched_deadline_period_min_us and _max_us)%s",
			    pfield, period, lo * 1000, hi * 1000,
			    s->period.value ? ""
					    : " (without a period, the deadline is the period)");
	}
	return 0;
}

static const char *policy_name(int policy)
{
	for (size_t i = 0; i < sizeof(sched_policies) / sizeof(sched_policies[0]); i++)
		if (sched_policies[i].policy == policy)
			return sched_policies[i].name;
	return "an unknown policy";
}

/* The policy a process we create starts with: ours, but a realtime or
 * deadline one reset to SCHED_OTHER when we have reset-on-fork. */
static int inherited_policy(void)
{
	int p = sched_getscheduler(0);

	if (p < 0)
		return -1;
	if (p & SCHED_RESET_ON_FORK) {
		p &= ~SCHED_RESET_ON_FORK;
		if (p == SCHED_FIFO || p == SCHED_RR || p == SCHED_DEADLINE)
			p = SCHED_OTHER;
	}
	return p;
}

/* process.scheduler.flags[i]: known, and of use with this policy. */
static int check_sched_flag(const oci_scheduler *s, int policy, size_t i, bool host,
			    tern_error **err)
{
	const char *f = s->flags[i];
	size_t j = 0, n = sizeof(sched_flags) / sizeof(sched_flags[0]);

	while (j < n && strcmp(f, sched_flags[j].name) != 0)
		j++;
	if (j == n)
		return tern_error_make_quiet(
		    err, EINVAL, "process.scheduler.flags[%zu]: unknown flag `%s`", i, f);
	switch (sched_flags[j].value) {
	case 0x02: /* RECLAIM */
	case 0x04: /* DL_OVERRUN */
		/* the kernel takes them with any policy, and they mean
		 * nothing but with SCHED_DEADLINE */
		if (policy != SCHED_DEADLINE)
			return tern_error_make_quiet(err, EINVAL,
						     "process.scheduler.flags[%zu]: %s is for "
						     "SCHED_DEADLINE only, not %s",
						     i, f, s->policy);
		break;
	case 0x20: /* UTIL_CLAMP_MIN */
	case 0x40: /* UTIL_CLAMP_MAX */
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.flags[%zu]: %s needs a utilization "
					     "value (sched_attr's sched_util_min/max), which the "
					     "runtime-spec has no field for",
					     i, f);
	case 0x10: /* KEEP_PARAMS */
		/* sched_setattr then takes the parameters the process has,
		 * and changes neither them nor the policy: only utilization
		 * clamps, which config.json cannot give */
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.flags[%zu]: with SCHED_FLAG_KEEP_PARAMS the kernel "
		    "changes neither the policy nor its parameters (only utilization clamps, "
		    "which the runtime-spec cannot set): process.scheduler would do nothing",
		    i);
	case 0x08: /* KEEP_POLICY */
		/* the policy field is then ignored: the process keeps the
		 * one it inherits from tern */
		if (host) {
			int have = inherited_policy();
			if (have >= 0 && have != policy)
				return tern_error_make_quiet(
				    err, EINVAL,
				    "process.scheduler.flags[%zu]: SCHED_FLAG_KEEP_POLICY keeps "
				    "the policy the process inherits from tern, %s, not "
				    "process.scheduler.policy %s",
				    i, policy_name(have), s->policy);
		}
		break;
	}
	return 0;
}

static int check_scheduler(const oci_scheduler *s, bool host, tern_error **err)
{
	int policy = sched_policy(s->policy);
	int64_t prio = s->priority.value, nice = s->nice.value;
	int ret;

	if (s->policy && strcmp(s->policy, "SCHED_ISO") == 0)
		return tern_error_make_quiet(err, ENOTSUP,
					     "process.scheduler.policy: SCHED_ISO is not "
					     "implemented by the Linux kernel");
	if (policy < 0)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.policy: unknown policy `%s` "
					     "(SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, "
					     "SCHED_RR or SCHED_DEADLINE)",
					     s->policy ? s->policy : "");
	if (policy == SCHED_FIFO || policy == SCHED_RR) {
		int lo = sched_get_priority_min(policy), hi = sched_get_priority_max(policy);
		if (prio < lo || prio > hi)
			return tern_error_make_quiet(err, EINVAL,
						     "process.scheduler.priority: %" PRId64
						     " is out of range for %s (%d-%d)",
						     prio, s->policy, lo, hi);
	} else if (prio != 0) {
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.priority: %" PRId64
					     " is out of range for %s (only 0; priorities are for "
					     "SCHED_FIFO and SCHED_RR)",
					     prio, s->policy);
	}
	if (nice < -20 || nice > 19)
		return tern_error_make_quiet(
		    err, EINVAL, "process.scheduler.nice: %" PRId64 " is out of range (-20 to 19)",
		    nice);
	/* sched_setattr takes a nice value with any policy and uses it with
	 * SCHED_OTHER and SCHED_BATCH only: elsewhere it would be lost */
	if (nice != 0 && policy != SCHED_OTHER && policy != SCHED_BATCH)
		return tern_error_make_quiet(err, EINVAL,
					     "process.scheduler.nice: %" PRId64
					     " has no effect with %s (nice is for SCHED_OTHER and "
					     "SCHED_BATCH)",
					     nice, s->policy);
	for (size_t i = 0; s->flags && s->flags[i]; i++) {
		ret = check_sched_flag(s, policy, i, host, err);
		if (ret < 0)
			return ret;
	}
	if (policy == SCHED_DEADLINE)
		return check_deadline(s, host, err);
	if (s->runtime.value || s->deadline.value || s->period.value)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.scheduler.%s: runtime, deadline and period are "
		    "for SCHED_DEADLINE only, not %s",
		    s->runtime.value	? "runtime"
		    : s->deadline.value ? "deadline"
					: "period",
		    s->policy);
	return 0;
}

int tern_scheduler_check(const oci_scheduler *s, tern_error **err)
{
	int ret = check_scheduler(s, true, err);
	bool reset_on_fork = false;

	if (ret < 0 || sched_policy(s->policy) != SCHED_DEADLINE)
		return ret;
	for (size_t i = 0; s->flags && s->flags[i]; i++)
		reset_on_fork |= strcmp(s->flags[i], "SCHED_FLAG_RESET_ON_FORK") == 0;
	/* valid, but a shell as the process would be of no use */
	if (!reset_on_fork)
		tern_warn("process.scheduler: a SCHED_DEADLINE process cannot fork (fork fails "
			  "with EAGAIN) unless flags has SCHED_FLAG_RESET_ON_FORK");
	return 0;
}

/* Whether we are in the host's user namespace (its uid map is the whole
 * range); assumed so when /proc cannot tell. Only for messages. */
static bool in_initial_user_ns(void)
{
	char buf[64] = {0};
	cleanup_close int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	unsigned long inside, outside, count;

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return true;
	if (sscanf(buf, "%lu %lu %lu", &inside, &outside, &count) != 3)
		return true;
	return inside == 0 && outside == 0 && count == 4294967295UL;
}

int tern_scheduler_apply(const oci_scheduler *s, tern_error **err)
{
	struct sched_attr_v0 attr = {.size = sizeof(attr)};
	int ret = check_scheduler(s, false, err);

	if (ret < 0)
		return ret;
	attr.sched_policy = (uint32_t)sched_policy(s->policy);
	attr.sched_nice = (int32_t)s->nice.value;
	attr.sched_priority = (uint32_t)s->priority.value;
	attr.sched_runtime = s->runtime.value;
	attr.sched_deadline = s->deadline.value;
	attr.sched_period = s->period.value;
	for (size_t i = 0; s->flags && s->flags[i]; i++)
		for (size_t j = 0; j < sizeof(sched_flags) / sizeof(sched_flags[0]); j++)
			if (strcmp(s->flags[i], sched_flags[j].name) == 0)
				attr.sched_flags |= sched_flags[j].value;
	if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0)
		return 0;
	int e = errno;
	bool rt = attr.sched_policy == SCHED_FIFO || attr.sched_policy == SCHED_RR;
	if (e == EPERM && !in_initial_user_ns())
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr %s (a realtime policy or "
				       "a nice value below the current one needs CAP_SYS_NICE in "
				       "the host's user namespace, which a container with its own "
				       "user namespace does not have)",
				       s->policy);
	if (e == EPERM && rt && access("/sys/fs/cgroup/cpu/cpu.rt_runtime_us", F_OK) == 0)
		/* CONFIG_RT_GROUP_SCHED on cgroup v1: a new cgroup starts with
		 * no realtime budget, and the kernel then refuses RT policies
		 * even to root. */
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr %s priority %u (the "
				       "container's cpu cgroup may have no realtime budget: set "
				       "linux.resources.cpu.realtimeRuntime)",
				       s->policy, attr.sched_priority);
	if (e == EPERM && attr.sched_policy == SCHED_DEADLINE)
		/* __sched_setscheduler: a deadline task must be allowed to
		 * run on every CPU of its root domain */
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr SCHED_DEADLINE (the "
				       "process's CPUs must cover its whole root domain: a "
				       "linux.resources.cpu.cpus with fewer CPUs than the host "
				       "is refused by the kernel)");
	if (e == EBUSY && attr.sched_policy == SCHED_DEADLINE)
		return tern_error_make(err, e,
				       "process.scheduler: sched_setattr SCHED_DEADLINE (runtime "
				       "%" PRIu64 " / period %" PRIu64
				       " is more bandwidth than the root domain admits)",
				       attr.sched_runtime,
				       attr.sched_period ? attr.sched_period : attr.sched_deadline);
	return tern_error_make(err, e, "process.scheduler: sched_setattr %s", s->policy);
}

/* ---- I/O priority ---- */

static int io_class(const char *name)
{
	if (name == NULL)
		return -1;
	if (strcmp(name, "IOPRIO_CLASS_RT") == 0)
		return IOPRIO_CLASS_RT;
	if (strcmp(name, "IOPRIO_CLASS_BE") == 0)
		return IOPRIO_CLASS_BE;
	if (strcmp(name, "IOPRIO_CLASS_IDLE") == 0)
		return IOPRIO_CLASS_IDLE;
	return -1;
}

int tern_io_priority_check(const oci_io_priority *io, tern_error **err)
{
	int cl = io_class(io->class_);

	/* The kernel's class 0, "none", is what a process has when nobody
	 * set one: leaving ioPriority out is how to ask for it. */
	if (io->class_ && strcmp(io->class_, "IOPRIO_CLASS_NONE") == 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.ioPriority.class: IOPRIO_CLASS_NONE is not a class of the "
		    "runtime-spec (IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE); leave "
		    "process.ioPriority out for the kernel's default");
	if (cl < 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.ioPriority.class: unknown class `%s` "
		    "(IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE)",
		    io->class_ ? io->class_ : "");
	/* eight levels; above 7 the kernel reads the bits as a hint (6.x) */
	if (io->priority < 0 || io->priority > 7)
		return tern_error_make_quiet(
		    err, EINVAL, "process.ioPriority.priority: %" PRId64 " is out of range (0-7)",
		    io->priority);
	/* ioprio_set(2): "the idle class has no class data"; the kernel
	 * keeps a level given with it and the I/O schedulers ignore it */
	if (cl == IOPRIO_CLASS_IDLE && io->priority != 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "process.ioPriority.priority: IOPRIO_CLASS_IDLE has no "
		    "levels, %" PRId64 " would be ignored (give 0)",
		    io->priority);
	return 0;
}

int tern_io_priority_apply(const oci_io_priority *io, tern_error **err)
{
	int ret = tern_io_priority_check(io, err);

	if (ret < 0)
		return ret;
	int value = IOPRIO_PRIO_VALUE(io_class(io->class_), io->priority);
	if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) < 0) {
		int e = errno;
		if (e == EPERM && io_class(io->class_) == IOPRIO_CLASS_RT)
			return tern_error_make(err, e,
					       "process.ioPriority: ioprio_set %s %" PRId64
					       " (the realtime class needs CAP_SYS_ADMIN or "
					       "CAP_SYS_NICE in the host's user namespace)",
					       io->class_, io->priority);
		return tern_error_make(err, e, "process.ioPriority: ioprio_set %s %" PRId64,
				       io->class_, io->priority);
	}
	return 0;
}
