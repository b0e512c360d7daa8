/* The parts of the LSM and process-attribute stages that need no
 * privileges: which mounts get the SELinux mount label and how, and the
 * checks of linux.personality, process.scheduler and process.ioPriority
 * (the same checks `create` runs before anything exists). */
#include "tap.h"

#include "lsm.h"
#include "proc-attrs.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/personality.h>

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* The message of a failed check, or NULL when it passed. */
static char *msg;

/* Takes the error by address: the call that fills it is the other
 * argument, and C does not order the evaluation of arguments. */
static int expect(int ret, tern_error **e)
{
	free(msg);
	msg = NULL;
	if (*e) {
		msg = strdup((*e)->msg);
		tern_error_free(*e);
		*e = NULL;
	}
	return ret;
}

static int sched(const char *policy, int64_t prio, int64_t nice, uint64_t rt, uint64_t dl,
		 uint64_t period)
{
	oci_scheduler s = {.policy = (char *)policy};
	tern_error *e = NULL;

	s.priority.set = true;
	s.priority.value = prio;
	s.nice.set = true;
	s.nice.value = nice;
	s.runtime.set = rt != 0;
	s.runtime.value = rt;
	s.deadline.set = dl != 0;
	s.deadline.value = dl;
	s.period.set = period != 0;
	s.period.value = period;
	return expect(tern_scheduler_check(&s, &e), &e);
}

static int ioprio(const char *class_, int64_t prio)
{
	oci_io_priority io = {.class_ = (char *)class_, .priority = prio};
	tern_error *e = NULL;
	return expect(tern_io_priority_check(&io, &e), &e);
}

static int persona(const char *domain, char **flags, unsigned long *v)
{
	oci_personality p = {.domain = (char *)domain, .flags = flags};
	tern_error *e = NULL;
	return expect(tern_personality_value(&p, v, &e), &e);
}

static void mount_labels(void)
{
	char *tmpfs_opts[] = {"nosuid", "mode=755", NULL};
	char *bind_opts[] = {"rbind", "ro", NULL};
	oci_mount tmpfs = {.destination = "/dev", .type = "tmpfs", .options = tmpfs_opts};
	oci_mount bind = {.destination = "/data", .type = "none", .options = bind_opts};
	oci_mount proc = {.destination = "/proc", .type = "proc"};
	oci_mount mq = {.destination = "/dev/mqueue", .type = "mqueue"};
	oci_mount bindtype = {.destination = "/x", .type = "bind"};
	oci_mount devpts = {.destination = "/dev/pts", .type = "devpts"};
	const char *label = "system_u:object_r:container_file_t:s0:c1,c2";
	char **o;

	o = tern_lsm_mount_options(&tmpfs, label);
	ok(o != NULL, "a tmpfs takes the mount label");
	is_str(o ? o[0] : NULL, "nosuid", "its own options come first");
	is_str(o ? o[1] : NULL, "mode=755", "in order");
	is_str(o ? o[2] : NULL, "context=\"system_u:object_r:container_file_t:s0:c1,c2\"",
	       "then context=, quoted because of the MLS commas");
	ok(o && o[3] == NULL, "and the list ends there");
	strv_free(o);
	o = tern_lsm_mount_options(&devpts, label);
	ok(o && o[0] && strncmp(o[0], "context=", 8) == 0 && o[1] == NULL,
	   "a mount without options gets just context=");
	strv_free(o);
	ok(tern_lsm_mount_options(&bind, label) == NULL, "an rbind keeps its source's labels");
	ok(tern_lsm_mount_options(&bindtype, label) == NULL, "so does a mount of type bind");
	ok(tern_lsm_mount_options(&proc, label) == NULL, "proc labels itself");
	ok(tern_lsm_mount_options(&mq, label) == NULL, "mqueue gets no context=");
	ok(tern_lsm_mount_options(&tmpfs, NULL) == NULL, "no mount label, no option");
	ok(tern_lsm_mount_options(&tmpfs, "") == NULL, "an empty mount label is none");

	char *opts[] = {"nosuid", NULL};
	oci_mount mounts[2] = {
	    {.destination = "/run", .type = "tmpfs", .options = NULL},
	    {.destination = "/proc", .type = "proc", .options = NULL},
	};
	oci_linux l = {.mount_label = (char *)label};
	oci_config c = {.mounts = mounts, .mounts_len = 2, .linux_ = &l};
	mounts[0].options = malloc(2 * sizeof(char *));
	mounts[0].options[0] = strdup(opts[0]);
	mounts[0].options[1] = NULL;
	tern_lsm_label_mounts(&c);
	ok(mounts[0].options[1] && strncmp(mounts[0].options[1], "context=", 8) == 0,
	   "tern_lsm_label_mounts labels the config's tmpfs");
	ok(mounts[1].options == NULL, "and leaves proc alone");
	strv_free(mounts[0].options);
}

static void lsm_checks(void)
{
	tern_error *e = NULL;

	is_int(expect(tern_lsm_check_selinux("process.selinuxLabel", NULL, &e), &e), 0,
	       "no SELinux label: nothing to check");
	is_int(expect(tern_lsm_check_selinux("process.selinuxLabel", "", &e), &e), 0,
	       "an empty SELinux label is none");
	is_int(expect(tern_lsm_check_apparmor("process.apparmorProfile", "", &e), &e), 0,
	       "an empty AppArmor profile is none");
	if (!tern_selinux_enabled()) {
		ok(expect(tern_lsm_check_selinux("--process-label", "a:b:c:s0", &e), &e) < 0,
		   "a label with SELinux off fails");
		ok(msg && strstr(msg, "--process-label `a:b:c:s0`: SELinux is not enabled"),
		   "naming where it came from: %s", msg ? msg : "");
	}
	if (!tern_apparmor_enabled()) {
		ok(expect(tern_lsm_check_apparmor("--apparmor", "p", &e), &e) < 0,
		   "a profile with AppArmor off fails");
		ok(msg && strstr(msg, "--apparmor `p`: AppArmor is not enabled"), "with: %s",
		   msg ? msg : "");
	}
}

static int sched_flags(const char *policy, int64_t prio, uint64_t rt, uint64_t dl, char **flags)
{
	oci_scheduler s = {.policy = (char *)policy, .flags = flags};
	tern_error *e = NULL;

	s.priority = (oci_opt_int64){true, prio};
	s.runtime = (oci_opt_uint64){rt != 0, rt};
	s.deadline = (oci_opt_uint64){dl != 0, dl};
	return expect(tern_scheduler_check(&s, &e), &e);
}

static void scheduler_checks(void)
{
	is_int(sched("SCHED_OTHER", 0, 5, 0, 0, 0), 0, "SCHED_OTHER nice 5");
	is_int(sched("SCHED_BATCH", 0, -20, 0, 0, 0), 0, "SCHED_BATCH nice -20");
	is_int(sched("SCHED_IDLE", 0, 0, 0, 0, 0), 0, "SCHED_IDLE");
	is_int(sched("SCHED_FIFO", 1, 0, 0, 0, 0), 0, "SCHED_FIFO priority 1");
	is_int(sched("SCHED_RR", 99, 0, 0, 0, 0), 0, "SCHED_RR priority 99");
	ok(sched("SCHED_FIFO", 0, 0, 0, 0, 0) < 0, "SCHED_FIFO priority 0 is refused");
	ok(msg && strstr(msg, "process.scheduler.priority: 0 is out of range for SCHED_FIFO "
			      "(1-99)"),
	   "naming the field and range: %s", msg ? msg : "");
	ok(sched("SCHED_RR", 100, 0, 0, 0, 0) < 0, "SCHED_RR priority 100 is refused");
	ok(sched("SCHED_OTHER", 10, 0, 0, 0, 0) < 0, "SCHED_OTHER priority 10 is refused");
	ok(msg && strstr(msg, "process.scheduler.priority: 10"), "%s", msg ? msg : "");
	ok(sched("SCHED_DEADLINE", 5, 0, 10000000, 30000000, 0) < 0,
	   "SCHED_DEADLINE priority 5 is refused");
	ok(sched("SCHED_OTHER", 0, 20, 0, 0, 0) < 0, "nice 20 is refused");
	ok(msg && strstr(msg, "process.scheduler.nice: 20"), "%s", msg ? msg : "");
	ok(sched("SCHED_OTHER", 0, -21, 0, 0, 0) < 0, "nice -21 is refused");

	/* nice where the kernel takes it and drops it (checked on 6.18:
	 * sched_setattr returns 0 and the nice value stays 0) */
	ok(sched("SCHED_IDLE", 0, 19, 0, 0, 0) < 0, "SCHED_IDLE with nice 19 is refused");
	is_str(msg,
	       "process.scheduler.nice: 19 has no effect with SCHED_IDLE (nice is for "
	       "SCHED_OTHER and SCHED_BATCH)",
	       "naming the field");
	ok(sched("SCHED_FIFO", 10, -5, 0, 0, 0) < 0, "SCHED_FIFO with nice -5 is refused");
	ok(sched("SCHED_DEADLINE", 0, 3, 10000000, 30000000, 0) < 0,
	   "SCHED_DEADLINE with nice 3 is refused");

	ok(sched("SCHED_FOO", 0, 0, 0, 0, 0) < 0, "an unknown policy is refused");
	ok(msg && strstr(msg, "process.scheduler.policy: unknown policy `SCHED_FOO`"), "%s",
	   msg ? msg : "");
	ok(sched("SCHED_ISO", 0, 0, 0, 0, 0) < 0, "SCHED_ISO (not in Linux) is refused");
	ok(sched(NULL, 0, 0, 0, 0, 0) < 0, "no policy is refused");
	ok(msg && strstr(msg, "process.scheduler.policy"), "%s", msg ? msg : "");

	/* SCHED_DEADLINE: __checkparam_dl's rules */
	is_int(sched("SCHED_DEADLINE", 0, 0, 10000000, 30000000, 30000000), 0,
	       "SCHED_DEADLINE 10ms/30ms/30ms");
	is_int(sched("SCHED_DEADLINE", 0, 0, 10000000, 30000000, 0), 0,
	       "SCHED_DEADLINE without a period (it defaults to the deadline)");
	is_int(sched("SCHED_DEADLINE", 0, 0, 1024, 100000, 0), 0,
	       "runtime 1024 ns, deadline 100 us (both minimums)");
	ok(sched("SCHED_DEADLINE", 0, 0, 0, 30000000, 0) < 0, "SCHED_DEADLINE needs a runtime");
	is_str(msg, "process.scheduler.runtime: is required for SCHED_DEADLINE (nanoseconds)",
	       "naming it");
	ok(sched("SCHED_DEADLINE", 0, 0, 10000000, 0, 0) < 0, "SCHED_DEADLINE needs a deadline");
	is_str(msg,
	       "process.scheduler.deadline: is required for SCHED_DEADLINE (nanoseconds; period "
	       "defaults to it)",
	       "naming it");
	ok(sched("SCHED_DEADLINE", 0, 0, 40000000, 30000000, 0) < 0,
	   "runtime above the deadline is refused");
	is_str(msg,
	       "process.scheduler.runtime: 40000000 ns is more than the deadline, 30000000 ns "
	       "(SCHED_DEADLINE needs runtime <= deadline <= period)",
	       "naming runtime");
	ok(sched("SCHED_DEADLINE", 0, 0, 10000000, 30000000, 20000000) < 0,
	   "a deadline above the period is refused");
	is_str(msg,
	       "process.scheduler.deadline: 30000000 ns is more than the period, 20000000 ns "
	       "(SCHED_DEADLINE needs runtime <= deadline <= period)",
	       "naming deadline");
	ok(sched("SCHED_DEADLINE", 0, 0, 100, 30000000, 0) < 0,
	   "a runtime below 1024 ns is refused");
	is_str(msg, "process.scheduler.runtime: 100 ns is below the kernel's minimum of 1024 ns",
	       "naming runtime");
	ok(sched("SCHED_DEADLINE", 0, 0, 20000, 50000, 0) < 0,
	   "a period (the deadline) of 50 us, below the kernel's 100 us, is refused");
	ok(msg && strstr(msg, "process.scheduler.deadline: a period of 50000 ns is outside what "
			      "this kernel takes"),
	   "naming the deadline, which is the period: %s", msg ? msg : "");
	ok(sched("SCHED_DEADLINE", 0, 0, 1000000, 2000000, 5000000000ULL) < 0,
	   "a period of 5 s, above the kernel's 4.19 s, is refused");
	ok(msg && strstr(msg, "process.scheduler.period: a period of 5000000000 ns"),
	   "naming period: %s", msg ? msg : "");
	ok(sched("SCHED_DEADLINE", 0, 0, 1000000, 2000000, (uint64_t)1 << 63) < 0,
	   "a period of 2^63 is refused");
	ok(msg && strstr(msg, "process.scheduler.period") && strstr(msg, "2^63"), "%s",
	   msg ? msg : "");
	ok(sched("SCHED_OTHER", 0, 0, 10000000, 0, 0) < 0,
	   "deadline parameters with another policy are refused");
	is_str(msg,
	       "process.scheduler.runtime: runtime, deadline and period are for SCHED_DEADLINE "
	       "only, not SCHED_OTHER",
	       "naming the field");
	ok(sched("SCHED_FIFO", 10, 0, 0, 0, 20000000) < 0, "a period with SCHED_FIFO is refused");
	ok(msg && strstr(msg, "process.scheduler.period:"), "%s", msg ? msg : "");

	/* flags */
	char *good[] = {"SCHED_FLAG_RESET_ON_FORK", NULL};
	char *bad[] = {"SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_BOGUS", NULL};
	char *overrun[] = {"SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_DL_OVERRUN", NULL};
	char *reclaim[] = {"SCHED_FLAG_RECLAIM", NULL};
	char *clamp_min[] = {"SCHED_FLAG_UTIL_CLAMP_MIN", NULL};
	char *clamp_max[] = {"SCHED_FLAG_UTIL_CLAMP_MAX", NULL};
	char *keep_params[] = {"SCHED_FLAG_KEEP_PARAMS", NULL};
	char *keep_policy[] = {"SCHED_FLAG_KEEP_POLICY", NULL};

	is_int(sched_flags("SCHED_OTHER", 0, 0, 0, good), 0, "a known flag");
	ok(sched_flags("SCHED_OTHER", 0, 0, 0, bad) < 0, "an unknown flag is refused");
	ok(msg && strstr(msg, "process.scheduler.flags[1]: unknown flag `SCHED_FLAG_BOGUS`"),
	   "naming its index: %s", msg ? msg : "");
	is_int(sched_flags("SCHED_DEADLINE", 0, 10000000, 30000000, overrun), 0,
	       "SCHED_FLAG_DL_OVERRUN with SCHED_DEADLINE");
	is_int(sched_flags("SCHED_DEADLINE", 0, 10000000, 30000000, reclaim), 0,
	       "SCHED_FLAG_RECLAIM with SCHED_DEADLINE");
	ok(sched_flags("SCHED_OTHER", 0, 0, 0, overrun) < 0,
	   "SCHED_FLAG_DL_OVERRUN with SCHED_OTHER is refused (the kernel ignores it)");
	is_str(msg,
	       "process.scheduler.flags[1]: SCHED_FLAG_DL_OVERRUN is for SCHED_DEADLINE only, "
	       "not SCHED_OTHER",
	       "naming the flag and policy");
	ok(sched_flags("SCHED_FIFO", 10, 0, 0, reclaim) < 0, "SCHED_FLAG_RECLAIM with SCHED_FIFO");
	ok(sched_flags("SCHED_OTHER", 0, 0, 0, clamp_min) < 0,
	   "SCHED_FLAG_UTIL_CLAMP_MIN is refused (no field for the value)");
	is_str(msg,
	       "process.scheduler.flags[0]: SCHED_FLAG_UTIL_CLAMP_MIN needs a utilization value "
	       "(sched_attr's sched_util_min/max), which the runtime-spec has no field for",
	       "says why");
	ok(sched_flags("SCHED_BATCH", 0, 0, 0, clamp_max) < 0, "SCHED_FLAG_UTIL_CLAMP_MAX too");
	ok(sched_flags("SCHED_BATCH", 0, 0, 0, keep_params) < 0,
	   "SCHED_FLAG_KEEP_PARAMS is refused (the call would change nothing)");
	ok(msg && strstr(msg, "process.scheduler.flags[0]: with SCHED_FLAG_KEEP_PARAMS"), "%s",
	   msg ? msg : "");
	/* this test runs as SCHED_OTHER, whatever runs it: make sure */
	if (sched_getscheduler(0) == SCHED_OTHER) {
		is_int(sched_flags("SCHED_OTHER", 0, 0, 0, keep_policy), 0,
		       "SCHED_FLAG_KEEP_POLICY with the policy the process inherits");
		ok(sched_flags("SCHED_FIFO", 10, 0, 0, keep_policy) < 0,
		   "SCHED_FLAG_KEEP_POLICY with another policy is refused");
		is_str(msg,
		       "process.scheduler.flags[0]: SCHED_FLAG_KEEP_POLICY keeps the policy the "
		       "process inherits from tern, SCHED_OTHER, not process.scheduler.policy "
		       "SCHED_FIFO",
		       "naming both policies");
	}
}

static void ioprio_checks(void)
{
	is_int(ioprio("IOPRIO_CLASS_RT", 0), 0, "IOPRIO_CLASS_RT 0");
	is_int(ioprio("IOPRIO_CLASS_BE", 7), 0, "IOPRIO_CLASS_BE 7");
	is_int(ioprio("IOPRIO_CLASS_IDLE", 0), 0, "IOPRIO_CLASS_IDLE 0");
	ok(ioprio("IOPRIO_CLASS_BE", 8) < 0, "priority 8 is refused");
	ok(msg && strstr(msg, "process.ioPriority.priority: 8 is out of range (0-7)"), "%s",
	   msg ? msg : "");
	ok(ioprio("IOPRIO_CLASS_RT", 8) < 0, "RT priority 8 is refused (a hint to 6.x kernels)");
	ok(ioprio("IOPRIO_CLASS_BE", -1) < 0, "priority -1 is refused");
	ok(ioprio("IOPRIO_CLASS_IDLE", 4) < 0, "IOPRIO_CLASS_IDLE 4 is refused (no levels)");
	is_str(msg,
	       "process.ioPriority.priority: IOPRIO_CLASS_IDLE has no levels, 4 would be ignored "
	       "(give 0)",
	       "naming the field");
	ok(ioprio("IOPRIO_CLASS_NONE", 0) < 0, "IOPRIO_CLASS_NONE is refused");
	ok(msg && strstr(msg, "process.ioPriority.class: IOPRIO_CLASS_NONE is not a class of "
			      "the runtime-spec"),
	   "%s", msg ? msg : "");
	ok(ioprio("IOPRIO_CLASS_BOGUS", 0) < 0, "an unknown class is refused");
	ok(msg && strstr(msg, "process.ioPriority.class: unknown class `IOPRIO_CLASS_BOGUS`"), "%s",
	   msg ? msg : "");
	ok(ioprio(NULL, 0) < 0, "no class is refused");
}

static void personality_checks(void)
{
	unsigned long v = 1;
	char *flags[] = {"ADDR_NO_RANDOMIZE", NULL};
	char *bad[] = {"ADDR_NO_RANDOMIZE", "NO_SUCH_FLAG", NULL};

	is_int(persona("LINUX", NULL, &v), 0, "domain LINUX");
	is_int(v, PER_LINUX, "is PER_LINUX");
	is_int(persona("LINUX32", flags, &v), 0, "domain LINUX32 with ADDR_NO_RANDOMIZE");
	is_int(v, PER_LINUX32 | ADDR_NO_RANDOMIZE, "is their union");
	ok(persona("SVR4", NULL, &v) < 0, "an unknown domain is refused");
	ok(msg && strstr(msg, "linux.personality.domain: unknown domain `SVR4`"), "%s",
	   msg ? msg : "");
	ok(persona("LINUX", bad, &v) < 0, "an unknown flag is refused");
	ok(msg && strstr(msg, "linux.personality.flags[1]: unknown flag `NO_SUCH_FLAG`"), "%s",
	   msg ? msg : "");
}

int main(void)
{
	mount_labels();
	lsm_checks();
	scheduler_checks();
	ioprio_checks();
	personality_checks();
	free(msg);
	return done_testing();
}
