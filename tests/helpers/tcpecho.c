/* tcpecho PORT: accept one TCP connection on PORT (all addresses) and
 * answer each line with "N LINE", N counting the lines so far: the count
 * lives in this process's memory, so a restored server that goes on
 * counting is the same server. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
	int one = 1, n = 0;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	char line[512];

	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0) {
		perror("tcpecho");
		return 1;
	}
	int c = accept(s, NULL, NULL);
	FILE *in = fdopen(c, "r");
	while (fgets(line, sizeof(line), in)) {
		char reply[600];
		int len = snprintf(reply, sizeof(reply), "%d %s", ++n, line);
		if (write(c, reply, (size_t)len) != len)
			return 1;
	}
	return 0;
}
