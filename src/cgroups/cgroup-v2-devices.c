/* cgroup v2 device access control: an eBPF program.
 *
 * cgroup v2 has no devices.allow/deny files. The kernel instead runs
 * BPF_PROG_TYPE_CGROUP_DEVICE programs attached to the cgroup on every
 * open/mknod of a device node; the program sees (type, access, major,
 * minor) and returns 1 to allow, 0 to deny (EPERM). We write that program
 * here, by hand, from linux.resources.devices plus runc's defaults: no
 * libbpf, just a few instructions per rule.
 *
 * Semantics, as runc's v1 emulator and the runtime-spec example describe
 * them: the list is read in order, each rule adds to or takes from what is
 * allowed, so for any one access the LAST matching rule decides, and with
 * no match the access is denied. The program therefore tests the rules from
 * the last to the first and returns at the first match. An allow rule
 * matches when it grants every bit of the requested access (an O_RDWR open
 * needs both r and w from the same rule); a deny rule matches when it takes
 * away any bit of it. Rules for the very same device add up, as v1's
 * devices.allow merges them: "c 1:3 r" then "c 1:3 w" allows an O_RDWR open,
 * so each allow rule is widened by what earlier rules for that device
 * granted and no later deny for it took back.
 *
 * Register use inside the program:
 *   r1 = ctx (struct bpf_cgroup_dev_ctx *), then scratch
 *   r2 = device type (BPF_DEVCG_DEV_BLOCK/CHAR)
 *   r3 = requested access (BPF_DEVCG_ACC_MKNOD/READ/WRITE bits)
 *   r4 = major, r5 = minor
 *   r0 = verdict */
#include "cgroup-v2.h"

#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- a tiny assembler ---- */

typedef struct {
	struct bpf_insn *insns;
	size_t len, cap;
} prog;

static size_t emit(prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->len == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->insns = realloc(p->insns, p->cap * sizeof(*p->insns));
		if (p->insns == NULL)
			abort();
	}
	p->insns[p->len] =
	    (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
	return p->len++;
}

/* dst = *(u32 *)(src + off) */
#define LDX_W(p, dst, src, off) emit(p, BPF_LDX | BPF_W | BPF_MEM, dst, src, off, 0)
/* 32-bit ALU: dst = src, dst = imm, dst &= imm, dst >>= imm */
#define MOV32_REG(p, dst, src) emit(p, BPF_ALU | BPF_MOV | BPF_X, dst, src, 0, 0)
#define MOV32_IMM(p, dst, imm) emit(p, BPF_ALU | BPF_MOV | BPF_K, dst, 0, 0, imm)
#define AND32_IMM(p, dst, imm) emit(p, BPF_ALU | BPF_AND | BPF_K, dst, 0, 0, imm)
#define RSH32_IMM(p, dst, imm) emit(p, BPF_ALU | BPF_RSH | BPF_K, dst, 0, 0, imm)
/* 32-bit compares (JMP32, kernel >= 5.1): major/minor are u32, and a
 * 64-bit compare would sign-extend an immediate above 2^31. The offset is
 * patched when the end of the rule's block is known. */
#define JNE32_IMM(p, dst, imm) emit(p, BPF_JMP32 | BPF_JNE | BPF_K, dst, 0, 0, imm)
#define JEQ32_IMM(p, dst, imm) emit(p, BPF_JMP32 | BPF_JEQ | BPF_K, dst, 0, 0, imm)
#define EXIT(p)		       emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

enum { R0 = 0, R1, R2, R3, R4, R5 };
#define ACC_ALL (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)

/* One rule, decoded. type 0 = any; major/minor -1 = any. */
typedef struct {
	bool allow;
	int type;
	int64_t major, minor;
	int access;
} dev_rule;

/* runc's defaults, appended after the config's rules so they always hold
 * (a container must be able to use /dev/null whatever its rules say). */
static const dev_rule default_rules[] = {
    {true, BPF_DEVCG_DEV_CHAR, -1, -1, BPF_DEVCG_ACC_MKNOD},  /* mknod any char */
    {true, BPF_DEVCG_DEV_BLOCK, -1, -1, BPF_DEVCG_ACC_MKNOD}, /* mknod any block */
    {true, BPF_DEVCG_DEV_CHAR, 1, 3, ACC_ALL},		      /* /dev/null */
    {true, BPF_DEVCG_DEV_CHAR, 1, 8, ACC_ALL},		      /* /dev/random */
    {true, BPF_DEVCG_DEV_CHAR, 1, 7, ACC_ALL},		      /* /dev/full */
    {true, BPF_DEVCG_DEV_CHAR, 5, 0, ACC_ALL},		      /* /dev/tty */
    {true, BPF_DEVCG_DEV_CHAR, 1, 5, ACC_ALL},		      /* /dev/zero */
    {true, BPF_DEVCG_DEV_CHAR, 1, 9, ACC_ALL},		      /* /dev/urandom */
    {true, BPF_DEVCG_DEV_CHAR, 136, -1, ACC_ALL},	      /* /dev/pts/N */
    {true, BPF_DEVCG_DEV_CHAR, 5, 2, ACC_ALL},		      /* /dev/ptmx */
    {true, BPF_DEVCG_DEV_CHAR, 10, 200, ACC_ALL},	      /* /dev/net/tun */
};

static int decode_rule(const oci_device_cgroup_rule *in, size_t i, dev_rule *out, tern_error **err)
{
	out->allow = in->allow;
	out->type = 0;
	if (in->type && strcmp(in->type, "c") == 0)
		out->type = BPF_DEVCG_DEV_CHAR;
	else if (in->type && strcmp(in->type, "b") == 0)
		out->type = BPF_DEVCG_DEV_BLOCK;
	else if (in->type && strcmp(in->type, "a") != 0)
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.devices[%zu].type: `%s` is not a, b or c", i,
		    in->type);
	out->major = in->major.set ? in->major.value : -1;
	out->minor = in->minor.set ? in->minor.value : -1;
	if (out->major < -1 || out->major > UINT32_MAX || out->minor < -1 ||
	    out->minor > UINT32_MAX)
		return tern_error_make_quiet(
		    err, EINVAL, "linux.resources.devices[%zu]: invalid major or minor", i);
	/* Unset access means all of it, like "*" for the numbers. */
	out->access = in->access ? 0 : ACC_ALL;
	for (const char *a = in->access; a && *a; a++) {
		if (*a == 'r')
			out->access |= BPF_DEVCG_ACC_READ;
		else if (*a == 'w')
			out->access |= BPF_DEVCG_ACC_WRITE;
		else if (*a == 'm')
			out->access |= BPF_DEVCG_ACC_MKNOD;
		else
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.resources.devices[%zu].access: `%s` is not made of r, w and m",
			    i, in->access);
	}
	return 0;
}

/* Emit the test for one rule. Returns true when the block matches every
 * request unconditionally: nothing after it could ever run (and the
 * verifier rejects unreachable instructions), so the caller stops. */
static bool emit_rule(prog *p, const dev_rule *r)
{
	size_t jumps[4];
	size_t nj = 0;

	/* Type "a" means every device whatever the numbers, as in v1. */
	if (r->type != 0) {
		jumps[nj++] = JNE32_IMM(p, R2, r->type);
		if (r->major >= 0)
			jumps[nj++] = JNE32_IMM(p, R4, (int32_t)(uint32_t)r->major);
		if (r->minor >= 0)
			jumps[nj++] = JNE32_IMM(p, R5, (int32_t)(uint32_t)r->minor);
	}
	if (r->access != ACC_ALL) {
		MOV32_REG(p, R1, R3);
		if (r->allow) {
			/* any requested bit outside the rule: no match */
			AND32_IMM(p, R1, ACC_ALL & ~r->access);
			jumps[nj++] = JNE32_IMM(p, R1, 0);
		} else {
			/* no requested bit inside the rule: no match */
			AND32_IMM(p, R1, r->access);
			jumps[nj++] = JEQ32_IMM(p, R1, 0);
		}
	}
	MOV32_IMM(p, R0, r->allow ? 1 : 0);
	EXIT(p);
	for (size_t i = 0; i < nj; i++)
		p->insns[jumps[i]].off = (int16_t)(p->len - jumps[i] - 1);
	return nj == 0;
}

static bool same_device(const dev_rule *a, const dev_rule *b)
{
	return a->type == b->type && a->major == b->major && a->minor == b->minor;
}

/* Widen each allow rule to everything granted for its device so far. */
static void accumulate_same_device(dev_rule *all, size_t n)
{
	cleanup_free int *held = tern_xmalloc0(n * sizeof(*held));

	for (size_t i = 0; i < n; i++) {
		int h = 0;
		for (size_t j = 0; j < i; j++)
			if (same_device(&all[j], &all[i]))
				h = all[j].allow ? h | held[j] : h & ~held[j];
		/* held[i]: what this rule grants (allow) or takes (deny) */
		held[i] = all[i].access;
		if (all[i].allow && all[i].access != 0)
			all[i].access |= h;
	}
}

static int build_program(const oci_device_cgroup_rule *rules, size_t n, prog *p, tern_error **err)
{
	size_t ndef = sizeof(default_rules) / sizeof(default_rules[0]);
	cleanup_free dev_rule *all = tern_xmalloc0((n + ndef) * sizeof(*all));
	bool done = false;
	int ret;

	for (size_t i = 0; i < n; i++)
		if ((ret = decode_rule(&rules[i], i, &all[i], err)) < 0)
			return ret;
	memcpy(all + n, default_rules, sizeof(default_rules));
	accumulate_same_device(all, n + ndef);

	LDX_W(p, R2, R1, 0); /* access_type */
	MOV32_REG(p, R3, R2);
	RSH32_IMM(p, R3, 16);	  /* access bits */
	AND32_IMM(p, R2, 0xffff); /* device type */
	LDX_W(p, R4, R1, 4);	  /* major */
	LDX_W(p, R5, R1, 8);	  /* minor */

	for (size_t i = n + ndef; i-- > 0 && !done;) {
		/* A rule that grants or takes nothing matches nothing. */
		if (all[i].access == 0)
			continue;
		done = emit_rule(p, &all[i]);
	}
	if (!done) {
		MOV32_IMM(p, R0, 0); /* no rule matched: deny */
		EXIT(p);
	}
	if (p->len > BPF_MAXINSNS)
		return tern_error_make_quiet(
		    err, E2BIG,
		    "linux.resources.devices: %zu rules make a device "
		    "program of %zu instructions, more than the kernel takes",
		    n, p->len);
	return 0;
}

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int load_program(const prog *p, tern_error **err)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)p->insns;
	attr.insn_cnt = (uint32_t)p->len;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd >= 0)
		return fd;

	/* Load again with the verifier's log, so a rejected program says why. */
	int saved = errno;
	cleanup_free char *log = tern_xmalloc0(65536);
	attr.log_buf = (uint64_t)(uintptr_t)log;
	attr.log_size = 65536;
	attr.log_level = 1;
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd >= 0)
		return fd;
	size_t len = strlen(log);
	return tern_error_make(err, saved,
			       "load the cgroup v2 device program (%zu instructions)%s%s", p->len,
			       len ? "; verifier: " : "", len > 512 ? log + len - 512 : log);
}

/* The ids of the device programs attached to this cgroup itself (not
 * inherited ones). *ids NULL and *n 0 when the kernel cannot say. */
static void query_attached(int cgfd, uint32_t **ids, uint32_t *n)
{
	union bpf_attr attr;
	uint32_t cap = 64;

	*ids = NULL;
	*n = 0;
	for (;;) {
		uint32_t *buf = tern_xmalloc0(cap * sizeof(*buf));
		memset(&attr, 0, sizeof(attr));
		attr.query.target_fd = (uint32_t)cgfd;
		attr.query.attach_type = BPF_CGROUP_DEVICE;
		attr.query.prog_ids = (uint64_t)(uintptr_t)buf;
		attr.query.prog_cnt = cap;
		if (sys_bpf(BPF_PROG_QUERY, &attr) == 0) {
			*ids = buf;
			*n = attr.query.prog_cnt;
			return;
		}
		free(buf);
		if (errno != ENOSPC || cap >= 65536)
			return;
		cap *= 4;
	}
}

int tern_cgroup_v2_devices_program_len(const oci_device_cgroup_rule *rules, size_t n, size_t *len,
				       tern_error **err)
{
	prog p = {0};
	int ret = build_program(rules, n, &p, err);

	*len = p.len;
	free(p.insns);
	return ret;
}

int tern_cgroup_v2_devices_apply(const char *dir, const oci_device_cgroup_rule *rules, size_t n,
				 tern_error **err)
{
	cleanup_close int cgfd = -1;
	cleanup_close int progfd = -1;
	cleanup_free uint32_t *old = NULL;
	uint32_t nold = 0;
	prog p = {0};
	union bpf_attr attr;
	int ret;

	ret = build_program(rules, n, &p, err);
	if (ret == 0) {
		progfd = load_program(&p, err);
		ret = progfd < 0 ? progfd : 0;
	}
	free(p.insns);
	if (ret < 0)
		return tern_error_wrap(err, "devices for cgroup `%s`", dir);

	cgfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (cgfd < 0)
		return tern_error_make(err, errno, "open cgroup `%s`", dir);

	query_attached(cgfd, &old, &nold);

	/* ALLOW_MULTI: other programs (a systemd unit's, a nested runtime's)
	 * may sit on the same cgroup; every one of them must allow. */
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cgfd;
	attr.attach_bpf_fd = (uint32_t)progfd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = BPF_F_ALLOW_MULTI;
	if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0)
		return tern_error_make(err, errno, "attach the device program to cgroup `%s`", dir);

	/* Now drop what was attached before (our previous rules, on update):
	 * it was attached before ours, so in the meantime both applied. */
	for (uint32_t i = 0; i < nold; i++) {
		cleanup_close int oldfd = -1;
		memset(&attr, 0, sizeof(attr));
		attr.prog_id = old[i];
		oldfd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
		if (oldfd < 0)
			continue; /* already gone */
		memset(&attr, 0, sizeof(attr));
		attr.target_fd = (uint32_t)cgfd;
		attr.attach_bpf_fd = (uint32_t)oldfd;
		attr.attach_type = BPF_CGROUP_DEVICE;
		if (sys_bpf(BPF_PROG_DETACH, &attr) < 0 && errno != ENOENT)
			return tern_error_make(
			    err, errno, "detach the previous device program from cgroup `%s`", dir);
	}
	tern_debug("cgroup v2: device program with %zu rules attached to %s", n, dir);
	return 0;
}
