/* memhash MIB OUTFILE: fill MIB mebibytes with pseudo-random bytes (seeded
 * from the clock, so no two runs hold the same data), write the FNV-1a hash
 * of all of it to OUTFILE, then on every SIGUSR1 hash the memory again and
 * write "again HASH" to OUTFILE. Used to check that a checkpoint and
 * restore bring every byte back. On SIGUSR2 it fills the memory anew (a
 * clone diverging from its siblings) and writes "new HASH". */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t again, refill;

static void on_usr1(int sig)
{
	(void)sig;
	again = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	refill = 1;
}

static void fill(unsigned char *p, size_t n)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec * 2654435761ULL + (uint64_t)ts.tv_sec;
	for (size_t i = 0; i < n; i += 8) {
		/* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		for (int b = 0; b < 8 && i + b < n; b++)
			p[i + b] = (unsigned char)(x >> (8 * b));
	}
}

static uint64_t hash(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void report(const char *path, const char *what, uint64_t h)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		exit(1);
	fprintf(f, "%s %016llx\n", what, (unsigned long long)h);
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 16) << 20;
	const char *out = argc > 2 ? argv[2] : "/tmp/memhash";
	unsigned char *p = malloc(n);

	if (p == NULL)
		return 1;
	fill(p, n);
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	report(out, "first", hash(p, n));
	for (;;) {
		pause();
		if (again) {
			again = 0;
			report(out, "again", hash(p, n));
		}
		if (refill) {
			refill = 0;
			fill(p, n);
			report(out, "new", hash(p, n));
		}
	}
}
