/* measure CMD...: run CMD and print, on stdout, one line
 *   WALL_US CPU_US MAXRSS_KIB EXIT
 * the wall time from fork to its exit, its user+system CPU time and its
 * peak resident set size (wait4's rusage: the command and the descendants
 * it waited for), and its exit status (128+N if killed by signal N). CMD's
 * own stdout and stderr go to /dev/null and the file $MEASURE_ERR (if set),
 * so that the line is the only output. For bench/runtime-bench.sh. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: measure CMD [ARG...]\n");
		return 2;
	}
	const char *errpath = getenv("MEASURE_ERR");
	long long t0 = now_us();
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int err = errpath ? open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600) : null;
		dup2(null, 0);
		dup2(null, 1);
		dup2(err >= 0 ? err : null, 2);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 2;
	}
	long long wall = now_us() - t0;
	long long cpu = (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
			(long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("%lld %lld %ld %d\n", wall, cpu, ru.ru_maxrss, code);
	return 0;
}
