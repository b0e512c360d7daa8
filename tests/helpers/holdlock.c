/* holdlock PATH: take an exclusive flock on PATH and hold it forever (for
 * checkpoint --file-locks). */
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fd = argc > 1 ? open(argv[1], O_RDWR | O_CREAT, 0644) : -1;

	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		return 1;
	for (;;)
		pause();
}
