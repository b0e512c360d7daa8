/* enosys: run a command as if the kernel lacked some system calls.
 *
 *   enosys NAME[,NAME...] COMMAND [ARG...]
 *
 * Installs a seccomp filter that makes the named calls (from the table
 * below) fail with ENOSYS, which is what a kernel older than the call
 * answers, then execs COMMAND; everything it starts inherits the filter.
 * E.g. `enosys mount_setattr tern run ...` is a Linux 5.2-5.11 kernel to
 * tern. Needs CAP_SYS_ADMIN (no no_new_privs is set, so setuid and the
 * rest work as usual under it). For the tests of runtime fallbacks. */
#define _GNU_SOURCE
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
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "enosys: unknown architecture"
#endif

static const struct {
	const char *name;
	long nr;
} table[] = {
    {"open_tree", __NR_open_tree},
    {"move_mount", __NR_move_mount},
    {"mount_setattr", __NR_mount_setattr},
    {"fsopen", __NR_fsopen},
    {"fsconfig", __NR_fsconfig},
    {"fsmount", __NR_fsmount},
    {"fspick", __NR_fspick},
    {"close_range", __NR_close_range},
    {"openat2", __NR_openat2},
    {"pidfd_open", __NR_pidfd_open},
};
#define NTABLE (sizeof(table) / sizeof(table[0]))

int main(int argc, char **argv)
{
	/* arch check (3) + load nr (1) + 2 per call + allow (1) */
	struct sock_filter filter[5 + 2 * NTABLE];
	size_t n = 0;
	char names[1024], *save = NULL;

	if (argc < 3) {
		fprintf(stderr, "usage: enosys NAME[,NAME...] COMMAND [ARG...]\n");
		return 2;
	}
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   offsetof(struct seccomp_data, arch));
	filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   offsetof(struct seccomp_data, nr));
	snprintf(names, sizeof(names), "%s", argv[1]);
	for (char *s = strtok_r(names, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < NTABLE && strcmp(table[i].name, s) != 0; i++)
			;
		if (i == NTABLE || n + 3 > sizeof(filter) / sizeof(filter[0])) {
			fprintf(stderr, "enosys: unknown or repeated syscall `%s`\n", s);
			return 2;
		}
		filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							   (unsigned)table[i].nr, 0, 1);
		filter[n++] =
		    (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	}
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = {.len = (unsigned short)n, .filter = filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("enosys: seccomp");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("enosys: exec");
	return 127;
}
