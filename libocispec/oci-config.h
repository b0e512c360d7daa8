/* libocispec: the OCI runtime-spec 1.2 config.json, as C structures.
 *
 * Conventions used throughout this header:
 *  - strings are heap-allocated, NULL when the field is absent;
 *  - string lists are NULL-terminated arrays (char **), NULL when the field
 *    is absent and a one-element {NULL} array when present but empty (the
 *    difference matters, e.g. for capabilities);
 *  - arrays of structures come as a pointer plus a _len count;
 *  - optional numbers and booleans use the oci_opt_* wrappers, whose `set`
 *    says whether the field was present in the JSON;
 *  - every structure is freed by oci_config_free() (or the matching _free).
 *
 * Unknown fields are ignored (runtime-spec: "implementations MUST ignore
 * unknown properties"); a field of the wrong JSON type is an error naming
 * its JSON path, e.g. "config.json: process.args: expected a non-empty
 * array of strings".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	bool set;
	int64_t value;
} oci_opt_int64;

typedef struct {
	bool set;
	uint64_t value;
} oci_opt_uint64;

typedef struct {
	bool set;
	bool value;
} oci_opt_bool;

/* A JSON object whose values are all strings (annotations, sysctl,
 * resources.unified, seccomp listenerMetadata is a plain string). */
typedef struct {
	char *key;
	char *value;
} oci_kv;

typedef struct {
	oci_kv *items;
	size_t len;
} oci_map;

/* ---- process ---- */

typedef struct {
	char **bounding;
	char **effective;
	char **inheritable;
	char **permitted;
	char **ambient;
} oci_capabilities;

typedef struct {
	char *type; /* "RLIMIT_NOFILE" ... */
	uint64_t hard;
	uint64_t soft;
} oci_rlimit;

typedef struct {
	char *policy; /* SCHED_OTHER ... */
	oci_opt_int64 nice;
	oci_opt_int64 priority;
	char **flags;
	oci_opt_uint64 runtime;
	oci_opt_uint64 deadline;
	oci_opt_uint64 period;
} oci_scheduler;

typedef struct {
	char *class_; /* IOPRIO_CLASS_RT | IOPRIO_CLASS_BE | IOPRIO_CLASS_IDLE */
	int64_t priority;
} oci_io_priority;

typedef struct {
	char *initial;
	char *final;
} oci_exec_cpu_affinity;

typedef struct {
	uint32_t uid;
	uint32_t gid;
	oci_opt_uint64 umask;
	uint32_t *additional_gids;
	size_t additional_gids_len;
} oci_user;

typedef struct {
	bool terminal;
	oci_opt_uint64 console_height; /* consoleSize.height */
	oci_opt_uint64 console_width;  /* consoleSize.width */
	oci_user user;
	char **args; /* validated: non-empty */
	char **env;
	char *cwd;			/* validated: absolute */
	oci_capabilities *capabilities; /* NULL when absent */
	oci_rlimit *rlimits;
	size_t rlimits_len;
	bool no_new_privileges;
	char *apparmor_profile;
	oci_opt_int64 oom_score_adj;
	char *selinux_label;
	oci_scheduler *scheduler;		  /* NULL when absent */
	oci_io_priority *io_priority;		  /* NULL when absent */
	oci_exec_cpu_affinity *exec_cpu_affinity; /* NULL when absent */
} oci_process;

/* ---- root and mounts ---- */

typedef struct {
	char *path; /* as written in config.json; relative to the bundle or absolute */
	bool readonly;
} oci_root;

typedef struct {
	uint32_t container_id;
	uint32_t host_id;
	uint32_t size;
} oci_id_mapping;

typedef struct {
	char *destination; /* required */
	char *type;
	char *source;
	char **options;
	oci_id_mapping *uid_mappings;
	size_t uid_mappings_len;
	oci_id_mapping *gid_mappings;
	size_t gid_mappings_len;
} oci_mount;

/* ---- hooks ---- */

typedef struct {
	char *path; /* required, absolute */
	char **args;
	char **env;
	oci_opt_int64 timeout; /* seconds, > 0 when set */
} oci_hook;

typedef struct {
	oci_hook *items;
	size_t len;
} oci_hook_list;

typedef struct {
	oci_hook_list prestart; /* deprecated but still run, like runc */
	oci_hook_list create_runtime;
	oci_hook_list create_container;
	oci_hook_list start_container;
	oci_hook_list poststart;
	oci_hook_list poststop;
} oci_hooks;

/* ---- linux ---- */

typedef enum {
	OCI_NS_PID = 0,
	OCI_NS_NETWORK,
	OCI_NS_MOUNT,
	OCI_NS_IPC,
	OCI_NS_UTS,
	OCI_NS_USER,
	OCI_NS_CGROUP,
	OCI_NS_TIME,
	OCI_NS_COUNT
} oci_namespace_type;

typedef struct {
	oci_namespace_type type;
	char *path; /* NULL: create a new one */
} oci_namespace;

typedef struct {
	char *type; /* "c", "b", "u" or "p" */
	char *path; /* required, absolute */
	oci_opt_int64 major;
	oci_opt_int64 minor;
	oci_opt_uint64 file_mode;
	oci_opt_uint64 uid;
	oci_opt_uint64 gid;
} oci_device;

typedef struct {
	bool allow;
	char *type; /* NULL means "a" */
	oci_opt_int64 major;
	oci_opt_int64 minor;
	char *access;
} oci_device_cgroup_rule;

typedef struct {
	oci_opt_int64 limit;
	oci_opt_int64 reservation;
	oci_opt_int64 swap;
	oci_opt_int64 kernel;
	oci_opt_int64 kernel_tcp;
	oci_opt_uint64 swappiness;
	oci_opt_bool disable_oom_killer;
	oci_opt_bool use_hierarchy;
	oci_opt_bool check_before_update;
} oci_memory;

typedef struct {
	oci_opt_uint64 shares;
	oci_opt_int64 quota;
	oci_opt_uint64 burst;
	oci_opt_uint64 period;
	oci_opt_int64 realtime_runtime;
	oci_opt_uint64 realtime_period;
	char *cpus;
	char *mems;
	oci_opt_int64 idle;
} oci_cpu;

typedef struct {
	int64_t major;
	int64_t minor;
	oci_opt_uint64 weight;
	oci_opt_uint64 leaf_weight;
} oci_blkio_weight_device;

typedef struct {
	int64_t major;
	int64_t minor;
	uint64_t rate;
} oci_blkio_throttle_device;

typedef struct {
	oci_opt_uint64 weight;
	oci_opt_uint64 leaf_weight;
	oci_blkio_weight_device *weight_device;
	size_t weight_device_len;
	oci_blkio_throttle_device *throttle_read_bps_device;
	size_t throttle_read_bps_device_len;
	oci_blkio_throttle_device *throttle_write_bps_device;
	size_t throttle_write_bps_device_len;
	oci_blkio_throttle_device *throttle_read_iops_device;
	size_t throttle_read_iops_device_len;
	oci_blkio_throttle_device *throttle_write_iops_device;
	size_t throttle_write_iops_device_len;
} oci_blkio;

typedef struct {
	char *page_size;
	uint64_t limit;
} oci_hugepage_limit;

typedef struct {
	char *name;
	uint32_t priority;
} oci_net_priority;

typedef struct {
	oci_opt_uint64 class_id;
	oci_net_priority *priorities;
	size_t priorities_len;
} oci_network;

typedef struct {
	char *name; /* the key of linux.resources.rdma */
	oci_opt_uint64 hca_handles;
	oci_opt_uint64 hca_objects;
} oci_rdma;

typedef struct {
	oci_device_cgroup_rule *devices;
	size_t devices_len;
	oci_memory *memory; /* NULL when absent, likewise below */
	oci_cpu *cpu;
	oci_opt_int64 pids_limit; /* pids.limit */
	oci_blkio *block_io;
	oci_hugepage_limit *hugepage_limits;
	size_t hugepage_limits_len;
	oci_network *network;
	oci_rdma *rdma;
	size_t rdma_len;
	oci_map unified;
} oci_resources;

typedef struct {
	uint32_t index;
	uint64_t value;
	oci_opt_uint64 value_two;
	char *op; /* SCMP_CMP_NE ... */
} oci_seccomp_arg;

typedef struct {
	char **names;
	char *action;
	oci_opt_uint64 errno_ret;
	oci_seccomp_arg *args;
	size_t args_len;
} oci_seccomp_syscall;

typedef struct {
	char *default_action;
	oci_opt_uint64 default_errno_ret;
	char **architectures;
	char **flags;
	char *listener_path;
	char *listener_metadata;
	oci_seccomp_syscall *syscalls;
	size_t syscalls_len;
} oci_seccomp;

typedef struct {
	char *domain;
	char **flags;
} oci_personality;

/* linux.intelRdt (config-linux.md, IntelRdt): the resctrl group the
 * container runs in, and what goes into its schemata file. */
typedef struct {
	char *clos_id;			/* NULL: a group named after the container; "/": the root */
	char *l3_cache_schema;		/* written first */
	char *mem_bw_schema;		/* then this ("MB:...") */
	char **schemata;		/* 1.3: one line each, written last */
	oci_opt_bool enable_monitoring; /* 1.3: a MON group named after the container */
	oci_opt_bool enable_cmt;	/* 1.1-1.2, replaced by enableMonitoring in 1.3 */
	oci_opt_bool enable_mbm;	/* likewise */
} oci_intel_rdt;

typedef struct {
	char *name;	/* host interface name, the key of linux.netDevices */
	char *new_name; /* netDevices.<name>.name */
} oci_net_device;

typedef struct {
	oci_opt_int64 secs;
	oci_opt_uint64 nanosecs;
} oci_time_offset;

/* linux.memoryPolicy (runtime-spec 1.3, set_mempolicy(2)). The modes and
 * flags in the spec's order; oci_mpol_mode_name and oci_mpol_flag_name
 * give their names, the one list of what tern accepts. */
typedef enum {
	OCI_MPOL_DEFAULT = 0,
	OCI_MPOL_BIND,
	OCI_MPOL_INTERLEAVE,
	OCI_MPOL_WEIGHTED_INTERLEAVE,
	OCI_MPOL_PREFERRED,
	OCI_MPOL_PREFERRED_MANY,
	OCI_MPOL_LOCAL,
	OCI_MPOL_MODE_COUNT
} oci_mpol_mode;

typedef enum {
	OCI_MPOL_F_NUMA_BALANCING = 0,
	OCI_MPOL_F_RELATIVE_NODES,
	OCI_MPOL_F_STATIC_NODES,
	OCI_MPOL_FLAG_COUNT
} oci_mpol_flag;

typedef struct {
	oci_mpol_mode mode; /* required */
	char *nodes;	    /* a node list ("0-3,7"); NULL when absent */
	unsigned flags;	    /* bit (1u << oci_mpol_flag) for each flag given */
} oci_memory_policy;

typedef struct {
	oci_namespace *namespaces;
	size_t namespaces_len;
	oci_id_mapping *uid_mappings;
	size_t uid_mappings_len;
	oci_id_mapping *gid_mappings;
	size_t gid_mappings_len;
	oci_time_offset time_offset_monotonic; /* timeOffsets.monotonic */
	oci_time_offset time_offset_boottime;  /* timeOffsets.boottime */
	oci_device *devices;
	size_t devices_len;
	char *cgroups_path;
	oci_resources *resources; /* NULL when absent */
	char *rootfs_propagation;
	char **masked_paths;
	char **readonly_paths;
	char *mount_label;
	oci_map sysctl;
	oci_seccomp *seccomp;	      /* NULL when absent */
	oci_personality *personality; /* NULL when absent */
	oci_intel_rdt *intel_rdt;     /* NULL when absent */
	oci_net_device *net_devices;
	size_t net_devices_len;
	oci_memory_policy *memory_policy; /* NULL when absent */
} oci_linux;

typedef struct {
	char *oci_version;
	oci_process *process; /* NULL when absent (allowed by the spec for create-only bundles, but
				 tern's create requires it: checked by oci_config_validate) */
	oci_root *root;	      /* NULL when absent */
	char *hostname;
	char *domainname;
	oci_mount *mounts;
	size_t mounts_len;
	oci_hooks *hooks; /* NULL when absent */
	oci_map annotations;
	oci_linux *linux_; /* NULL when absent */

	/* Non-fatal remarks gathered while parsing (e.g. an ociVersion outside
	 * the supported range); NULL-terminated, NULL when there are none. */
	char **warnings;
} oci_config;

/* Parse a config.json file. `*err` receives a malloc'd message naming the
 * file and JSON path on failure. Returns 0 or a negative errno (-ENOENT when
 * the file is missing, -EINVAL for bad content). Runs oci_config_validate. */
int oci_config_parse_file(const char *path, oci_config **out, char **err);

/* Same, from memory. `name` is used as the file name in messages. */
int oci_config_parse_data(const char *data, size_t len, const char *name, oci_config **out,
			  char **err);

/* Semantic checks beyond JSON types: process.args non-empty, process.cwd
 * absolute, root.path present, namespace types known and not repeated,
 * mount destinations present, hook paths absolute, known rlimit names,
 * uid/gid mappings only with a user namespace... */
int oci_config_validate(const oci_config *config, const char *name, char **err);

void oci_config_free(oci_config *config);

/* A process object on its own (`tern exec --process FILE`): a regular
 * file, a pipe or a FIFO. */
int oci_process_parse_file(const char *path, oci_process **out, char **err);
void oci_process_free(oci_process *process);

/* A linux.resources object on its own (`tern update --resources FILE`). */
int oci_resources_parse_data(const char *data, size_t len, const char *name, oci_resources **out,
			     char **err);
void oci_resources_free(oci_resources *resources);

/* Namespace type names as used in config.json ("pid", "network", ...). */
const char *oci_namespace_type_name(oci_namespace_type type);
int oci_namespace_type_from_name(const char *name); /* -1 when unknown */

/* linux.memoryPolicy names as config.json spells them ("MPOL_BIND",
 * "MPOL_F_STATIC_NODES"); NULL when out of range. */
const char *oci_mpol_mode_name(oci_mpol_mode mode);
const char *oci_mpol_flag_name(oci_mpol_flag flag);

/* A list of CPU or NUMA node numbers as the kernel writes them: numbers
 * and low-high ranges separated by commas ("0-3,7"); "" is the empty list.
 * Fills a malloc'd array of ranges (NULL when empty). Returns 0, or -EINVAL
 * with *why saying what is wrong (a static string). Numbers above
 * OCI_ID_LIST_MAX are refused: no kernel has that many CPUs or nodes. */
#define OCI_ID_LIST_MAX 65535

/* The largest uid or gid a config, an id mapping or `exec -u` may name:
 * runc's range (Go's int32 ids). Above it, 4294967295 is (uid_t)-1, which
 * setresuid(2) and setresgid(2) read as "leave unchanged" (a process meant
 * to be unprivileged would keep root), and chown(2) likewise. */
#define OCI_ID_MAX 2147483647U
typedef struct {
	uint32_t first;
	uint32_t last;
} oci_id_range;
int oci_id_list_parse(const char *s, oci_id_range **ranges, size_t *n, const char **why);

/* Helper for NULL-terminated string lists. */
size_t oci_strv_len(char *const *strv);

/* The default config.json written by `tern spec`, as runc writes it.
 * Returns a malloc'd, NUL-terminated JSON text. */
char *oci_default_spec_json(bool rootless);
