/* stdio-as: run a command with stdin /dev/null and stdout and stderr on a
 * new pipe or unix socket, copy whatever arrives to our own stdout until
 * every writer has closed its end (a created container holds it until it
 * exits), and exit with the command's status.
 *
 *   stdio-as pipe|socket CMD [ARG...] */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fds[2], status = 0;
	char buf[4096];
	ssize_t n;

	if (argc < 3) {
		fprintf(stderr, "usage: stdio-as pipe|socket CMD [ARG...]\n");
		return 2;
	}
	if (strcmp(argv[1], "pipe") == 0 ? pipe(fds) < 0
					 : socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0) {
		perror("stdio-as: pipe/socketpair");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("stdio-as: fork");
		return 1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
			_exit(126);
		close(fds[0]);
		close(fds[1]);
		close(null);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		if (write(1, buf, (size_t)n) != n)
			return 1;
	if (waitpid(pid, &status, 0) < 0)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
