/* Resource usage of a container's cgroup, for `tern events --stats`.
 *
 * The fields mirror the "data" object of runc's stats event (runc 1.1
 * `events --stats`), so the command that prints them can use runc's JSON
 * names one to one: cpu.usage.{total,percpu,percpu_kernel,percpu_user,
 * kernel,user}, cpu.throttling.{periods,throttled_periods,throttled_time},
 * memory.{usage,swap,kernel,kernelTCP}.{limit,usage,max,failcnt},
 * memory.cache, memory.raw, pids.{current,limit}, blkio.*_recursive[]
 * {major,minor,op,value}, hugetlb.<size>.{usage,max,failcnt}.
 *
 * The caller zeroes the structure once (`tern_cgroup_stats s = {0};`), the
 * per-hierarchy readers (v1: one call per hierarchy; v2: one call) fill the
 * parts their controllers know, and tern_cgroup_stats_free releases the
 * arrays. A part whose controller is absent stays zero; `has_*` says
 * whether it was filled, so the printer can emit {} like runc does.
 *
 * Header only (inline free) so that it needs no object file of its own. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
	uint64_t total;	  /* ns, all cpus */
	uint64_t kernel;  /* ns */
	uint64_t user;	  /* ns */
	uint64_t *percpu; /* ns per cpu, n_cpus entries */
	uint64_t *percpu_kernel;
	uint64_t *percpu_user;
	size_t n_cpus;
} tern_cgroup_cpu_usage;

typedef struct {
	uint64_t periods;
	uint64_t throttled_periods;
	uint64_t throttled_time; /* ns */
} tern_cgroup_cpu_throttling;

/* One memory counter family (v1: memory.*, memory.memsw.*, memory.kmem.*,
 * memory.kmem.tcp.*). "Unlimited" reads as the kernel's page-rounded
 * LONG_MAX, as runc reports it. */
typedef struct {
	uint64_t limit;
	uint64_t usage;
	uint64_t max;
	uint64_t failcnt;
} tern_cgroup_memory_entry;

typedef struct {
	char *key;
	uint64_t value;
} tern_cgroup_stat_kv;

typedef struct {
	uint64_t major;
	uint64_t minor;
	char *op; /* "Read", "Write", "Sync", "Async", "Discard", "Total", or "" */
	uint64_t value;
} tern_cgroup_blkio_entry;

typedef struct {
	tern_cgroup_blkio_entry *items;
	size_t len;
} tern_cgroup_blkio_list;

typedef struct {
	char *pagesize; /* "2MB", "1GB" */
	uint64_t usage;
	uint64_t max;
	uint64_t failcnt;
} tern_cgroup_hugetlb_entry;

typedef struct {
	bool has_cpu;
	tern_cgroup_cpu_usage cpu_usage;
	tern_cgroup_cpu_throttling cpu_throttling;

	bool has_memory;
	tern_cgroup_memory_entry memory_usage;
	tern_cgroup_memory_entry memory_swap; /* v1: memory+swap (memsw) */
	tern_cgroup_memory_entry memory_kernel;
	tern_cgroup_memory_entry memory_kernel_tcp;
	uint64_t memory_cache;
	tern_cgroup_stat_kv *memory_raw; /* memory.stat, in file order */
	size_t memory_raw_len;

	bool has_pids;
	uint64_t pids_current;
	uint64_t pids_limit; /* 0 = "max" (no limit), as runc prints it */

	bool has_blkio;
	tern_cgroup_blkio_list io_service_bytes_recursive;
	tern_cgroup_blkio_list io_serviced_recursive;
	tern_cgroup_blkio_list io_queued_recursive;
	tern_cgroup_blkio_list io_service_time_recursive;
	tern_cgroup_blkio_list io_wait_time_recursive;
	tern_cgroup_blkio_list io_merged_recursive;
	tern_cgroup_blkio_list io_time_recursive;
	tern_cgroup_blkio_list sectors_recursive;

	bool has_hugetlb;
	tern_cgroup_hugetlb_entry *hugetlb;
	size_t hugetlb_len;
} tern_cgroup_stats;

static inline void tern_cgroup_blkio_list_free(tern_cgroup_blkio_list *l)
{
	for (size_t i = 0; i < l->len; i++)
		free(l->items[i].op);
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

/* Free the arrays inside `s` (not `s` itself) and zero it. */
static inline void tern_cgroup_stats_free(tern_cgroup_stats *s)
{
	free(s->cpu_usage.percpu);
	free(s->cpu_usage.percpu_kernel);
	free(s->cpu_usage.percpu_user);
	for (size_t i = 0; i < s->memory_raw_len; i++)
		free(s->memory_raw[i].key);
	free(s->memory_raw);
	tern_cgroup_blkio_list_free(&s->io_service_bytes_recursive);
	tern_cgroup_blkio_list_free(&s->io_serviced_recursive);
	tern_cgroup_blkio_list_free(&s->io_queued_recursive);
	tern_cgroup_blkio_list_free(&s->io_service_time_recursive);
	tern_cgroup_blkio_list_free(&s->io_wait_time_recursive);
	tern_cgroup_blkio_list_free(&s->io_merged_recursive);
	tern_cgroup_blkio_list_free(&s->io_time_recursive);
	tern_cgroup_blkio_list_free(&s->sectors_recursive);
	for (size_t i = 0; i < s->hugetlb_len; i++)
		free(s->hugetlb[i].pagesize);
	free(s->hugetlb);
	*s = (tern_cgroup_stats){0};
}
