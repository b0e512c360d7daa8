/* unixrecv PATH OUTFILE: bind a datagram unix socket at PATH and, for each
 * datagram, replace OUTFILE with it (written to OUTFILE.tmp and renamed).
 * The outside end of unixdgram, run on the host. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);
	char tmp[4096], buf[64];

	if (argc < 3 || strlen(argv[1]) >= sizeof(a.sun_path))
		return 2;
	strcpy(a.sun_path, argv[1]);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("unixrecv: bind");
		return 1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	for (;;) {
		ssize_t n = recv(s, buf, sizeof(buf), 0);
		if (n < 0)
			return 1;
		FILE *f = fopen(tmp, "w");
		if (f == NULL)
			return 1;
		fwrite(buf, 1, (size_t)n, f);
		fclose(f);
		rename(tmp, argv[2]);
	}
}
