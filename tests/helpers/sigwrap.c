/* sigwrap: run a command with chosen signals ignored and blocked, as a
 * caller may leave them for the runtime (conmon ignores SIGPIPE; a shell
 * ignores SIGINT and SIGQUIT in its background jobs).
 *
 *   sigwrap IGNORED BLOCKED CMD [ARG...]
 *
 * IGNORED and BLOCKED are comma-separated signal numbers ("13,2"), or "-"
 * for none. Both survive execve, which is the point. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void each(char *list, void (*fn)(int))
{
	if (strcmp(list, "-") == 0)
		return;
	for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ","))
		fn(atoi(tok));
}

static void ignore(int sig)
{
	if (signal(sig, SIG_IGN) == SIG_ERR) {
		perror("sigwrap: signal");
		exit(1);
	}
}

static sigset_t blocked;

static void block(int sig)
{
	sigaddset(&blocked, sig);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: sigwrap IGNORED BLOCKED CMD [ARG...]\n");
		return 2;
	}
	each(argv[1], ignore);
	sigemptyset(&blocked);
	each(argv[2], block);
	if (sigprocmask(SIG_BLOCK, &blocked, NULL) < 0) {
		perror("sigwrap: sigprocmask");
		return 1;
	}
	execvp(argv[3], argv + 3);
	perror("sigwrap: exec");
	return 127;
}
