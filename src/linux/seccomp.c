/* linux.seccomp: compiled to classic BPF with libseccomp in the parent,
 * loaded with a bare seccomp(2) in the child.
 *
 * Splitting it this way keeps the child simple: no allocation, no library
 * state, and a profile error is reported before any namespace or cgroup
 * exists. The seccomp(2) flags (TSYNC, LOG, SPEC_ALLOW...) are not part of
 * the BPF program, so they travel next to it in tern_seccomp_filter.
 */
#include "seccomp.h"
#include "config.h"
#include "log.h"
#include "oci-json.h"
#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC_ESRCH
#define SECCOMP_FILTER_FLAG_TSYNC_ESRCH (1UL << 4)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/* Syscalls have at most six arguments. */
#define MAX_ARGS 6
/* More than libseccomp knows (it has about 20). */
#define MAX_ARCHES 32

struct tern_seccomp_filter {
	struct sock_filter *insns;
	unsigned short len;
	unsigned int flags; /* SECCOMP_FILTER_FLAG_* for seccomp(2) */
	bool notify;	    /* some rule is SCMP_ACT_NOTIFY */
};

/* The seccomp(2) flags a profile may ask for (linux.seccomp.flags). */
static const struct {
	const char *name;
	unsigned int flag;
} known_flags[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW},
    {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV},
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
			const char *errno_field, uint32_t *out, tern_error **err)
{
	uint16_t ret = errno_ret && errno_ret->set ? (uint16_t)errno_ret->value : EPERM;

	if (name == NULL)
		return tern_error_make(err, 0, "%s: missing action", field);
	if (errno_ret && errno_ret->set && errno_ret->value > 0xffff)
		return tern_error_make(err, 0, "%s: %llu is out of range (0-65535)", errno_field,
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
		*out = SCMP_ACT_NOTIFY;
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

/* Adds the profile's architectures to the filter and lists, in *tokens,
 * every architecture the filter has (the native one first, no repeats). */
static int add_arches(scmp_filter_ctx ctx, char **arches, uint32_t *tokens, size_t *ntokens,
		      tern_error **err)
{
	*ntokens = 0;
	tokens[(*ntokens)++] = seccomp_arch_native();
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
			return tern_error_make(err, 0,
					       "linux.seccomp.architectures[%zu]: unknown "
					       "architecture `%s`",
					       i, name);
		ret = seccomp_arch_add(ctx, token);
		/* The native architecture is always in the filter already. */
		if (ret < 0 && ret != -EEXIST)
			return tern_error_make(
			    err, -ret, "linux.seccomp.architectures[%zu]: adding `%s`", i, name);
		if (ret == 0 && *ntokens < MAX_ARCHES)
			tokens[(*ntokens)++] = token;
	}
	return 0;
}

/* A flag is supported when the kernel faults on the NULL program rather
 * than refusing the flag (EINVAL): the probe loads nothing. */
static bool kernel_has_flag(unsigned int flag)
{
	/* the kernel refuses WAIT_KILLABLE_RECV without a listener */
	if (flag == SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
		flag |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flag, NULL) < 0 && errno == EFAULT;
}

bool tern_seccomp_flag_supported(const char *name)
{
	for (size_t i = 0; i < sizeof(known_flags) / sizeof(known_flags[0]); i++)
		if (strcmp(name, known_flags[i].name) == 0)
			return kernel_has_flag(known_flags[i].flag);
	return false;
}

size_t tern_seccomp_known_flags(const char **names, size_t max)
{
	size_t n = sizeof(known_flags) / sizeof(known_flags[0]);
	for (size_t i = 0; i < n && i < max; i++)
		names[i] = known_flags[i].name;
	return n;
}

static int parse_flags(scmp_filter_ctx ctx, char **flags, unsigned int *out, tern_error **err)
{
	for (size_t i = 0; flags != NULL && flags[i] != NULL; i++) {
		const char *f = flags[i];
		unsigned int flag = 0;

		for (size_t k = 0; k < sizeof(known_flags) / sizeof(known_flags[0]); k++)
			if (strcmp(f, known_flags[k].name) == 0)
				flag = known_flags[k].flag;
		if (flag == 0)
			return tern_error_make(err, 0,
					       "linux.seccomp.flags[%zu]: unknown flag `%s`", i, f);
		/* Refuse now, naming the flag, rather than with a bare EINVAL
		 * from seccomp(2) in the child. */
		if (!kernel_has_flag(flag))
			return tern_error_make(
			    err, EINVAL,
			    "linux.seccomp.flags[%zu]: `%s` is not supported by this kernel", i, f);
		*out |= flag;
		/* Tell libseccomp too where it has a matching attribute, so
		 * its view of the filter matches what the kernel gets
		 * (libseccomp 2.5 has none for WAIT_KILLABLE_RECV). */
		if (flag == SECCOMP_FILTER_FLAG_TSYNC)
			seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
		else if (flag == SECCOMP_FILTER_FLAG_LOG)
			seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
		else if (flag == SECCOMP_FILTER_FLAG_SPEC_ALLOW)
			seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1);
	}
	return 0;
}

/* One rule per syscall name. Conditions on distinct arguments are ANDed in
 * one rule. libseccomp refuses two conditions on the same argument in one
 * rule, so then (as runc does) each condition becomes its own rule, which
 * ORs them: a profile that lists "arg 0 != A, arg 0 != B" gets the action
 * when either holds. */
static int add_syscall(scmp_filter_ctx ctx, const oci_seccomp_syscall *sc, size_t idx,
		       uint32_t def_action, bool *notify, tern_error **err)
{
	struct scmp_arg_cmp conds[MAX_ARGS * 4];
	size_t nconds = 0;
	bool seen[MAX_ARGS] = {false}, split = false;
	uint32_t action;
	cleanup_free char *field = tern_strdup_printf("linux.seccomp.syscalls[%zu]", idx);
	cleanup_free char *action_field = tern_strdup_printf("%s.action", field);
	cleanup_free char *errno_field = tern_strdup_printf("%s.errnoRet", field);
	int ret;

	if ((ret = parse_action(sc->action, &sc->errno_ret, action_field, errno_field, &action,
				err)) < 0)
		return ret;
	if (sc->args_len > sizeof(conds) / sizeof(conds[0]))
		return tern_error_make(err, 0, "%s.args: too many conditions", field);
	for (size_t i = 0; i < sc->args_len; i++) {
		const oci_seccomp_arg *a = &sc->args[i];
		enum scmp_compare op;

		if (a->index >= MAX_ARGS)
			return tern_error_make(err, 0,
					       "%s.args[%zu].index: %u is out of range (0-5)",
					       field, i, a->index);
		if (parse_op(a->op, &op) < 0)
			return tern_error_make(err, 0, "%s.args[%zu].op: unknown operator `%s`",
					       field, i, a->op ? a->op : "");
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

		/* The notify fd leaves the container process with sendmsg(2),
		 * after the filter is loaded: a notification for it could
		 * never be answered (runc refuses `write` for the same reason). */
		if (action == SCMP_ACT_NOTIFY && strcmp(name, "sendmsg") == 0)
			return tern_error_make(err, 0,
					       "%s: SCMP_ACT_NOTIFY cannot be used for `sendmsg` "
					       "(tern sends the listener's fd with it)",
					       field);
		if (action == SCMP_ACT_NOTIFY)
			*notify = true;

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
		return tern_error_make(err, -ret, "linux.seccomp: exporting the BPF program");
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

/* ---- ENOSYS for syscalls newer than the profile ----
 *
 * A profile whose default action denies (SCMP_ACT_ERRNO, KILL, TRAP) was
 * written against some kernel; a syscall added since (clone3 for a profile
 * of 2019) would get the default action, EPERM say, which a program takes
 * as a real refusal: glibc falls back from clone3 to clone only on ENOSYS.
 * So, as runc does (libcontainer/seccomp/patchbpf), a stub put in front of
 * libseccomp's program answers ENOSYS, the kernel's own "no such call",
 * for every syscall numbered above the highest one the profile names, per
 * architecture of the filter. It is left out when the default action lets
 * calls run (ALLOW, LOG; TRACE leaves it to the tracer) or is ENOSYS
 * anyway. One difference from runc: runc only looks at the listed
 * architectures, so a profile without `architectures` gets no stub there;
 * tern always covers the native architecture, which every filter has.
 *
 * The stub, per architecture A with highest named syscall MAX:
 *
 *	ld  [arch]
 *	jeq A, 0, <next architecture>
 *	ld  [nr]
 *	jgt MAX, ENOSYS, FILTER
 *	...
 *	ja  FILTER		(an architecture the stub does not cover)
 * ENOSYS:
 *	ret ERRNO(ENOSYS)
 * FILTER:
 *	libseccomp's program
 *
 * x86_64 and x32 share AUDIT_ARCH_X86_64; x32 calls have bit 30 set in
 * their number (libseccomp's x32 numbers include it), and each gets its own
 * MAX. On s390(x) a call whose number does not fit the syscall entry
 * arrives as syscall 0 (the long-obsolete setup(2)): ENOSYS too, as in
 * runc. All jumps are forward and short: the stub has at most a few
 * instructions per architecture. */

#define X32_SYSCALL_BIT 0x40000000U
#define STUB_MAX	128

enum { TO_LITERAL, TO_ENOSYS, TO_FILTER };

struct stub {
	struct sock_filter insns[STUB_MAX];
	unsigned char jt_to[STUB_MAX], jf_to[STUB_MAX];
	size_t n;
};

/* jt_to/jf_to name a target (TO_ENOSYS, TO_FILTER) resolved when the
 * stub is complete; for BPF_JA jt_to names the target of k. */
static void emit(struct stub *s, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf,
		 unsigned char jt_to, unsigned char jf_to)
{
	if (s->n >= STUB_MAX - 2) {
		s->n = STUB_MAX; /* marks an overflow; never with real arches */
		return;
	}
	s->insns[s->n] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
	s->jt_to[s->n] = jt_to;
	s->jf_to[s->n] = jf_to;
	s->n++;
}

/* The highest number the profile names for architecture `token`, or -1. */
static long highest_named(const oci_seccomp *seccomp, uint32_t token)
{
	long max = -1;

	for (size_t i = 0; i < seccomp->syscalls_len; i++) {
		char **names = seccomp->syscalls[i].names;
		for (size_t n = 0; names != NULL && names[n] != NULL; n++) {
			/* Negative: unknown here, or one of libseccomp's
			 * pseudo numbers for multiplexed calls (socketcall). */
			int nr = seccomp_syscall_resolve_name_arch(token, names[n]);
			if (nr >= 0 && nr > max)
				max = nr;
		}
	}
	return max;
}

static void emit_arch(struct stub *s, const oci_seccomp *seccomp, uint32_t token,
		      const uint32_t *tokens, size_t ntokens)
{
	size_t start = s->n;
	long max = highest_named(seccomp, token), max32 = -1;

	if (token == SCMP_ARCH_X32)
		return; /* with x86_64, below */
	if (token == SCMP_ARCH_X86_64)
		for (size_t i = 0; i < ntokens; i++)
			if (tokens[i] == SCMP_ARCH_X32)
				max32 = highest_named(seccomp, SCMP_ARCH_X32);
	if (max < 0 && max32 < 0)
		return; /* nothing named: libseccomp's program decides */

	emit(s, BPF_JMP | BPF_JEQ | BPF_K, token, 0, 0, TO_LITERAL, TO_LITERAL);
	emit(s, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0, TO_LITERAL,
	     TO_LITERAL);
	if (token == SCMP_ARCH_X86_64) {
		/* an x32 call skips the x86_64 test to its own */
		emit(s, BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, 1, 0, TO_LITERAL, TO_LITERAL);
		if (max >= 0)
			emit(s, BPF_JMP | BPF_JGT | BPF_K, (uint32_t)max, 0, 0, TO_ENOSYS,
			     TO_FILTER);
		else
			emit(s, BPF_JMP | BPF_JA, 0, 0, 0, TO_FILTER, TO_LITERAL);
		if (max32 >= 0)
			emit(s, BPF_JMP | BPF_JGT | BPF_K, (uint32_t)max32 | X32_SYSCALL_BIT, 0, 0,
			     TO_ENOSYS, TO_FILTER);
		else
			emit(s, BPF_JMP | BPF_JA, 0, 0, 0, TO_FILTER, TO_LITERAL);
	} else {
		if (token == SCMP_ARCH_S390 || token == SCMP_ARCH_S390X)
			emit(s, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, TO_ENOSYS, TO_LITERAL);
		emit(s, BPF_JMP | BPF_JGT | BPF_K, (uint32_t)max, 0, 0, TO_ENOSYS, TO_FILTER);
	}
	/* another architecture goes on to the next block */
	if (s->n < STUB_MAX)
		s->insns[start].jf = (uint8_t)(s->n - start - 1);
}

static int add_enosys_stub(const oci_seccomp *seccomp, uint32_t def_action, const uint32_t *tokens,
			   size_t ntokens, tern_seccomp_filter *f, tern_error **err)
{
	struct stub s = {.n = 0};
	struct sock_filter *insns;
	size_t enosys, filter;

	if (def_action == SCMP_ACT_ALLOW || def_action == SCMP_ACT_LOG ||
	    (def_action & 0xffff0000U) == SCMP_ACT_TRACE(0) || def_action == SCMP_ACT_ERRNO(ENOSYS))
		return 0;

	emit(&s, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0, TO_LITERAL,
	     TO_LITERAL);
	for (size_t i = 0; i < ntokens; i++)
		emit_arch(&s, seccomp, tokens[i], tokens, ntokens);
	if (s.n == 1)
		return 0; /* the profile names no syscall at all */
	emit(&s, BPF_JMP | BPF_JA, 0, 0, 0, TO_FILTER, TO_LITERAL);
	if (s.n >= STUB_MAX)
		return tern_error_make(err, 0, "linux.seccomp: the ENOSYS stub is too long");
	enosys = s.n;
	filter = s.n + 1;
	for (size_t i = 0; i < s.n; i++) {
		struct sock_filter *in = &s.insns[i];
		size_t tt = s.jt_to[i] == TO_ENOSYS ? enosys : filter;
		size_t tf = s.jf_to[i] == TO_ENOSYS ? enosys : filter;

		if (BPF_OP(in->code) == BPF_JA && BPF_CLASS(in->code) == BPF_JMP) {
			in->k = (uint32_t)(tt - i - 1);
			continue;
		}
		if (s.jt_to[i] != TO_LITERAL)
			in->jt = (uint8_t)(tt - i - 1);
		if (s.jf_to[i] != TO_LITERAL)
			in->jf = (uint8_t)(tf - i - 1);
	}
	if ((size_t)f->len + filter > BPF_MAXINSNS)
		return tern_error_make(err, 0,
				       "linux.seccomp: the program with its ENOSYS stub has more "
				       "than %d instructions",
				       BPF_MAXINSNS);
	insns = tern_xmalloc0((f->len + filter) * sizeof(*insns));
	memcpy(insns, s.insns, s.n * sizeof(*insns));
	insns[enosys] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	memcpy(insns + filter, f->insns, f->len * sizeof(*insns));
	free(f->insns);
	f->insns = insns;
	f->len = (unsigned short)(f->len + filter);
	return 0;
}

static int compile(const oci_seccomp *seccomp, tern_seccomp_filter **out, tern_error **err)
{
	cleanup_seccomp scmp_filter_ctx ctx = NULL;
	tern_seccomp_filter *f;
	uint32_t def_action, arches[MAX_ARCHES];
	size_t narches = 0;
	unsigned int flags = 0;
	bool notify = false;
	int ret;

	*out = NULL;
	if ((ret = parse_action(seccomp->default_action, &seccomp->default_errno_ret,
				"linux.seccomp.defaultAction", "linux.seccomp.defaultErrnoRet",
				&def_action, err)) < 0)
		return ret;
	/* Every syscall tern makes after loading the filter, the one that
	 * hands the fd to the listener first, would wait for a listener. */
	if (def_action == SCMP_ACT_NOTIFY)
		return tern_error_make(
		    err, 0,
		    "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be the default action");
	ctx = seccomp_init(def_action);
	if (ctx == NULL)
		return tern_error_make(err, 0, "seccomp_init failed");
	/* tern sets no_new_privs itself, and only when process.noNewPrivileges
	 * asks for it; libseccomp would otherwise always set it. */
	if ((ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0)
		return tern_error_make(err, -ret, "clearing SCMP_FLTATR_CTL_NNP");
	if ((ret = add_arches(ctx, seccomp->architectures, arches, &narches, err)) < 0)
		return ret;
	if ((ret = parse_flags(ctx, seccomp->flags, &flags, err)) < 0)
		return ret;
	for (size_t i = 0; i < seccomp->syscalls_len; i++) {
		bool n = false;
		if ((ret = add_syscall(ctx, &seccomp->syscalls[i], i, def_action, &n, err)) < 0)
			return ret;
		if (n && (seccomp->listener_path == NULL || seccomp->listener_path[0] == '\0'))
			return tern_error_make(
			    err, 0,
			    "linux.seccomp.syscalls[%zu].action: SCMP_ACT_NOTIFY "
			    "needs linux.seccomp.listenerPath",
			    i);
		notify = notify || n;
	}
	if (notify) {
		/* The kernel hands back the notify fd; with TSYNC it only
		 * does so if a sync failure reports ESRCH instead of a tid. */
		flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
		if (flags & SECCOMP_FILTER_FLAG_TSYNC)
			flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
	} else if (flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) {
		/* It only changes how a notification is waited for; the
		 * kernel refuses it without a listener. */
		tern_debug("flags: SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV without "
			   "SCMP_ACT_NOTIFY has no effect: not passed to the kernel");
		flags &= ~(unsigned int)SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	}

	f = tern_xmalloc0(sizeof(*f));
	f->flags = flags;
	f->notify = notify;
	if ((ret = export_bpf(ctx, f, err)) < 0 ||
	    (ret = add_enosys_stub(seccomp, def_action, arches, narches, f, err)) < 0) {
		tern_seccomp_filter_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

/* ---- a cache of compiled programs ----
 *
 * libseccomp needs about 35 million instructions (10-15 ms) to compile
 * podman's default profile for its three architectures: more than all of
 * the rest of `create`. The program depends only on the profile, the
 * libseccomp version and the kernel (which flags it takes), so it is kept
 * under the state root, in a directory whose name no container id can
 * have. The key is all of that written out in full, and a hit compares the
 * whole key: no hash collision can hand a container another profile's
 * filter. The directory is root's (0700), trusted like the state files
 * next to it. The cache is best effort: any problem with it means
 * compiling. The magic changes with what a program holds (TSC2: the
 * ENOSYS stub), so entries written by an older tern are recompiled. */

#define CACHE_DIR	  ".seccomp:cache" /* ':' is not allowed in container ids */
#define CACHE_MAGIC	  "TSC2"
#define CACHE_MAX_ENTRIES 256
#define CACHE_MAX_FILE	  (1 << 20)

static void key_str(FILE *m, const char *s)
{
	if (s == NULL)
		fputs("N;", m);
	else
		fprintf(m, "S%zu:%s;", strlen(s), s);
}

static void key_strv(FILE *m, char **v)
{
	size_t n = 0;
	while (v != NULL && v[n] != NULL)
		n++;
	fprintf(m, "V%zu;", n);
	for (size_t i = 0; i < n; i++)
		key_str(m, v[i]);
}

static void key_opt(FILE *m, const oci_opt_uint64 *o)
{
	if (o->set)
		fprintf(m, "U%llu;", (unsigned long long)o->value);
	else
		fputs("N;", m);
}

static char *cache_key(const oci_seccomp *s)
{
	const struct scmp_version *v = seccomp_version();
	struct utsname u;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (m == NULL)
		return NULL;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	fprintf(m, "tern %s libseccomp %u.%u.%u kernel ", PACKAGE_VERSION, v ? v->major : 0,
		v ? v->minor : 0, v ? v->micro : 0);
	key_str(m, u.release);
	key_str(m, s->default_action);
	key_opt(m, &s->default_errno_ret);
	key_strv(m, s->architectures);
	key_strv(m, s->flags);
	key_str(m, s->listener_path);
	fprintf(m, "C%zu;", s->syscalls_len);
	for (size_t i = 0; i < s->syscalls_len; i++) {
		const oci_seccomp_syscall *sc = &s->syscalls[i];
		key_strv(m, sc->names);
		key_str(m, sc->action);
		key_opt(m, &sc->errno_ret);
		fprintf(m, "A%zu;", sc->args_len);
		for (size_t a = 0; a < sc->args_len; a++) {
			fprintf(m, "%u,%llu,", sc->args[a].index,
				(unsigned long long)sc->args[a].value);
			key_opt(m, &sc->args[a].value_two);
			key_str(m, sc->args[a].op);
		}
	}
	if (fclose(m) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* FNV-1a: only to name the file; the key itself decides a hit. */
static uint64_t key_hash(const char *key)
{
	uint64_t h = 14695981039346656037ULL;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

/* File: magic, u32 key length, key, u32 flags, u32 notify, u32 count,
 * the instructions; host byte order (it never leaves this machine). */
static tern_seccomp_filter *cache_read(int dirfd, const char *name, const char *key)
{
	cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	cleanup_free char *buf = NULL;
	size_t len = 0, klen = strlen(key), off;
	uint32_t hdr[3], u32;
	tern_seccomp_filter *f;

	if (fd < 0 || tern_read_fd_all(fd, &buf, &len, CACHE_MAX_FILE) < 0)
		return NULL;
	off = 4 + sizeof(u32);
	if (len < off + klen + sizeof(hdr) || memcmp(buf, CACHE_MAGIC, 4) != 0)
		return NULL;
	memcpy(&u32, buf + 4, sizeof(u32));
	if (u32 != klen || memcmp(buf + off, key, klen) != 0)
		return NULL;
	off += klen;
	memcpy(hdr, buf + off, sizeof(hdr));
	off += sizeof(hdr);
	if (hdr[2] == 0 || hdr[2] > BPF_MAXINSNS ||
	    len != off + (size_t)hdr[2] * sizeof(struct sock_filter))
		return NULL;
	f = tern_xmalloc0(sizeof(*f));
	f->flags = hdr[0];
	f->notify = hdr[1] != 0;
	f->len = (unsigned short)hdr[2];
	f->insns = tern_xmalloc0(len - off);
	memcpy(f->insns, buf + off, len - off);
	return f;
}

static bool cache_full(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t n = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return true;
	}
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n > CACHE_MAX_ENTRIES + 2;
}

/* Write to a private temporary name, then rename: a reader sees a whole
 * file or none. */
static void cache_write(int dirfd, const char *name, const char *key, const tern_seccomp_filter *f)
{
	char tmp[64];
	uint32_t klen = (uint32_t)strlen(key);
	uint32_t hdr[3] = {f->flags, f->notify ? 1 : 0, f->len};
	cleanup_close int fd = -1;
	int ret;

	if (cache_full(dirfd))
		return;
	snprintf(tmp, sizeof(tmp), ".tmp.%d", (int)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	ret = tern_write_all(fd, CACHE_MAGIC, 4);
	if (ret == 0)
		ret = tern_write_all(fd, &klen, sizeof(klen));
	if (ret == 0)
		ret = tern_write_all(fd, key, klen);
	if (ret == 0)
		ret = tern_write_all(fd, hdr, sizeof(hdr));
	if (ret == 0)
		ret = tern_write_all(fd, f->insns, (size_t)f->len * sizeof(struct sock_filter));
	if (ret < 0 || renameat(dirfd, tmp, dirfd, name) < 0)
		unlinkat(dirfd, tmp, 0);
}

int tern_seccomp_compile(const oci_seccomp *seccomp, const char *cache_root,
			 tern_seccomp_filter **out, tern_error **err)
{
	cleanup_free char *key = NULL;
	cleanup_close int dirfd = -1;
	char name[32];
	int ret;

	if (cache_root != NULL && (key = cache_key(seccomp)) != NULL) {
		cleanup_free char *dir = tern_strdup_printf("%s/" CACHE_DIR, cache_root);
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			tern_debug("seccomp cache `%s`: %s", dir, strerror(errno));
		dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		snprintf(name, sizeof(name), "%016llx", (unsigned long long)key_hash(key));
		if (dirfd >= 0 && (*out = cache_read(dirfd, name, key)) != NULL)
			return 0;
	}
	ret = compile(seccomp, out, err);
	if (ret == 0 && dirfd >= 0)
		cache_write(dirfd, name, key, *out);
	return ret;
}

int tern_seccomp_load(const tern_seccomp_filter *filter, int *notify_fd, tern_error **err)
{
	struct sock_fprog prog = {.len = filter->len, .filter = filter->insns};
	long r;

	*notify_fd = -1;
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, filter->flags, &prog);
	/* With NEW_LISTENER the result is the notify fd (close-on-exec, as
	 * the kernel makes it). */
	if (r >= 0 && filter->notify) {
		*notify_fd = (int)r;
		return 0;
	}
	if (r == 0)
		return 0;
	/* With TSYNC, a positive result is the id of a thread that could
	 * not be synchronised; nothing was loaded. */
	if (r > 0)
		return tern_error_make(err, 0,
				       "linux.seccomp: loading the filter: thread %ld could not be "
				       "synchronized (SECCOMP_FILTER_FLAG_TSYNC)",
				       r);
	/* Kernels before 3.17 have only the prctl, which takes no flags. */
	if (errno == ENOSYS && filter->flags == 0 &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	if (errno == EACCES)
		return tern_error_make(
		    err, errno,
		    "linux.seccomp: loading the filter (it needs no_new_privs or "
		    "CAP_SYS_ADMIN)");
	return tern_error_make(err, errno, "linux.seccomp: loading the filter (%u instructions)",
			       (unsigned)filter->len);
}

bool tern_seccomp_has_notify(const tern_seccomp_filter *filter)
{
	return filter != NULL && filter->notify;
}

/* The container process state of the runtime-spec ("Container process
 * state"): what the listener at listenerPath reads next to the fd. The
 * state object is already JSON, so it is appended to the map yajl wrote. */
static char *process_state_json(const oci_seccomp *seccomp, pid_t pid, const char *state_json)
{
	static const char *const fds[] = {"seccompFd", NULL};
	yajl_gen g = ojson_gen_new(NULL);
	cleanup_free char *head = NULL;
	size_t len = 0;

	yajl_gen_map_open(g);
	ojson_gen_kv_string(g, "ociVersion", TERN_OCI_VERSION);
	ojson_gen_strv(g, "fds", fds);
	ojson_gen_kv_int(g, "pid", pid);
	ojson_gen_kv_string(g, "metadata",
			    seccomp->listener_metadata ? seccomp->listener_metadata : "");
	yajl_gen_map_close(g);
	if (ojson_gen_finish(g, &head, &len) < 0 || len < 2 || head[len - 1] != '}')
		return NULL;
	head[len - 1] = '\0';
	return tern_strdup_printf("%s,\"state\":%s}", head, state_json);
}

int tern_seccomp_send_to_listener(const oci_seccomp *seccomp, int notify_fd, pid_t pid,
				  const char *state_json, tern_error **err)
{
	cleanup_close int sock = -1;
	cleanup_free char *json = process_state_json(seccomp, pid, state_json);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	const char *path = seccomp->listener_path;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	ssize_t n;

	if (json == NULL)
		return tern_error_make(err, ENOMEM,
				       "linux.seccomp.listenerPath: building the process state");
	if (path == NULL || strlen(path) >= sizeof(addr.sun_path))
		return tern_error_make(err, ENAMETOOLONG, "linux.seccomp.listenerPath `%s`",
				       path ? path : "");
	strcpy(addr.sun_path, path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return tern_error_make(err, errno, "linux.seccomp.listenerPath: socket");
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		return tern_error_make(err, errno, "linux.seccomp.listenerPath: connect to `%s`",
				       path);

	/* One message: the state as data, the fd as SCM_RIGHTS (the index of
	 * "seccompFd" in fds is its index in the rights array). */
	iov = (struct iovec){.iov_base = json, .iov_len = strlen(json)};
	memset(&control, 0, sizeof(control));
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof(control.buf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &notify_fd, sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return tern_error_make(
		    err, errno, "linux.seccomp.listenerPath: send the seccomp fd to `%s`", path);
	/* A stream may take part of it: the fd went with the first byte. */
	if ((size_t)n < iov.iov_len &&
	    (n = tern_write_all(sock, json + n, iov.iov_len - (size_t)n)) < 0)
		return tern_error_make(err, (int)-n,
				       "linux.seccomp.listenerPath: send the state to `%s`", path);
	return 0;
}

void tern_seccomp_filter_free(tern_seccomp_filter *filter)
{
	if (filter == NULL)
		return;
	free(filter->insns);
	free(filter);
}
