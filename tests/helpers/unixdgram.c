/* unixdgram PATH: connect a datagram unix socket to PATH (a socket bound
 * outside the container) and send "N" every 0.1 s, N counting up: a socket
 * to the outside, for --ext-unix-sk. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timespec ts = {0, 100 * 1000 * 1000};
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);

	if (argc < 2 || strlen(argv[1]) >= sizeof(a.sun_path))
		return 2;
	strcpy(a.sun_path, argv[1]);
	while (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		nanosleep(&ts, NULL);
	for (unsigned long n = 1;; n++) {
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%lu", n);
		send(s, buf, (size_t)len, 0);
		nanosleep(&ts, NULL);
	}
}
