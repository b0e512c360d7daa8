/* schedinfo: print this process's scheduling attributes (sched_getattr)
 * and I/O priority (ioprio_get), for the process.scheduler and
 * process.ioPriority tests:
 *   policy=SCHED_FIFO priority=10 nice=0 flags=0x0 runtime=0 deadline=0 period=0
 *   ioprio class=2 data=4 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

struct attr {
	uint32_t size;
	uint32_t policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime;
	uint64_t deadline;
	uint64_t period;
};

static const char *policy_name(uint32_t p)
{
	static const char *const names[] = {"SCHED_OTHER",   "SCHED_FIFO", "SCHED_RR",
					    "SCHED_BATCH",   "SCHED_ISO",  "SCHED_IDLE",
					    "SCHED_DEADLINE"};
	return p < sizeof(names) / sizeof(names[0]) ? names[p] : "unknown";
}

int main(void)
{
	struct attr a = {0};
	long io;

	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) < 0) {
		perror("sched_getattr");
		return 1;
	}
	printf("policy=%s priority=%" PRIu32 " nice=%" PRId32 " flags=0x%" PRIx64
	       " runtime=%" PRIu64 " deadline=%" PRIu64 " period=%" PRIu64 "\n",
	       policy_name(a.policy), a.priority, a.nice, a.flags, a.runtime, a.deadline, a.period);
	/* IOPRIO_WHO_PROCESS = 1, who 0 = ourselves */
	io = syscall(SYS_ioprio_get, 1, 0);
	if (io < 0) {
		perror("ioprio_get");
		return 1;
	}
	printf("ioprio class=%ld data=%ld\n", (io >> 13) & 7, io & ((1 << 13) - 1));
	return 0;
}
