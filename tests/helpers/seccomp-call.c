/* seccomp-call: make chosen system calls with chosen arguments and print
 * what each returned, for the seccomp tests.
 *
 *   seccomp-call [-t] [-32] NAME [ARG...] [, NAME [ARG...]]...
 *
 * NAME is a syscall from the table below or nr:N. An ARG is a number
 * (strtoull, any base) or s:TEXT (a pointer to TEXT). Each call prints one
 * line, "NAME ARG...: ok RET" or "NAME ARG...: errno N". Calls are
 * separated by a lone ",". The process then prints "done" and exits 0.
 *   -t   make each call in a second thread; the main thread then prints
 *        "main thread alive" (so SCMP_ACT_KILL_THREAD and _PROCESS differ)
 *   -32  make each call through the i386 entry (int $0x80), with the i386
 *        syscall number, so the filter sees SCMP_ARCH_X86
 *   -s   catch SIGSYS and print "SIGSYS syscall NR" (SCMP_ACT_TRAP sends a
 *        catchable SIGSYS; the kill actions cannot be caught)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
	const char *name;
	long nr, nr32;
} table[] = {
    {"getpid", SYS_getpid, 20},
    {"getppid", SYS_getppid, 64},
    {"getuid", SYS_getuid, 24},
    {"getgid", SYS_getgid, 47},
    {"geteuid", SYS_geteuid, 49},
    {"getegid", SYS_getegid, 50},
    {"gettid", SYS_gettid, 224},
    {"sched_yield", SYS_sched_yield, 158},
    {"mkdir", SYS_mkdir, 39},
    {"rmdir", SYS_rmdir, 40},
    {"umask", SYS_umask, 60},
    {"mount", SYS_mount, 21},
    {"sethostname", SYS_sethostname, 74},
    {"unshare", SYS_unshare, 310},
    {"personality", SYS_personality, 136},
};

struct call {
	const char *name;
	long nr;
	unsigned long args[6];
	int nargs;
	char **argv;
	int argc;
	long ret;
	int err;
};

static int use32;

static long call32(long nr, const unsigned long *a)
{
#if defined(__x86_64__)
	long ret;
	/* the i386 ABI: eax nr, ebx ecx edx esi edi ebp; only the low 32 bits */
	__asm__ volatile("push %%rbp\n\tmov %7, %%rbp\n\tint $0x80\n\tpop %%rbp"
			 : "=a"(ret)
			 : "a"(nr), "b"(a[0]), "c"(a[1]), "d"(a[2]), "S"(a[3]), "D"(a[4]), "g"(a[5])
			 : "memory");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	(void)nr;
	(void)a;
	errno = ENOSYS;
	return -1;
#endif
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "SIGSYS syscall %d\n", si->si_syscall);

	(void)sig;
	(void)uc;
	if (write(1, buf, (size_t)n) < 0)
		_exit(3);
}

static void *do_call(void *p)
{
	struct call *c = p;
	unsigned long *a = c->args;

	errno = 0;
	if (use32)
		c->ret = call32(c->nr, a);
	else
		c->ret = syscall(c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	c->err = c->ret < 0 ? errno : 0;
	return NULL;
}

static void print(const struct call *c)
{
	for (int i = 0; i < c->argc; i++)
		printf("%s%s", i ? " " : "", c->argv[i]);
	if (c->ret < 0)
		printf(": errno %d\n", c->err);
	else
		printf(": ok %ld\n", c->ret);
	fflush(stdout);
}

static int parse(struct call *c, char **argv, int argc)
{
	c->argv = argv;
	c->argc = argc;
	c->name = argv[0];
	c->nr = -1;
	if (strncmp(argv[0], "nr:", 3) == 0)
		c->nr = strtol(argv[0] + 3, NULL, 0);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(argv[0], table[i].name) == 0)
			c->nr = use32 ? table[i].nr32 : table[i].nr;
	if (c->nr < 0) {
		fprintf(stderr, "seccomp-call: unknown syscall %s\n", argv[0]);
		return -1;
	}
	if (argc - 1 > 6) {
		fprintf(stderr, "seccomp-call: at most 6 arguments\n");
		return -1;
	}
	for (int i = 1; i < argc; i++)
		c->args[i - 1] = strncmp(argv[i], "s:", 2) == 0 ? (unsigned long)(argv[i] + 2)
								: strtoull(argv[i], NULL, 0);
	c->nargs = argc - 1;
	return 0;
}

int main(int argc, char **argv)
{
	int threaded = 0, i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-t") == 0)
			threaded = 1;
		else if (strcmp(argv[i], "-32") == 0)
			use32 = 1;
		else if (strcmp(argv[i], "-s") == 0) {
			struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
			sigaction(SIGSYS, &sa, NULL);
		} else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: seccomp-call [-t] [-32] NAME [ARG...] [, NAME ...]\n");
		return 2;
	}
	while (i < argc) {
		int start = i;
		struct call c;

		while (i < argc && strcmp(argv[i], ",") != 0)
			i++;
		memset(&c, 0, sizeof(c));
		if (parse(&c, argv + start, i - start) < 0)
			return 2;
		if (threaded) {
			pthread_t t;
			if (pthread_create(&t, NULL, do_call, &c) != 0) {
				fprintf(stderr, "seccomp-call: pthread_create failed\n");
				return 2;
			}
			pthread_join(t, NULL);
			printf("main thread alive\n");
		} else {
			do_call(&c);
		}
		print(&c);
		i++; /* the "," */
	}
	printf("done\n");
	return 0;
}
