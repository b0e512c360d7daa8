/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The config.json `tern spec` writes: the same layout and content as
 * `runc spec` (and `runc spec --rootless`), so tools and people used to one
 * find the other familiar; only the hostname ("tern") and ociVersion differ.
 * Built with yajl_gen, tab-indented like runc's file, no final newline. */
#include "oci-config.h"
#include "oci-json.h"

#include <stdlib.h>
#include <unistd.h>

/* The capabilities a default container keeps: enough for a shell, nothing
 * that reaches outside the container. */
static const char *const default_caps[] = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE",
					   NULL};

static const char *const masked_paths[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/proc/scsi",
    NULL,
};

static const char *const readonly_paths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

static void gen_process(yajl_gen g)
{
	static const char *const args[] = {"sh", NULL};
	static const char *const env[] = {
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm",
	    NULL};

	ojson_gen_key(g, "process");
	yajl_gen_map_open(g);
	ojson_gen_kv_bool(g, "terminal", true);
	ojson_gen_key(g, "user");
	yajl_gen_map_open(g);
	ojson_gen_kv_int(g, "uid", 0);
	ojson_gen_kv_int(g, "gid", 0);
	yajl_gen_map_close(g);
	ojson_gen_strv(g, "args", args);
	ojson_gen_strv(g, "env", env);
	ojson_gen_kv_string(g, "cwd", "/");
	ojson_gen_key(g, "capabilities");
	yajl_gen_map_open(g);
	/* No inheritable set: it would hand these to non-root execs too. */
	ojson_gen_strv(g, "bounding", default_caps);
	ojson_gen_strv(g, "effective", default_caps);
	ojson_gen_strv(g, "permitted", default_caps);
	ojson_gen_strv(g, "ambient", default_caps);
	yajl_gen_map_close(g);
	ojson_gen_key(g, "rlimits");
	yajl_gen_array_open(g);
	yajl_gen_map_open(g);
	ojson_gen_kv_string(g, "type", "RLIMIT_NOFILE");
	ojson_gen_kv_int(g, "hard", 1024);
	ojson_gen_kv_int(g, "soft", 1024);
	yajl_gen_map_close(g);
	yajl_gen_array_close(g);
	ojson_gen_kv_bool(g, "noNewPrivileges", true);
	yajl_gen_map_close(g);
}

static void gen_mount(yajl_gen g, const char *destination, const char *type, const char *source,
		      const char *const *options)
{
	yajl_gen_map_open(g);
	ojson_gen_kv_string(g, "destination", destination);
	ojson_gen_kv_string(g, "type", type);
	ojson_gen_kv_string(g, "source", source);
	if (options)
		ojson_gen_strv(g, "options", options);
	yajl_gen_map_close(g);
}

static void gen_mounts(yajl_gen g, bool rootless)
{
	static const char *const dev[] = {"nosuid", "strictatime", "mode=755", "size=65536k", NULL};
	/* gid=5 is the tty group; without a mapping for it in a rootless
	 * user namespace the devpts mount would fail. */
	static const char *const devpts[] = {"nosuid",	  "noexec", "newinstance", "ptmxmode=0666",
					     "mode=0620", "gid=5",  NULL};
	static const char *const devpts_rootless[] = {"nosuid",	       "noexec",    "newinstance",
						      "ptmxmode=0666", "mode=0620", NULL};
	static const char *const shm[] = {"nosuid",    "noexec",      "nodev",
					  "mode=1777", "size=65536k", NULL};
	static const char *const mqueue[] = {"nosuid", "noexec", "nodev", NULL};
	static const char *const sys[] = {"nosuid", "noexec", "nodev", "ro", NULL};
	/* An unprivileged user namespace cannot mount a fresh sysfs without
	 * its own network namespace: bind the host's instead. */
	static const char *const sys_rootless[] = {"rbind", "nosuid", "noexec",
						   "nodev", "ro",     NULL};
	static const char *const cgroup[] = {"nosuid", "noexec", "nodev", "relatime", "ro", NULL};

	ojson_gen_key(g, "mounts");
	yajl_gen_array_open(g);
	gen_mount(g, "/proc", "proc", "proc", NULL);
	gen_mount(g, "/dev", "tmpfs", "tmpfs", dev);
	gen_mount(g, "/dev/pts", "devpts", "devpts", rootless ? devpts_rootless : devpts);
	gen_mount(g, "/dev/shm", "tmpfs", "shm", shm);
	gen_mount(g, "/dev/mqueue", "mqueue", "mqueue", mqueue);
	if (rootless)
		gen_mount(g, "/sys", "none", "/sys", sys_rootless);
	else
		gen_mount(g, "/sys", "sysfs", "sysfs", sys);
	gen_mount(g, "/sys/fs/cgroup", "cgroup", "cgroup", cgroup);
	yajl_gen_array_close(g);
}

static void gen_id_mapping(yajl_gen g, const char *key, unsigned host_id)
{
	ojson_gen_key(g, key);
	yajl_gen_array_open(g);
	yajl_gen_map_open(g);
	ojson_gen_kv_int(g, "containerID", 0);
	ojson_gen_kv_int(g, "hostID", host_id);
	ojson_gen_kv_int(g, "size", 1);
	yajl_gen_map_close(g);
	yajl_gen_array_close(g);
}

static void gen_linux(yajl_gen g, bool rootless)
{
	/* Rootless: no new network namespace (nobody could configure it) and
	 * a user namespace, listed last, that maps root to the caller. */
	static const char *const ns[] = {"pid", "network", "ipc", "uts", "mount", NULL};
	static const char *const ns_rootless[] = {"pid", "ipc", "uts", "mount", "user", NULL};
	const char *const *names = rootless ? ns_rootless : ns;

	ojson_gen_key(g, "linux");
	yajl_gen_map_open(g);
	if (rootless) {
		gen_id_mapping(g, "uidMappings", geteuid());
		gen_id_mapping(g, "gidMappings", getegid());
	} else {
		/* Deny every device in the cgroup; the default devices are
		 * allowed on top by the runtime. A rootless container cannot
		 * manage a cgroup, so it gets no resources at all. */
		ojson_gen_key(g, "resources");
		yajl_gen_map_open(g);
		ojson_gen_key(g, "devices");
		yajl_gen_array_open(g);
		yajl_gen_map_open(g);
		ojson_gen_kv_bool(g, "allow", false);
		ojson_gen_kv_string(g, "access", "rwm");
		yajl_gen_map_close(g);
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	ojson_gen_key(g, "namespaces");
	yajl_gen_array_open(g);
	for (size_t i = 0; names[i]; i++) {
		yajl_gen_map_open(g);
		ojson_gen_kv_string(g, "type", names[i]);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	ojson_gen_strv(g, "maskedPaths", masked_paths);
	ojson_gen_strv(g, "readonlyPaths", readonly_paths);
	yajl_gen_map_close(g);
}

char *oci_default_spec_json(bool rootless)
{
	yajl_gen g = ojson_gen_new("\t");
	char *out = NULL;

	yajl_gen_map_open(g);
	ojson_gen_kv_string(g, "ociVersion", "1.3.0"); /* TERN_OCI_VERSION */
	gen_process(g);
	ojson_gen_key(g, "root");
	yajl_gen_map_open(g);
	ojson_gen_kv_string(g, "path", "rootfs");
	ojson_gen_kv_bool(g, "readonly", true);
	yajl_gen_map_close(g);
	ojson_gen_kv_string(g, "hostname", "tern");
	gen_mounts(g, rootless);
	gen_linux(g, rootless);
	yajl_gen_map_close(g);
	if (ojson_gen_finish(g, &out, NULL) < 0)
		return NULL;
	return out;
}
