/* nsmounts: every mount of the caller's mount namespace, also those the
 * caller's root (a chroot) hides, which /proc/self/mountinfo leaves out.
 * Walks up from the caller's root mount to the namespace's root with
 * statmount(2), then down with listmount(2) (kernel >= 6.8; the mounts
 * outside the caller's root need CAP_SYS_ADMIN). Prints one line per mount,
 * "ID PARENT MAGIC" (the filesystem's magic number in hex), then
 * "above-root N" (the mounts the caller's root sits on) and "total N". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NR_statmount 457
#define NR_listmount 458
#define MNT_ID_UNIQUE 0x4000U /* STATX_MNT_ID_UNIQUE */
#define SM_SB_BASIC 0x1ULL
#define SM_MNT_BASIC 0x2ULL

struct id_req {
	uint32_t size, spare;
	uint64_t mnt_id, param;
};

/* The head of struct statmount (uapi linux/mount.h), as far as used. */
struct sm {
	uint32_t size, mnt_opts;
	uint64_t mask;
	uint32_t sb_dev_major, sb_dev_minor;
	uint64_t sb_magic;
	uint32_t sb_flags, fs_type;
	uint64_t mnt_id, mnt_parent_id;
	char rest[4096];
};


static uint64_t seen[65536];
static size_t nseen;

static int add(uint64_t id)
{
	for (size_t i = 0; i < nseen; i++)
		if (seen[i] == id)
			return 0;
	if (nseen == sizeof(seen) / sizeof(seen[0]))
		return -1;
	seen[nseen++] = id;
	return 1;
}

int main(void)
{
	struct statx stx;
	struct sm m;
	uint64_t id, ids[512];
	int above = 0;

	if (statx(AT_FDCWD, "/", 0, MNT_ID_UNIQUE, &stx) < 0 || !(stx.stx_mask & MNT_ID_UNIQUE)) {
		perror("statx /");
		return 1;
	}
	id = stx.stx_mnt_id;
	/* Up to the namespace's root (its own parent). */
	for (;;) {
		struct id_req req = {.size = 24, .mnt_id = id, .param = SM_MNT_BASIC};
		memset(&m, 0, sizeof(m));
		if (syscall(NR_statmount, &req, &m, sizeof(m), 0UL) < 0) {
			fprintf(stderr, "statmount %llu: %s\n", (unsigned long long)id,
				strerror(errno));
			return 1;
		}
		if (m.mnt_parent_id == id || m.mnt_parent_id == 0)
			break;
		id = m.mnt_parent_id;
		above++;
	}
	add(id);
	/* Down: the children of each mount found, until no new one. */
	for (size_t i = 0; i < nseen; i++) {
		uint64_t last = 0;
		for (;;) {
			struct id_req req = {.size = 24, .mnt_id = seen[i], .param = last};
			long n = syscall(NR_listmount, &req, ids, 512UL, 0UL);
			if (n < 0) {
				fprintf(stderr, "listmount %llu: %s\n",
					(unsigned long long)seen[i], strerror(errno));
				return 1;
			}
			for (long k = 0; k < n; k++)
				if (add(ids[k]) < 0)
					return 1;
			if (n < 512)
				break;
			last = ids[n - 1];
		}
	}
	for (size_t i = 0; i < nseen; i++) {
		struct id_req req = {.size = 24, .mnt_id = seen[i], .param = SM_SB_BASIC | SM_MNT_BASIC};
		memset(&m, 0, sizeof(m));
		if (syscall(NR_statmount, &req, &m, sizeof(m), 0UL) < 0) {
			fprintf(stderr, "statmount %llu: %s\n", (unsigned long long)seen[i],
				strerror(errno));
			return 1;
		}
		printf("%llu %llu %llx\n", (unsigned long long)m.mnt_id,
		       (unsigned long long)m.mnt_parent_id, (unsigned long long)m.sb_magic);
	}
	printf("above-root %d\ntotal %zu\n", above, nseen);
	return 0;
}
