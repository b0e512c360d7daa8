/* stamper MIB DIRTY_MIB_PER_S OUTFILE: a process for measuring how long a
 * container is stopped by a checkpoint, restore or migration.
 *
 * It fills MIB mebibytes with a checkable pattern, then stamps the clock
 * every millisecond (a 1 ms clock_nanosleep between stamps) and keeps the
 * largest gap between two consecutive stamps. Each tick it also rewrites its share
 * of DIRTY_MIB_PER_S (0: idle), so that the pages dirtied are spread over
 * each second. It writes
 *	maxgap_us N stamps M resets R
 * to OUTFILE (through OUTFILE.tmp and rename, so never half-written) each
 * time the largest gap grows and every 100 stamps. N is the largest gap
 * since the last reset, M counts every stamp since the start (it never goes
 * back), R counts the resets.
 *
 * SIGUSR1 resets the largest gap (after a warm-up, so that only the gap of
 * the move is seen). SIGUSR2 checks every page of the pattern and writes
 *	verify ok|BAD pages P bad B
 * to OUTFILE.verify (a lost or stale page, e.g. one that came back as
 * zeros, is counted bad).
 *
 * It holds no file descriptor between writes, so that CRIU can dump and
 * restore it anywhere.
 *
 * The clock stamped is CLOCK_REALTIME, not CLOCK_MONOTONIC: criu restores
 * a process into a time namespace of its own whose monotonic and boottime
 * offsets hide most of the time it was stopped (seen with criu 4.2.1: a
 * 2.6 s stop showed as a 0.28 s gap), and time namespaces do not shift
 * CLOCK_REALTIME. On one machine it is the same clock before and after a
 * move (only a clock step, e.g. by NTP, would distort a gap). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define WORDS (PAGE / 8)

static volatile sig_atomic_t reset_req, verify_req;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		reset_req = 1;
	else
		verify_req = 1;
}

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* A page: word 0 is (page index << 32 | version), the other words are
 * derived from the index, the version and their own position. */
static void fill(uint64_t *p, uint64_t idx, uint32_t ver)
{
	uint64_t seed = mix((idx << 32) ^ ver);
	p[0] = (idx << 32) | ver;
	for (unsigned k = 1; k < WORDS; k++)
		p[k] = mix(seed + k);
}

static int check(const uint64_t *p, uint64_t idx, uint32_t ver)
{
	uint64_t seed = mix((idx << 32) ^ ver);
	if (p[0] != ((idx << 32) | ver))
		return 0;
	for (unsigned k = 1; k < WORDS; k++)
		if (p[k] != mix(seed + k))
			return 0;
	return 1;
}

static void put(const char *path, const char *text)
{
	char tmp[4096];
	int fd;
	ssize_t n = (ssize_t)strlen(text);

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, (size_t)n) == n) {
		close(fd);
		rename(tmp, path);
	} else {
		close(fd);
		unlink(tmp);
	}
}

static int64_t ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: stamper MIB DIRTY_MIB_PER_S OUTFILE\n");
		return 2;
	}
	uint64_t pages = (uint64_t)atol(argv[1]) * (1 << 20) / PAGE;
	double dirty_per_ms = atof(argv[2]) * (1 << 20) / PAGE / 1000.0;
	const char *out = argv[3];
	char vpath[4096], line[256];
	uint64_t *mem;
	uint32_t *ver;
	struct sigaction sa;
	struct timespec now;
	const struct timespec tick = { 0, 1000000 };
	int64_t prev, gap, maxgap = 0;
	uint64_t stamps = 0, resets = 0, cursor = 0;
	double owed = 0;

	if (pages == 0)
		pages = 1;
	snprintf(vpath, sizeof(vpath), "%s.verify", out);
	mem = malloc(pages * PAGE);
	ver = calloc(pages, sizeof(*ver));
	if (mem == NULL || ver == NULL)
		return 1;
	for (uint64_t i = 0; i < pages; i++) {
		ver[i] = 1;
		fill(mem + i * WORDS, i, 1);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);

	clock_gettime(CLOCK_REALTIME, &now);
	prev = ns(&now);
	for (;;) {
		int grew = 0;

		/* relative, so that no clock's jump across a restore can
		 * stretch a sleep (a restart after a signal is a new 1 ms) */
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &tick, NULL) != 0)
			;
		clock_gettime(CLOCK_REALTIME, &now);
		stamps++;
		gap = ns(&now) - prev;
		prev = ns(&now);
		if (reset_req) {
			reset_req = 0;
			resets++;
			maxgap = 0;
			grew = 1;
		} else if (gap > maxgap) {
			maxgap = gap;
			grew = 1;
		}

		/* dirty this tick's share of the rate, a page at a time */
		owed += dirty_per_ms;
		while (owed >= 1) {
			owed -= 1;
			cursor = (cursor + 7919) % pages;
			ver[cursor]++;
			fill(mem + cursor * WORDS, cursor, ver[cursor]);
		}

		if (grew || stamps % 100 == 1) {
			snprintf(line, sizeof(line), "maxgap_us %lld stamps %llu resets %llu\n",
				 (long long)(maxgap / 1000), (unsigned long long)stamps,
				 (unsigned long long)resets);
			put(out, line);
		}

		if (verify_req) {
			uint64_t bad = 0;
			verify_req = 0;
			for (uint64_t i = 0; i < pages; i++)
				bad += !check(mem + i * WORDS, i, ver[i]);
			snprintf(line, sizeof(line), "verify %s pages %llu bad %llu\n", bad ? "BAD" : "ok",
				 (unsigned long long)pages, (unsigned long long)bad);
			put(vpath, line);
			/* the check itself is not a gap to report */
			clock_gettime(CLOCK_REALTIME, &now);
			prev = ns(&now);
		}
	}
}
