/* linux.memoryPolicy and process.execCPUAffinity: checked against the
 * machine in the parent, applied in the child. See numa.h for when. */
#include "numa.h"
#include "utils.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* The kernel's numbers (include/uapi/linux/mempolicy.h). They are written
 * out here rather than taken from <linux/mempolicy.h>: Debian 12's headers
 * (Linux 6.1) have no MPOL_WEIGHTED_INTERLEAVE, and the modes there are
 * enum members, which an #ifndef cannot test. `since` is the first Linux
 * with the mode or flag, for the message when this kernel lacks it. */
static const struct {
	int value;
	const char *since;
} kernel_modes[OCI_MPOL_MODE_COUNT] = {
    [OCI_MPOL_DEFAULT] = {0, "2.6.7"},
    [OCI_MPOL_PREFERRED] = {1, "2.6.7"},
    [OCI_MPOL_BIND] = {2, "2.6.7"},
    [OCI_MPOL_INTERLEAVE] = {3, "2.6.7"},
    [OCI_MPOL_LOCAL] = {4, "3.8"},
    [OCI_MPOL_PREFERRED_MANY] = {5, "5.15"},
    [OCI_MPOL_WEIGHTED_INTERLEAVE] = {6, "6.9"},
};

static const int kernel_flags[OCI_MPOL_FLAG_COUNT] = {
    [OCI_MPOL_F_STATIC_NODES] = 1 << 15,
    [OCI_MPOL_F_RELATIVE_NODES] = 1 << 14,
    [OCI_MPOL_F_NUMA_BALANCING] = 1 << 13, /* Linux 5.12 */
};

#define KERNEL_FLAG_MASK ((1 << 15) | (1 << 14) | (1 << 13))

/* ---- number lists ---- */

typedef struct {
	oci_id_range *r;
	size_t n;
} id_list;

static void id_list_free(id_list *l)
{
	free(l->r);
	l->r = NULL;
	l->n = 0;
}

static bool id_list_has(const id_list *l, uint32_t id)
{
	for (size_t i = 0; i < l->n; i++)
		if (id >= l->r[i].first && id <= l->r[i].last)
			return true;
	return false;
}

static uint32_t id_list_max(const id_list *l)
{
	uint32_t m = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->r[i].last > m)
			m = l->r[i].last;
	return m;
}

static size_t id_list_count(const id_list *l)
{
	size_t c = 0;
	for (uint32_t id = 0; l->n > 0 && id <= id_list_max(l); id++)
		c += id_list_has(l, id);
	return c;
}

/* The first id of `l` that `other` lacks; -1 when there is none. */
static int64_t first_missing(const id_list *l, const id_list *other)
{
	for (size_t i = 0; i < l->n; i++)
		for (uint64_t id = l->r[i].first; id <= l->r[i].last; id++)
			if (!id_list_has(other, (uint32_t)id))
				return (int64_t)id;
	return -1;
}

static bool id_lists_meet(const id_list *a, const id_list *b)
{
	for (size_t i = 0; i < a->n; i++)
		for (uint64_t id = a->r[i].first; id <= a->r[i].last; id++)
			if (id_list_has(b, (uint32_t)id))
				return true;
	return false;
}

/* A list given in config.json (checked by libocispec already). */
static int parse_config_list(const char *s, id_list *out, const char *field, tern_error **err)
{
	const char *why;

	if (oci_id_list_parse(s, &out->r, &out->n, &why) < 0)
		return tern_error_make_quiet(err, EINVAL, "%s: `%s` is not a list: %s", field, s,
					     why);
	return 0;
}

/* A sysfs list file such as node/possible ("0-3\n"). *text keeps the list
 * for messages. -ENOENT when the file does not exist. */
static int read_sys_list(const char *sysdir, const char *rel, id_list *out, char **text,
			 tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", sysdir, rel);
	cleanup_free char *data = NULL;
	const char *why;
	size_t len;
	int ret;

	ret = tern_read_file(path, &data, &len, 1 << 16, err);
	if (ret < 0)
		return ret;
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == ' '))
		data[--len] = '\0';
	if (oci_id_list_parse(data, &out->r, &out->n, &why) < 0)
		return tern_error_make_quiet(err, EINVAL, "`%s` is not a list (`%s`): %s", path,
					     data, why);
	if (text)
		*text = steal_pointer(&data);
	return 0;
}

static const char *kernel_release(struct utsname *u)
{
	return uname(u) == 0 ? u->release : "?";
}

/* ---- memory policy ---- */

static char *describe(const oci_memory_policy *p)
{
	cleanup_free char *flags = tern_xstrdup("");

	for (int f = 0; f < OCI_MPOL_FLAG_COUNT; f++) {
		if (!(p->flags & (1u << f)))
			continue;
		char *more = tern_strdup_printf("%s%s%s", flags, flags[0] ? "|" : "",
						oci_mpol_flag_name((oci_mpol_flag)f));
		free(flags);
		flags = more;
	}
	return tern_strdup_printf(
	    "%s%s%s%s%s", oci_mpol_mode_name(p->mode), p->nodes && p->nodes[0] ? " nodes " : "",
	    p->nodes && p->nodes[0] ? p->nodes : "", flags[0] ? " " : "", flags);
}

/* The nodes against the machine: each one a node it can have (node/
 * possible), at least one with memory (node/has_memory), and, when the
 * config limits the cpuset (linux.resources.cpu.mems), at least one there.
 * With MPOL_F_RELATIVE_NODES they are positions among the nodes the
 * container may use, so only their count is checked. */
static int check_nodes(const oci_config *config, const oci_memory_policy *p, const id_list *nodes,
		       const char *sysdir, uint32_t *bits, tern_error **err)
{
	const oci_resources *res = config->linux_->resources;
	const char *mems =
	    res && res->cpu && res->cpu->mems && res->cpu->mems[0] ? res->cpu->mems : NULL;
	cleanup_free char *possible_text = NULL, *memory_text = NULL;
	id_list possible = {0}, memory = {0}, allowed = {0};
	int ret;

	ret = read_sys_list(sysdir, "node/possible", &possible, &possible_text, err);
	if (ret < 0)
		return tern_error_wrap(err, "linux.memoryPolicy");
	*bits = id_list_max(&possible) + 1;
	if (p->flags & (1u << OCI_MPOL_F_RELATIVE_NODES)) {
		size_t count = id_list_count(&possible);
		if (id_list_max(nodes) >= count) {
			id_list_free(&possible);
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.memoryPolicy.nodes: with MPOL_F_RELATIVE_NODES the nodes are "
			    "positions among the container's nodes, and this machine has %zu "
			    "(%s); position %u is beyond them",
			    count, possible_text, id_list_max(nodes));
		}
		id_list_free(&possible);
		return 0;
	}
	int64_t missing = first_missing(nodes, &possible);
	id_list_free(&possible);
	if (missing >= 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "linux.memoryPolicy.nodes: node %lld does not exist on this machine "
		    "(its nodes: %s)",
		    (long long)missing, possible_text);
	/* CPU-only nodes: set_mempolicy wants at least one with memory. */
	ret = read_sys_list(sysdir, "node/has_memory", &memory, &memory_text, NULL);
	if (ret == 0 && !id_lists_meet(nodes, &memory)) {
		id_list_free(&memory);
		return tern_error_make_quiet(
		    err, EINVAL,
		    "linux.memoryPolicy.nodes: none of the nodes %s has memory (nodes with "
		    "memory: %s)",
		    p->nodes, memory_text);
	}
	id_list_free(&memory);
	if (mems) {
		ret = parse_config_list(mems, &allowed, "linux.resources.cpu.mems", err);
		if (ret < 0)
			return ret;
		bool meet = id_lists_meet(nodes, &allowed);
		id_list_free(&allowed);
		if (!meet)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.memoryPolicy.nodes: none of the nodes %s is in "
			    "linux.resources.cpu.mems (%s), the only nodes the container may "
			    "use",
			    p->nodes, mems);
	}
	return 0;
}

int tern_mempolicy_prepare(const oci_config *config, const char *sysdir, tern_mempolicy *out,
			   tern_error **err)
{
	const oci_memory_policy *p = config->linux_ ? config->linux_->memory_policy : NULL;
	cleanup_free char *node_dir = NULL;
	id_list nodes = {0};
	uint32_t bits = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (p == NULL)
		return 0;
	if (sysdir == NULL)
		sysdir = TERN_SYSFS_SYSTEM;
	if ((unsigned)p->mode >= OCI_MPOL_MODE_COUNT)
		return tern_error_make_quiet(err, EINVAL, "linux.memoryPolicy.mode: unknown mode");
	node_dir = tern_strdup_printf("%s/node", sysdir);
	if (access(node_dir, F_OK) < 0) {
		struct utsname u;
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.memoryPolicy: this kernel (Linux %s) has no "
					     "NUMA support (no %s), so no memory policies",
					     kernel_release(&u), node_dir);
	}
	if (p->nodes) {
		ret = parse_config_list(p->nodes, &nodes, "linux.memoryPolicy.nodes", err);
		if (ret < 0)
			return ret;
	}
	if (nodes.n > 0) {
		ret = check_nodes(config, p, &nodes, sysdir, &bits, err);
		if (ret < 0) {
			id_list_free(&nodes);
			return ret;
		}
	}
	out->mode = kernel_modes[p->mode].value;
	for (int f = 0; f < OCI_MPOL_FLAG_COUNT; f++)
		if (p->flags & (1u << f))
			out->mode |= kernel_flags[f];
	if (nodes.n > 0) {
		size_t words = (bits + LONG_BIT - 1) / LONG_BIT;
		out->nodemask = tern_xmalloc0(words * sizeof(unsigned long));
		for (uint32_t id = 0; id < bits; id++)
			if (id_list_has(&nodes, id))
				out->nodemask[id / LONG_BIT] |= 1UL << (id % LONG_BIT);
		/* the kernel reads maxnode - 1 bits */
		out->maxnode = (unsigned long)bits + 1;
	}
	id_list_free(&nodes);
	out->what = describe(p);
	out->set = true;
	return 0;
}

/* The mode without its flags, back to the config's name. */
static int oci_mode_of(int kernel_mode)
{
	for (int m = 0; m < OCI_MPOL_MODE_COUNT; m++)
		if (kernel_modes[m].value == (kernel_mode & ~KERNEL_FLAG_MASK))
			return m;
	return -1;
}

/* The first memory node this process may use, for the probe's mask. */
static int first_allowed_node(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char *line = NULL;
	size_t cap = 0;
	int node = -1;

	if (f == NULL)
		return -1;
	while (node < 0 && getline(&line, &cap, f) > 0)
		if (strncmp(line, "Mems_allowed_list:", 18) == 0)
			node = atoi(line + 18 + strspn(line + 18, " \t"));
	free(line);
	fclose(f);
	return node;
}

int tern_mempolicy_probe(const tern_mempolicy *mp, tern_error **err)
{
	unsigned long mask[4] = {0};
	unsigned long maxnode = 0;
	int status, mode;
	struct utsname u;
	pid_t pid;

	if (!mp->set)
		return 0;
	mode = oci_mode_of(mp->mode);
	if (mp->nodemask) {
		/* One node this process may use: the question is whether the
		 * kernel knows the mode and flags, not whether these nodes
		 * suit the cgroup tern runs in. */
		int node = first_allowed_node();
		if (node < 0 || node >= (int)(sizeof(mask) * CHAR_BIT))
			return 0; /* no answer here: set_mempolicy in the child says */
		mask[node / LONG_BIT] = 1UL << (node % LONG_BIT);
		maxnode = (unsigned long)node + 2;
	}
	pid = fork();
	if (pid < 0)
		return tern_error_make(err, errno, "linux.memoryPolicy: fork to try the policy");
	if (pid == 0) {
		/* exit status: 0, or 64 * step + errno (step 1: the mode
		 * alone, 2: with the flags) */
		int plain = mp->mode & ~KERNEL_FLAG_MASK;
		if (syscall(SYS_set_mempolicy, plain, maxnode ? mask : NULL, maxnode) < 0)
			_exit(64 + (errno < 64 ? errno : 63));
		if (plain != mp->mode &&
		    syscall(SYS_set_mempolicy, mp->mode, maxnode ? mask : NULL, maxnode) < 0)
			_exit(128 + (errno < 64 ? errno : 63));
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return tern_error_make(err, errno,
					       "linux.memoryPolicy: wait for the probe");
	if (!WIFEXITED(status))
		return tern_error_make_quiet(err, EIO,
					     "linux.memoryPolicy: the set_mempolicy probe died");
	if (WEXITSTATUS(status) == 0)
		return 0;
	int step = WEXITSTATUS(status) / 64, e = WEXITSTATUS(status) % 64;
	const char *name = mode >= 0 ? oci_mpol_mode_name((oci_mpol_mode)mode) : "?";
	if (e == ENOSYS)
		return tern_error_make(err, e,
				       "linux.memoryPolicy: this kernel (Linux %s) has no NUMA "
				       "memory policies: set_mempolicy",
				       kernel_release(&u));
	if (e == EINVAL && step == 1)
		return tern_error_make_quiet(err, EINVAL,
					     "linux.memoryPolicy.mode: this kernel (Linux %s) does "
					     "not know %s (new in Linux %s)",
					     kernel_release(&u), name,
					     mode >= 0 ? kernel_modes[mode].since : "?");
	if (e == EINVAL)
		return tern_error_make_quiet(err, EINVAL,
					     "linux.memoryPolicy.flags: this kernel (Linux %s) "
					     "refuses %s",
					     kernel_release(&u), mp->what);
	return tern_error_make(err, e, "linux.memoryPolicy: set_mempolicy %s", mp->what);
}

/* "Mems_allowed_list" of this process, malloc'd, for a message. */
static char *mems_allowed(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char *line = NULL, *out = NULL;
	size_t cap = 0;

	if (f == NULL)
		return NULL;
	while (out == NULL && getline(&line, &cap, f) > 0)
		if (strncmp(line, "Mems_allowed_list:", 18) == 0) {
			char *v = line + 18 + strspn(line + 18, " \t");
			v[strcspn(v, "\n")] = '\0';
			out = tern_xstrdup(v);
		}
	free(line);
	fclose(f);
	return out;
}

int tern_mempolicy_apply(const tern_mempolicy *mp, tern_error **err)
{
	if (!mp->set)
		return 0;
	if (syscall(SYS_set_mempolicy, mp->mode, mp->nodemask, mp->nodemask ? mp->maxnode : 0) == 0)
		return 0;
	int e = errno;
	if (e == EINVAL) {
		/* The parent checked the machine and the kernel: what is left
		 * is the cpuset of the cgroup we are in. */
		cleanup_free char *allowed = mems_allowed();
		return tern_error_make(err, e,
				       "linux.memoryPolicy: set_mempolicy %s (the container's "
				       "cpuset lets it use memory nodes %s)",
				       mp->what, allowed ? allowed : "?");
	}
	return tern_error_make(err, e, "linux.memoryPolicy: set_mempolicy %s", mp->what);
}

void tern_mempolicy_clear(tern_mempolicy *mp)
{
	free(mp->nodemask);
	free(mp->what);
	memset(mp, 0, sizeof(*mp));
}

/* ---- CPU affinity ---- */

static int build_cpu_set(const char *list, const char *field, const id_list *possible,
			 const char *possible_text, size_t ncpus, cpu_set_t **out, tern_error **err)
{
	id_list cpus = {0};
	int ret;

	*out = NULL;
	if (list == NULL || list[0] == '\0')
		return 0; /* config.md: omitted or empty */
	ret = parse_config_list(list, &cpus, field, err);
	if (ret < 0)
		return ret;
	int64_t missing = first_missing(&cpus, possible);
	if (missing >= 0) {
		id_list_free(&cpus);
		return tern_error_make_quiet(err, EINVAL,
					     "%s: CPU %lld does not exist on this machine (its "
					     "CPUs: %s)",
					     field, (long long)missing, possible_text);
	}
	*out = CPU_ALLOC(ncpus);
	if (*out == NULL)
		abort();
	CPU_ZERO_S(CPU_ALLOC_SIZE(ncpus), *out);
	for (size_t id = 0; id < ncpus; id++)
		if (id_list_has(&cpus, (uint32_t)id))
			CPU_SET_S(id, CPU_ALLOC_SIZE(ncpus), *out);
	id_list_free(&cpus);
	return 0;
}

int tern_cpu_affinity_prepare(const oci_exec_cpu_affinity *a, const char *sysdir,
			      tern_cpu_affinity *out, tern_error **err)
{
	cleanup_free char *possible_text = NULL;
	id_list possible = {0};
	size_t ncpus;
	int ret;

	memset(out, 0, sizeof(*out));
	if (a == NULL || ((a->initial == NULL || a->initial[0] == '\0') &&
			  (a->final == NULL || a->final[0] == '\0')))
		return 0;
	ret = read_sys_list(sysdir ? sysdir : TERN_SYSFS_SYSTEM, "cpu/possible", &possible,
			    &possible_text, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.execCPUAffinity");
	ncpus = (size_t)id_list_max(&possible) + 1;
	out->size = CPU_ALLOC_SIZE(ncpus);
	ret = build_cpu_set(a->initial, "process.execCPUAffinity.initial", &possible, possible_text,
			    ncpus, &out->initial, err);
	if (ret == 0)
		ret = build_cpu_set(a->final, "process.execCPUAffinity.final", &possible,
				    possible_text, ncpus, &out->final, err);
	id_list_free(&possible);
	if (ret < 0) {
		tern_cpu_affinity_clear(out);
		return ret;
	}
	if (out->initial)
		out->initial_list = tern_xstrdup(a->initial);
	if (out->final)
		out->final_list = tern_xstrdup(a->final);
	return 0;
}

int tern_cpu_affinity_set_initial(const tern_cpu_affinity *a, pid_t pid, tern_error **err)
{
	if (a->initial == NULL)
		return 0;
	if (sched_setaffinity(pid, a->size, a->initial) < 0)
		return tern_error_make(err, errno,
				       "process.execCPUAffinity.initial: sched_setaffinity to "
				       "CPUs %s%s",
				       a->initial_list,
				       errno == EINVAL ? " (none of them is online and allowed "
							 "in tern's own cpuset)"
						       : "");
	return 0;
}

void tern_cpu_affinity_reset(void)
{
	/* All set, for the kernel's largest NR_CPUS (8192): it keeps what
	 * the cpuset allows of it, and reads no further than its own size */
	unsigned long all[8192 / (8 * sizeof(unsigned long))];

	memset(all, 0xff, sizeof(all));
	/* a refusal leaves the inherited CPUs (best effort, numa.h) */
	(void)sched_setaffinity(0, sizeof(all), (cpu_set_t *)all);
}

int tern_cpu_affinity_apply_final(const tern_cpu_affinity *a, tern_error **err)
{
	if (a->final == NULL && a->initial == NULL)
		tern_cpu_affinity_reset();
	if (a->final == NULL)
		return 0;
	if (sched_setaffinity(0, a->size, a->final) < 0)
		return tern_error_make(err, errno,
				       "process.execCPUAffinity.final: sched_setaffinity to CPUs "
				       "%s%s",
				       a->final_list,
				       errno == EINVAL ? " (none of them is online and in the "
							 "container's cpuset)"
						       : "");
	return 0;
}

void tern_cpu_affinity_clear(tern_cpu_affinity *a)
{
	if (a->initial)
		CPU_FREE(a->initial);
	if (a->final)
		CPU_FREE(a->final);
	free(a->initial_list);
	free(a->final_list);
	memset(a, 0, sizeof(*a));
}
