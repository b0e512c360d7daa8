/* The migration channel for the fuzz targets: a socketpair whose far end
 * holds the input (the bytes the peer sent, then EOF), and a channel
 * without TLS on the near end (tern_mchan_test_plain: the frames as they
 * are inside the TLS stream). */
#pragma once

#include "migrate-channel.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* The channel, its peer's fd in *peer (close it after the channel). */
static inline tern_mchan *fuzz_mchan(const uint8_t *data, size_t size, int *peer)
{
	tern_mchan *c = NULL;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	/* all of it fits: a socket takes about 200 KiB, inputs are <= 64 KiB */
	for (size_t done = 0; done < size;) {
		ssize_t n = write(sv[1], data + done, size - done);
		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);
	tern_mchan_test_plain(sv[0], &c);
	*peer = sv[1];
	return c;
}
