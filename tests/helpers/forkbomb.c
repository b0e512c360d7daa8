/* forkbomb [MAX]: fork children that just wait, until fork fails or MAX
 * (default 1000: a bounded bomb, in case no limit stops it) is reached;
 * print "forked N: reason", kill the children and exit 0. Used to check
 * that pids.limit stops a fork bomb. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long max = argc > 1 ? atol(argv[1]) : 1000;
	pid_t *kids = calloc((size_t)max, sizeof(pid_t));
	long n = 0;
	const char *why = "reached the maximum";

	if (kids == NULL)
		return 1;
	while (n < max) {
		pid_t p = fork();
		if (p < 0) {
			why = strerror(errno);
			break;
		}
		if (p == 0) {
			pause();
			_exit(0);
		}
		kids[n++] = p;
	}
	printf("forked %ld: %s\n", n, why);
	fflush(stdout);
	for (long i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return 0;
}
