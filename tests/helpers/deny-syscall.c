/* deny-syscall: run a command under a seccomp filter that fails the named
 * syscalls with EPERM, as a runtime finds itself when the engine that
 * starts it runs under a profile without them (older default profiles
 * lack close_range).
 *
 *   deny-syscall NAME[,NAME...] CMD [ARG...]
 *
 * NAME: close_range or faccessat2. The filter is loaded with
 * CAP_SYS_ADMIN rather than no_new_privs, which would reach the
 * container too. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "deny-syscall: add this architecture's AUDIT_ARCH"
#endif

static long nr_of(const char *name)
{
	if (strcmp(name, "close_range") == 0)
		return SYS_close_range;
	if (strcmp(name, "faccessat2") == 0)
		return SYS_faccessat2;
	return -1;
}

int main(int argc, char **argv)
{
	struct sock_filter prog[64];
	unsigned n = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: deny-syscall NAME[,NAME...] CMD [ARG...]\n");
		return 2;
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr));
	for (char *tok = strtok(argv[1], ","); tok != NULL && n < 60; tok = strtok(NULL, ",")) {
		long nr = nr_of(tok);
		if (nr < 0) {
			fprintf(stderr, "deny-syscall: unknown syscall `%s`\n", tok);
			return 2;
		}
		prog[n++] =
		    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
		prog[n++] =
		    (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0) {
		perror("deny-syscall: load the filter");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("deny-syscall: exec");
	return 127;
}
