#include "cgroup-systemd.h"
#include "cgroup-v2.h"
#include "utils.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define SD_DEST	   "org.freedesktop.systemd1"
#define SD_PATH	   "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
/* How long systemd gets to start or stop a scope. Under software emulation
 * (the test guest) a job can take seconds. */
#define JOB_TIMEOUT_USEC (30ULL * 1000 * 1000)
#define USEC_INFINITY	 UINT64_MAX

bool tern_systemd_booted(void)
{
	/* systemd creates this directory early at boot, and only as PID 1 */
	return access("/run/systemd/system", F_OK) == 0;
}

char *tern_systemd_slice_path(const char *slice)
{
	size_t len = slice ? strlen(slice) : 0;
	static const char suffix[] = ".slice";
	const size_t slen = sizeof(suffix) - 1;

	if (len <= slen || strcmp(slice + len - slen, suffix) != 0 || strchr(slice, '/'))
		return NULL;
	if (strcmp(slice, "-.slice") == 0)
		return tern_xstrdup(""); /* the root slice is the root cgroup */
	size_t base = len - slen;
	/* "a--b", "-a" and "a-" name no parent slice */
	if (slice[0] == '-' || slice[base - 1] == '-' || strstr(slice, "--"))
		return NULL;

	/* every "-" starts a new level: a-b-c.slice lives in a-b.slice in a.slice */
	char *out = tern_xstrdup("");
	for (size_t i = 0; i <= base; i++) {
		if (i < base && slice[i] != '-')
			continue;
		char *next = tern_strdup_printf("%s/%.*s.slice", out, (int)i, slice);
		free(out);
		out = next;
	}
	return out;
}

const char *tern_systemd_state_unit(const char *cgroup_path)
{
	const char *colon = cgroup_path ? strrchr(cgroup_path, ':') : NULL;
	return colon ? colon + 1 : cgroup_path;
}

void tern_systemd_unit_clear(tern_systemd_unit *u)
{
	free(u->slice);
	free(u->unit);
	free(u->cgroup);
	memset(u, 0, sizeof(*u));
}

int tern_systemd_unit_parse(const char *cgroups_path, const char *id, tern_systemd_unit *u,
			    tern_error **err)
{
	cleanup_free char *copy = NULL;
	const char *slice = "system.slice", *prefix = "tern", *name = id;

	memset(u, 0, sizeof(*u));
	if (cgroups_path && *cgroups_path) {
		copy = tern_xstrdup(cgroups_path);
		char *c1 = strchr(copy, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL || strchr(c2 + 1, ':'))
			return tern_error_make(err, EINVAL,
					       "linux.cgroupsPath `%s`: with --systemd-cgroup it "
					       "must have the form slice:prefix:name",
					       cgroups_path);
		*c1 = *c2 = '\0';
		if (*copy)
			slice = copy;
		prefix = c1 + 1;
		name = c2 + 1;
	}
	if (*name == '\0' || strchr(name, '/') || strchr(prefix, '/'))
		return tern_error_make(err, EINVAL,
				       "linux.cgroupsPath `%s`: the prefix and name of "
				       "slice:prefix:name must not contain `/`, and the name must "
				       "not be empty",
				       cgroups_path);
	{
		size_t n = strlen(name);
		if (n > 6 && strcmp(name + n - 6, ".slice") == 0)
			return tern_error_make(err, ENOTSUP,
					       "linux.cgroupsPath `%s`: a container that is a "
					       "slice itself is not supported; name a scope",
					       cgroups_path);
	}
	cleanup_free char *slice_path = tern_systemd_slice_path(slice);
	if (slice_path == NULL)
		return tern_error_make(err, EINVAL,
				       "linux.cgroupsPath `%s`: `%s` is not a systemd slice name "
				       "(NAME.slice, with `-` only between levels)",
				       cgroups_path ? cgroups_path : "", slice);
	u->slice = tern_xstrdup(slice);
	u->unit = *prefix ? tern_strdup_printf("%s-%s.scope", prefix, name)
			  : tern_strdup_printf("%s.scope", name);
	u->cgroup = tern_strdup_printf("%s/%s", slice_path, u->unit);
	return 0;
}

/* ---- libsystemd, loaded on first use ----
 *
 * Linked, libsystemd and what it pulls in (libgcrypt, lz4, zstd, lzma)
 * cost every tern command about 1.8 ms of dynamic loading here, and only
 * the systemd cgroup driver needs it: it is opened when that driver first
 * talks to systemd. */
static struct {
	__typeof__(sd_bus_call) *call;
	__typeof__(sd_bus_call_method) *call_method;
	__typeof__(sd_bus_error_free) *error_free;
	__typeof__(sd_bus_error_get_errno) *error_get_errno;
	__typeof__(sd_bus_error_has_name) *error_has_name;
	__typeof__(sd_bus_error_is_set) *error_is_set;
	__typeof__(sd_bus_flush_close_unref) *flush_close_unref;
	__typeof__(sd_bus_match_signal) *match_signal;
	__typeof__(sd_bus_message_append) *message_append;
	__typeof__(sd_bus_message_close_container) *message_close_container;
	__typeof__(sd_bus_message_new_method_call) *message_new_method_call;
	__typeof__(sd_bus_message_open_container) *message_open_container;
	__typeof__(sd_bus_message_read) *message_read;
	__typeof__(sd_bus_new) *new;
	__typeof__(sd_bus_open_system) *open_system;
	__typeof__(sd_bus_process) *process;
	__typeof__(sd_bus_set_address) *set_address;
	__typeof__(sd_bus_slot_unref) *slot_unref;
	__typeof__(sd_bus_start) *start;
	__typeof__(sd_bus_unref) *unref;
	__typeof__(sd_bus_wait) *wait;
	__typeof__(sd_bus_message_unref) *message_unref;
} sd;

static int sd_load(tern_error **err)
{
	static void *lib;

	if (lib)
		return 0;
	void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (h == NULL)
		return tern_error_make_quiet(err, ENOENT, "--systemd-cgroup: %s", dlerror());
#define SYM(name) (*(void **)&sd.name = dlsym(h, "sd_bus_" #name)) != NULL
	bool all =
	    SYM(call) &&
	    SYM(call_method) &&
	    SYM(error_free) &&
	    SYM(error_get_errno) &&
	    SYM(error_has_name) &&
	    SYM(error_is_set) &&
	    SYM(flush_close_unref) &&
	    SYM(match_signal) &&
	    SYM(message_append) &&
	    SYM(message_close_container) &&
	    SYM(message_new_method_call) &&
	    SYM(message_open_container) &&
	    SYM(message_read) &&
	    SYM(new) &&
	    SYM(open_system) &&
	    SYM(process) &&
	    SYM(set_address) &&
	    SYM(slot_unref) &&
	    SYM(start) &&
	    SYM(unref) &&
	    SYM(wait) &&
	    SYM(message_unref) &&
	    true;
#undef SYM
	if (!all) {
		const char *why = dlerror();
		dlclose(h);
		return tern_error_make_quiet(err, ENOENT, "--systemd-cgroup: libsystemd.so.0: %s",
					     why ? why : "a symbol is missing");
	}
	lib = h;
	return 0;
}

static void message_unrefp(sd_bus_message **m)
{
	if (*m)
		sd.message_unref(*m);
}

/* ---- the bus ---- */

static int bus_error(tern_error **err, int r, const sd_bus_error *e, const char *what,
		     const char *unit)
{
	if (e && sd.error_is_set(e))
		return tern_error_make(err, sd.error_get_errno(e), "systemd: %s `%s`: %s", what,
				       unit, e->message ? e->message : e->name);
	return tern_error_make(err, -r, "systemd: %s `%s`", what, unit);
}

static void bus_close(sd_bus **bus)
{
	if (*bus)
		sd.flush_close_unref(*bus);
}
#define cleanup_bus __attribute__((cleanup(bus_close)))

/* As root, talk to systemd directly on its private socket, as systemctl
 * does: it needs no D-Bus daemon and is there as soon as systemd runs.
 * Otherwise, the system bus. */
static int bus_open(sd_bus **bus, tern_error **err)
{
	int r;

	*bus = NULL;
	if (sd_load(err) < 0)
		return -1;
	if (geteuid() == 0 && sd.new(bus) >= 0) {
		if (sd.set_address(*bus, "unix:path=/run/systemd/private") >= 0 &&
		    sd.start(*bus) >= 0)
			return 0;
		*bus = sd.unref(*bus);
	}
	r = sd.open_system(bus);
	if (r < 0)
		return tern_error_make(err, -r,
				       "--systemd-cgroup: connect to systemd (its private "
				       "socket /run/systemd/private and the D-Bus system bus)");
	return 0;
}

/* JobRemoved signals seen so far: the reply that names our job can arrive
 * after the signal that says the job is done. */
typedef struct {
	char **paths;
	char **results;
	size_t n;
} job_log;

static void job_log_clear(job_log *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->paths[i]);
		free(l->results[i]);
	}
	free(l->paths);
	free(l->results);
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	job_log *l = userdata;
	uint32_t id;
	const char *path, *unit, *result;

	(void)ret_error;
	if (sd.message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	l->paths = realloc(l->paths, (l->n + 1) * sizeof(char *));
	l->results = realloc(l->results, (l->n + 1) * sizeof(char *));
	if (l->paths == NULL || l->results == NULL)
		abort();
	l->paths[l->n] = tern_xstrdup(path);
	l->results[l->n] = tern_xstrdup(result);
	l->n++;
	return 0;
}

static uint64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Wait for the JobRemoved signal of `job`; "done" is success. */
static int wait_job(sd_bus *bus, job_log *l, const char *job, const char *what, const char *unit,
		    tern_error **err)
{
	uint64_t deadline = now_usec() + JOB_TIMEOUT_USEC;

	for (;;) {
		for (size_t i = 0; i < l->n; i++) {
			if (strcmp(l->paths[i], job) != 0)
				continue;
			if (strcmp(l->results[i], "done") == 0)
				return 0;
			return tern_error_make(err, EIO,
					       "systemd: %s `%s`: the job ended with result "
					       "`%s` (see `journalctl -u %s`)",
					       what, unit, l->results[i], unit);
		}
		int r = sd.process(bus, NULL);
		if (r < 0)
			return bus_error(err, r, NULL, what, unit);
		if (r > 0)
			continue;
		uint64_t now = now_usec();
		if (now >= deadline)
			return tern_error_make(
			    err, ETIMEDOUT, "systemd: %s `%s`: no answer within %llu s", what, unit,
			    (unsigned long long)(JOB_TIMEOUT_USEC / 1000000));
		r = sd.wait(bus, deadline - now);
		if (r < 0)
			return bus_error(err, r, NULL, what, unit);
	}
}

/* ---- properties ---- */

#define APPEND(m, name, type, value)                                                               \
	do {                                                                                       \
		int r_ = sd.message_append(m, "(sv)", name, type, value);                      \
		if (r_ < 0)                                                                        \
			return r_;                                                                 \
	} while (0)

/* systemd takes the CPU quota as run time per second and applies it with
 * 10 ms granularity: round up so the container never gets less. */
static uint64_t quota_per_sec(int64_t quota, uint64_t period)
{
	if (quota <= 0)
		return USEC_INFINITY;
	if (period == 0)
		period = 100000;
	uint64_t per_sec = (uint64_t)quota * 1000000 / period;
	if (per_sec % 10000)
		per_sec = (per_sec / 10000 + 1) * 10000;
	return per_sec;
}

/* The limits systemd would otherwise reset on a daemon-reload. tern writes
 * every field into the cgroup files as well, so what is not listed here
 * still applies. */
static int append_limits(sd_bus_message *m, const oci_resources *r, bool v2)
{
	if (r == NULL)
		return 0;
	const oci_memory *mem = r->memory;
	if (mem && mem->limit.set) {
		uint64_t v = mem->limit.value < 0 ? USEC_INFINITY : (uint64_t)mem->limit.value;
		APPEND(m, v2 ? "MemoryMax" : "MemoryLimit", "t", v);
	}
	if (v2 && mem && mem->reservation.set && mem->reservation.value >= 0)
		APPEND(m, "MemoryLow", "t", (uint64_t)mem->reservation.value);
	if (v2 && mem && mem->swap.set && mem->limit.set) {
		/* OCI's swap is memory+swap; v2's swap limit is swap alone */
		uint64_t v = USEC_INFINITY;
		if (mem->swap.value >= 0 && mem->limit.value >= 0)
			v = mem->swap.value > mem->limit.value
				? (uint64_t)(mem->swap.value - mem->limit.value)
				: 0;
		APPEND(m, "MemorySwapMax", "t", v);
	}
	if (r->pids_limit.set)
		APPEND(m, "TasksMax", "t",
		       r->pids_limit.value > 0 ? (uint64_t)r->pids_limit.value : USEC_INFINITY);
	const oci_cpu *cpu = r->cpu;
	if (cpu && cpu->shares.set && cpu->shares.value != 0) {
		if (v2)
			APPEND(m, "CPUWeight", "t",
			       tern_cgroup_v2_shares_to_weight(cpu->shares.value));
		else
			APPEND(m, "CPUShares", "t", cpu->shares.value);
	}
	if (cpu && cpu->period.set && cpu->period.value != 0)
		APPEND(m, "CPUQuotaPeriodUSec", "t", cpu->period.value);
	if (cpu && cpu->quota.set)
		APPEND(m, "CPUQuotaPerSecUSec", "t",
		       quota_per_sec(cpu->quota.value, cpu->period.set ? cpu->period.value : 0));
	if (r->block_io && r->block_io->weight.set && r->block_io->weight.value != 0) {
		if (v2)
			APPEND(m, "IOWeight", "t",
			       tern_cgroup_v2_blkio_to_io_weight(r->block_io->weight.value));
		else
			APPEND(m, "BlockIOWeight", "t", r->block_io->weight.value);
	}
	return 0;
}

static int append_scope_properties(sd_bus_message *m, const tern_systemd_unit *u, pid_t pid,
				   const oci_resources *r, bool v2)
{
	cleanup_free char *desc = tern_strdup_printf("tern container %s", u->unit);
	int ret;

	APPEND(m, "Description", "s", desc);
	APPEND(m, "Slice", "s", u->slice);
	/* the container's own tree is ours to manage, not systemd's */
	APPEND(m, "Delegate", "b", 1);
	/* no ordering against shutdown.target etc.: the scope only holds a process */
	APPEND(m, "DefaultDependencies", "b", 0);
	/* a scope whose processes failed is not kept around to block the name */
	APPEND(m, "CollectMode", "s", "inactive-or-failed");
	APPEND(m, "MemoryAccounting", "b", 1);
	APPEND(m, "CPUAccounting", "b", 1);
	APPEND(m, "TasksAccounting", "b", 1);
	APPEND(m, v2 ? "IOAccounting" : "BlockIOAccounting", "b", 1);
	ret = sd.message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t)pid);
	if (ret < 0)
		return ret;
	return append_limits(m, r, v2);
}

/* ---- the calls ---- */

static int call_start(sd_bus *bus, const tern_systemd_unit *u, pid_t pid, const oci_resources *r,
		      bool v2, sd_bus_error *e, sd_bus_message **reply)
{
	__attribute__((cleanup(message_unrefp))) sd_bus_message *m = NULL;
	int ret = sd.message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
						 "StartTransientUnit");
	if (ret >= 0)
		ret = sd.message_append(m, "ss", u->unit, "replace");
	if (ret >= 0)
		ret = sd.message_open_container(m, 'a', "(sv)");
	if (ret >= 0)
		ret = append_scope_properties(m, u, pid, r, v2);
	if (ret >= 0)
		ret = sd.message_close_container(m);
	if (ret >= 0)
		ret = sd.message_append(m, "a(sa(sv))", 0); /* no auxiliary units */
	if (ret < 0)
		return ret;
	return sd.call(bus, m, JOB_TIMEOUT_USEC, e, reply);
}

/* The reply of a method that queued a job names the job: wait for it. */
static int run_job(sd_bus *bus, job_log *l, sd_bus_message *reply, const char *what,
		   const char *unit, tern_error **err)
{
	const char *job = NULL;
	int r = sd.message_read(reply, "o", &job);
	if (r < 0)
		return bus_error(err, r, NULL, what, unit);
	return wait_job(bus, l, job, what, unit, err);
}

static int subscribe(sd_bus *bus, job_log *l, sd_bus_slot **slot)
{
	int r = sd.match_signal(bus, slot, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved",
				    on_job_removed, l);
	if (r < 0)
		return r;
	/* Signals go to every direct (private socket) client; on the bus they
	 * go only to subscribers. */
	sd.call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", NULL, NULL, "");
	return 0;
}

/* A connection that watches systemd's jobs, opened before the call that
 * queues one so that the job's end cannot be missed. */
typedef struct {
	sd_bus *bus;
	sd_bus_slot *slot;
	job_log log;
	sd_bus_error error; /* of the last call */
} job_session;

static void job_session_close(job_session *s)
{
	job_log_clear(&s->log);
	if (sd.slot_unref == NULL)
		return; /* libsystemd could not be loaded: nothing was opened */
	s->slot = sd.slot_unref(s->slot);
	bus_close(&s->bus);
	sd.error_free(&s->error);
}
#define cleanup_job_session __attribute__((cleanup(job_session_close)))

static int job_session_open(job_session *s, const char *unit, tern_error **err)
{
	int ret = bus_open(&s->bus, err);
	if (ret < 0)
		return ret;
	ret = subscribe(s->bus, &s->log, &s->slot);
	if (ret < 0)
		return bus_error(err, ret, NULL, "watch jobs for", unit);
	return 0;
}

int tern_systemd_start_scope(const tern_systemd_unit *u, pid_t pid, const oci_resources *r, bool v2,
			     tern_error **err)
{
	cleanup_job_session job_session s = {.error = SD_BUS_ERROR_NULL};
	__attribute__((cleanup(message_unrefp))) sd_bus_message *reply = NULL;
	int ret = job_session_open(&s, u->unit, err);

	if (ret < 0)
		return ret;
	ret = call_start(s.bus, u, pid, r, v2, &s.error, &reply);
	if (ret < 0 && sd.error_has_name(&s.error, "org.freedesktop.systemd1.UnitExists")) {
		/* A failed unit of that name may linger: reset it and try once
		 * more. An active one is another container's. */
		sd.error_free(&s.error);
		sd.call_method(s.bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", NULL,
				   NULL, "s", u->unit);
		ret = call_start(s.bus, u, pid, r, v2, &s.error, &reply);
		if (ret < 0 &&
		    sd.error_has_name(&s.error, "org.freedesktop.systemd1.UnitExists"))
			return tern_error_make(err, EEXIST,
					       "systemd: unit `%s` already exists: is another "
					       "container using this linux.cgroupsPath?",
					       u->unit);
	}
	if (ret < 0)
		return bus_error(err, ret, &s.error, "start scope", u->unit);
	return run_job(s.bus, &s.log, reply, "start scope", u->unit, err);
}

int tern_systemd_update_scope(const char *unit, const oci_resources *r, bool v2, tern_error **err)
{
	cleanup_bus sd_bus *bus = NULL;
	__attribute__((cleanup(message_unrefp))) sd_bus_message *m = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int ret = bus_open(&bus, err);

	if (ret < 0)
		return ret;
	ret = sd.message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
					     "SetUnitProperties");
	if (ret >= 0)
		ret = sd.message_append(m, "sb", unit, 1); /* runtime: not persisted */
	if (ret >= 0)
		ret = sd.message_open_container(m, 'a', "(sv)");
	if (ret >= 0)
		ret = append_limits(m, r, v2);
	if (ret >= 0)
		ret = sd.message_close_container(m);
	if (ret >= 0)
		ret = sd.call(bus, m, JOB_TIMEOUT_USEC, &e, NULL);
	if (ret < 0)
		ret = bus_error(err, ret, &e, "set properties of", unit);
	sd.error_free(&e);
	return ret;
}

int tern_systemd_stop_scope(const char *unit, tern_error **err)
{
	cleanup_job_session job_session s = {.error = SD_BUS_ERROR_NULL};
	__attribute__((cleanup(message_unrefp))) sd_bus_message *reply = NULL;
	int ret = job_session_open(&s, unit, err);

	if (ret < 0)
		return ret;
	ret = sd.call_method(s.bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", &s.error, &reply,
				 "ss", unit, "replace");
	if (ret < 0) {
		/* already gone (an empty scope is collected by itself) */
		if (sd.error_has_name(&s.error, "org.freedesktop.systemd1.NoSuchUnit"))
			return 0;
		return bus_error(err, ret, &s.error, "stop scope", unit);
	}
	return run_job(s.bus, &s.log, reply, "stop scope", unit, err);
}
