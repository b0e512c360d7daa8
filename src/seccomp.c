/* linux.seccomp: compiled to classic BPF with libseccomp in the parent,
 * loaded with a bare seccomp(2) in the child.
 *
 * Splitting it this way keeps the child simple: no allocation, no library
 * state, and a profile error is reported before any namespace or cgroup
 * exists. The seccomp(2) flags (TSYNC, LOG, SPEC_ALLOW...) are not part of
 * the BPF program, so they travel next to it in tern_seccomp_filter.
 */
#include "seccomp.h"
#include "log.h"
#include "utils.h"

#include <ctype.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/* Syscalls have at most six arguments. */
#define MAX_ARGS 6

struct tern_seccomp_filter {
	struct sock_filter *insns;
	unsigned short len;
	unsigned int flags; /* SECCOMP_FILTER_FLAG_* for seccomp(2) */
};

static void ctx_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx != NULL)
		seccomp_release(*ctx);
}
#define cleanup_seccomp __attribute__((cleanup(ctx_releasep)))

/* The libseccomp action for an OCI action name. errno_ret applies to ERRNO
 * and TRACE; when absent both default to EPERM, as in runc. */
static int parse_action(const char *name, const oci_opt_uint64 *errno_ret, const char *field,
			uint32_t *out, tern_error **err)
{
	uint16_t ret = errno_ret && errno_ret->set ? (uint16_t)errno_ret->value : EPERM;

	if (name == NULL)
		return tern_error_make(err, 0, "%s: missing action", field);
	if (errno_ret && errno_ret->set && errno_ret->value > 0xffff)
		return tern_error_make(err, 0, "%s: errnoRet %llu out of range", field,
				       (unsigned long long)errno_ret->value);
	/* libseccomp's SCMP_ACT_KILL is "kill the thread", which is also what
	 * the spec's SCMP_ACT_KILL has always meant. */
	if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
		*out = SCMP_ACT_KILL_THREAD;
	else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
		*out = SCMP_ACT_KILL_PROCESS;
	else if (strcmp(name, "SCMP_ACT_TRAP") == 0)
		*out = SCMP_ACT_TRAP;
	else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
		*out = SCMP_ACT_ERRNO(ret);
	else if (strcmp(name, "SCMP_ACT_TRACE") == 0)
		*out = SCMP_ACT_TRACE(ret);
	else if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
		*out = SCMP_ACT_ALLOW;
	else if (strcmp(name, "SCMP_ACT_LOG") == 0)
		*out = SCMP_ACT_LOG;
	else if (strcmp(name, "SCMP_ACT_NOTIFY") == 0)
		return tern_error_make(err, 0, "%s: SCMP_ACT_NOTIFY is not supported yet", field);
	else
		return tern_error_make(err, 0, "%s: unknown action `%s`", field, name);
	return 0;
}

static int parse_op(const char *name, enum scmp_compare *out)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
	    {"SCMP_CMP_NE", SCMP_CMP_NE},
	    {"SCMP_CMP_LT", SCMP_CMP_LT},
	    {"SCMP_CMP_LE", SCMP_CMP_LE},
	    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
	    {"SCMP_CMP_GE", SCMP_CMP_GE},
	    {"SCMP_CMP_GT", SCMP_CMP_GT},
	    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
	};
	for (size_t i = 0; name != NULL && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(name, ops[i].name) == 0) {
			*out = ops[i].op;
			return 0;
		}
	return -1;
}

static int add_arches(scmp_filter_ctx ctx, char **arches, tern_error **err)
{
	for (size_t i = 0; arches != NULL && arches[i] != NULL; i++) {
		const char *name = arches[i];
		char lower[32];
		uint32_t token = 0;
		size_t l;
		int ret;

		/* libseccomp names them "x86_64", the spec "SCMP_ARCH_X86_64". */
		if (strncmp(name, "SCMP_ARCH_", 10) == 0 && (l = strlen(name + 10)) > 0 &&
		    l < sizeof(lower)) {
			for (size_t j = 0; j <= l; j++)
				lower[j] = (char)tolower((unsigned char)name[10 + j]);
			token = seccomp_arch_resolve_name(lower);
		}
		if (token == 0)
			return tern_error_make(err, 0, "architectures: unknown architecture `%s`",
					       name);
		ret = seccomp_arch_add(ctx, token);
		/* The native architecture is always in the filter already. */
		if (ret < 0 && ret != -EEXIST)
			return tern_error_make(err, -ret, "architectures: adding `%s`", name);
	}
	return 0;
}

static int parse_flags(scmp_filter_ctx ctx, char **flags, unsigned int *out, tern_error **err)
{
	for (size_t i = 0; flags != NULL && flags[i] != NULL; i++) {
		const char *f = flags[i];
		/* Tell libseccomp too where it has a matching attribute, so
		 * its view of the filter matches what the kernel gets. */
		if (strcmp(f, "SECCOMP_FILTER_FLAG_TSYNC") == 0) {
			*out |= SECCOMP_FILTER_FLAG_TSYNC;
			seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
		} else if (strcmp(f, "SECCOMP_FILTER_FLAG_LOG") == 0) {
			*out |= SECCOMP_FILTER_FLAG_LOG;
			seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
		} else if (strcmp(f, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0) {
			*out |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
			seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1);
		} else if (strcmp(f, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0) {
			/* Only meaningful with a notify listener; libseccomp
			 * 2.5.4 has no attribute for it. */
			*out |= SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
		} else {
			return tern_error_make(err, 0, "flags: unknown flag `%s`", f);
		}
	}
	return 0;
}

/* One rule per syscall name. Conditions on distinct arguments are ANDed in
 * one rule. libseccomp refuses two conditions on the same argument in one
 * rule, so then (as runc does) each condition becomes its own rule, which
 * ORs them: a profile that lists "arg 0 != A, arg 0 != B" gets the action
 * when either holds. */
static int add_syscall(scmp_filter_ctx ctx, const oci_seccomp_syscall *sc, size_t idx,
		       uint32_t def_action, tern_error **err)
{
	struct scmp_arg_cmp conds[MAX_ARGS * 4];
	size_t nconds = 0;
	bool seen[MAX_ARGS] = {false}, split = false;
	uint32_t action;
	cleanup_free char *field = tern_strdup_printf("syscalls[%zu]", idx);
	int ret;

	if ((ret = parse_action(sc->action, &sc->errno_ret, field, &action, err)) < 0)
		return ret;
	if (sc->args_len > sizeof(conds) / sizeof(conds[0]))
		return tern_error_make(err, 0, "%s.args: too many conditions", field);
	for (size_t i = 0; i < sc->args_len; i++) {
		const oci_seccomp_arg *a = &sc->args[i];
		enum scmp_compare op;

		if (a->index >= MAX_ARGS)
			return tern_error_make(err, 0, "%s.args[%zu]: index %u out of range", field,
					       i, a->index);
		if (parse_op(a->op, &op) < 0)
			return tern_error_make(err, 0, "%s.args[%zu]: unknown op `%s`", field, i,
					       a->op ? a->op : "");
		if (seen[a->index])
			split = true;
		seen[a->index] = true;
		conds[nconds++] = (struct scmp_arg_cmp){
		    .arg = a->index,
		    .op = op,
		    .datum_a = a->value,
		    .datum_b = a->value_two.set ? a->value_two.value : 0,
		};
	}
	/* libseccomp rejects a rule that repeats the default action; it
	 * would change nothing anyway. */
	if (action == def_action)
		return 0;

	for (size_t n = 0; sc->names != NULL && sc->names[n] != NULL; n++) {
		const char *name = sc->names[n];
		int nr = seccomp_syscall_resolve_name(name);

		if (nr == __NR_SCMP_ERROR) {
			tern_debug("%s: skipping unknown syscall `%s`", field, name);
			continue;
		}
		if (!split) {
			ret = seccomp_rule_add_array(ctx, action, nr, (unsigned)nconds, conds);
		} else {
			ret = 0;
			for (size_t c = 0; c < nconds && ret >= 0; c++)
				ret = seccomp_rule_add_array(ctx, action, nr, 1, &conds[c]);
		}
		if (ret < 0)
			return tern_error_make(err, -ret, "%s: adding a rule for `%s`", field,
					       name);
	}
	return 0;
}

/* Export the program through a memfd and read it back: libseccomp only
 * writes BPF to a file descriptor. */
static int export_bpf(scmp_filter_ctx ctx, tern_seccomp_filter *f, tern_error **err)
{
	cleanup_close int fd = memfd_create("tern-seccomp-bpf", MFD_CLOEXEC);
	cleanup_free char *buf = NULL;
	size_t len = 0;
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "memfd_create");
	if ((ret = seccomp_export_bpf(ctx, fd)) < 0)
		return tern_error_make(err, -ret, "exporting the BPF program");
	if (lseek(fd, 0, SEEK_SET) < 0)
		return tern_error_make(err, errno, "lseek");
	if ((ret = tern_read_fd_all(fd, &buf, &len, 0)) < 0)
		return tern_error_make(err, -ret, "reading the BPF program");
	if (len == 0 || len % sizeof(struct sock_filter) != 0 ||
	    len / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return tern_error_make(err, 0,
				       "the compiled program has a bad size (%zu "
				       "bytes)",
				       len);
	f->len = (unsigned short)(len / sizeof(struct sock_filter));
	f->insns = (struct sock_filter *)steal_pointer(&buf);
	return 0;
}

int tern_seccomp_compile(const oci_seccomp *seccomp, tern_seccomp_filter **out, tern_error **err)
{
	cleanup_seccomp scmp_filter_ctx ctx = NULL;
	tern_seccomp_filter *f;
	uint32_t def_action;
	unsigned int flags = 0;
	int ret;

	*out = NULL;
	if ((ret = parse_action(seccomp->default_action, &seccomp->default_errno_ret,
				"defaultAction", &def_action, err)) < 0)
		return ret;
	ctx = seccomp_init(def_action);
	if (ctx == NULL)
		return tern_error_make(err, 0, "seccomp_init failed");
	/* tern sets no_new_privs itself, and only when process.noNewPrivileges
	 * asks for it; libseccomp would otherwise always set it. */
	if ((ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0)
		return tern_error_make(err, -ret, "clearing SCMP_FLTATR_CTL_NNP");
	if ((ret = add_arches(ctx, seccomp->architectures, err)) < 0)
		return ret;
	if ((ret = parse_flags(ctx, seccomp->flags, &flags, err)) < 0)
		return ret;
	for (size_t i = 0; i < seccomp->syscalls_len; i++)
		if ((ret = add_syscall(ctx, &seccomp->syscalls[i], i, def_action, err)) < 0)
			return ret;

	f = tern_xmalloc0(sizeof(*f));
	f->flags = flags;
	if ((ret = export_bpf(ctx, f, err)) < 0) {
		tern_seccomp_filter_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int tern_seccomp_load(const tern_seccomp_filter *filter, tern_error **err)
{
	struct sock_fprog prog = {.len = filter->len, .filter = filter->insns};
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, filter->flags, &prog);

	if (r == 0)
		return 0;
	/* With TSYNC, a positive result is the id of a thread that could
	 * not be synchronised; nothing was loaded. */
	if (r > 0)
		return tern_error_make(err, 0,
				       "loading the seccomp filter: thread %ld could not be "
				       "synchronized (SECCOMP_FILTER_FLAG_TSYNC)",
				       r);
	/* Kernels before 3.17 have only the prctl, which takes no flags. */
	if (errno == ENOSYS && filter->flags == 0 &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	return tern_error_make(err, errno, "loading the seccomp filter (%u instructions)",
			       (unsigned)filter->len);
}

void tern_seccomp_filter_free(tern_seccomp_filter *filter)
{
	if (filter == NULL)
		return;
	free(filter->insns);
	free(filter);
}
