/* Checkpoint and restore with CRIU, through libcriu.
 *
 * libcriu speaks CRIU's RPC protocol to a criu binary it starts itself
 * (swrk mode), so tern links the system's libcriu yet drives whichever criu
 * works on this kernel: `--criu PATH`, then $TERN_CRIU, then the private
 * install of scripts/install-criu.sh, then `criu` in PATH.
 *
 * A checkpoint directory holds CRIU's images plus two files of tern's own,
 * so that it can be restored under another --root, id and bundle path:
 *   tern-config.json      the config.json the container was created with
 *   tern-checkpoint.txt   "key value" lines: the id, the external mounts
 *                         (key = mount destination), the masked directories
 *                         whose empty tmpfs criu left out (checkpoint-
 *                         masked.h), whether the netns was
 *                         joined from a path, whether there was a terminal,
 *                         the veths whose peer was outside the container
 *                         (see checkpoint-net.h).
 *
 * External mounts: bind mounts from the bundle (and cgroup binds) are not
 * dumped; their destination is their key, and restore maps each key to the
 * source named by the *new* config.
 */
#pragma once

#include "container.h"

#include <stdbool.h>
#include <stdint.h>

#define TERN_CRIU_PRIVATE    "/opt/tern-criu/bin/criu"
#define TERN_CKPT_CONFIG     "tern-config.json"
#define TERN_CKPT_DESCRIPTOR "tern-checkpoint.txt"

typedef struct {
	const char *image_path;	 /* default ./checkpoint */
	const char *work_path;	 /* logs; default: the image path */
	const char *parent_path; /* previous (pre-)dump, relative to image_path */
	const char *manage_cgroups_mode;
	const char *page_server; /* IP:PORT */
	const char *lsm_profile;
	const char *lsm_mount_context;
	char **empty_ns;
	/* criu --tls for the page server connection (tern migrate): the
	 * peer must present a certificate signed by tls_cacert */
	const char *tls_cacert;
	const char *tls_cert;
	const char *tls_key;
	int status_fd; /* -1 */
	bool leave_running;
	/* with leave_running: freeze the container's cgroup before criu
	 * releases the tasks, so that they stay as dumped (tern migrate on
	 * cgroup v2, where criu cannot dump a cgroup frozen beforehand) */
	bool leave_frozen;
	/* with leave_running, of a container with a network namespace of
	 * its own: drop its every packet from the end of the dump on, so
	 * that the connections it had, restored elsewhere, are neither
	 * answered nor closed from here (tern migrate --tcp-established;
	 * see checkpoint-net.h) */
	bool keep_net_locked;
	bool tcp_established;
	bool tcp_close;
	bool ext_unix_sk;
	bool shell_job;
	bool file_locks;
	bool pre_dump;
	/* dump: have criu reset the soft-dirty bits, so that the next dump
	 * with this one as its parent writes only the pages changed since
	 * (tern snapshot; implied by pre_dump and parent_path) */
	bool track_mem;
	bool auto_dedup;
	bool lazy_pages;
	bool link_remap;
	/* dump: leave the container's own network namespace out of the images
	 * where nothing in it can differ from a new one (only `lo`, no process
	 * may change it: no CAP_NET_ADMIN in any bounding set, no user
	 * namespace, no TCP connection to keep); restore then makes a new
	 * one. Saves criu's network lock and its ip/iptables runs on both
	 * sides (tern migrate's downtime). */
	bool netns_fresh_if_plain;
	/* the caller has checked criu's version and the features it asks for
	 * (tern migrate, before the freeze): no version request or feature
	 * probe here, each of which starts criu once more (its kernel probes
	 * take tens of ms, inside the downtime) */
	bool criu_checked;
	/* dump: a criu the caller started for it (criu-swrk.h), or NULL (a dump
	 * that is neither lazy nor a pre-dump starts its own first thing) */
	struct tern_criu_swrk_s *swrk;
	/* a dump (not lazy) or a restore that takes longer is killed; 0: TERN_CRIU_TIMEOUT
	 * or its default (criu-deadline.h) */
	int criu_timeout_ms;
	/* restore with lazy_pages: the `criu lazy-pages` daemon is still
	 * starting; it writes a byte to lazy_ready_fd (its --status-fd) once
	 * it listens. The restore makes its preparations (state, cgroups,
	 * mount points) meanwhile and waits for that byte only before it
	 * starts criu, which connects to the daemon early. */
	bool lazy_ready_wait;
	int lazy_ready_fd;
	/* restore: the restored processes' memory is marked for the kernel's
	 * samepage merging (memory-merge.h; tern clone --share-memory) */
	bool merge_memory;
	/* dump (tern snapshot): the container's own network namespace stays
	 * out of the images whatever it holds; a rollback restores into the
	 * live one again, a clone gets a new one */
	bool netns_out;
	/* restore (tern rollback): into the container's own state directory,
	 * locked by the caller, under the id it has: not made, nor removed on
	 * a failure (the caller writes the state then) */
	tern_container_dir *into_dir;
	/* restore of a new container (tern clone): the state directory whose
	 * last-failure/ keeps criu's logs when it fails (failure-logs.h); a
	 * dump and a restore into_dir keep them in the container's own */
	const char *failure_logs_in;
	/* restore: no failure_logs_in, and the work directory is removed
	 * after a failure (migrate-receive without --debug): the error says
	 * that criu's log is not kept rather than name a file soon gone */
	bool work_goes;
	const char *config_path; /* the config to restore with (default: the bundle's) */
	const char *created;	 /* the state's "created" (default: now) */
	/* with join_netns: restore into this network namespace, whatever the
	 * config says */
	bool join_netns;
	int netns_fd;
	/* restore: "INNER NAME" pairs: the veth whose inner end the images
	 * call INNER is not made anew (with its outer end named by the
	 * descriptor) but is the device NAME in the restoring tern's network
	 * namespace, which criu moves in as INNER (--external
	 * netdev[INNER]:NAME; tern rollback of a container with a user
	 * namespace of its own, snapshot-rollback.c) */
	char **netdevs_in;
	/* with stdio_given: the restored init's stdio that was outside the
	 * container comes from these fds (default: the restoring tern's 0-2) */
	bool stdio_given;
	int stdio_fds[3];
	/* restore: freeze the container's cgroup when criu has the tree
	 * ready, before it lets the tasks go, so that not one instruction of
	 * them runs until a thaw (a warm spare, snapshot-warm.c); a freeze
	 * that fails fails the restore */
	bool freeze_at_resume;
} tern_ckpt_opts;

/* Check the options checkpoint and restore share (cmd-criu-opts.h:
 * --manage-cgroups-mode, --empty-ns, ...) and set them on libcriu's `opts`;
 * errors name the option. Asks criu itself only for --lazy-pages without
 * o->criu_checked. */
struct criu_opts;
int tern_ckpt_apply_common(struct criu_opts *opts, const tern_ckpt_opts *o, tern_error **err);

/* The criu to use (malloc'd path), or a clear error naming every place
 * looked at. `flag` is --criu (may be NULL). */
int tern_criu_find(const char *flag, char **path, tern_error **err);

/* What this kernel and criu can do for a migration: restore memory
 * lazily (userfaultfd) and track dirty pages (soft-dirty, for pre-copy). */
typedef struct {
	bool lazy_pages;
	bool mem_track;
	/* criu answered: its version is one tern can use, so a dump or
	 * restore may skip asking again (tern_ckpt_opts.criu_checked) */
	bool works;
} tern_criu_features;

int tern_criu_features_check(const char *criu, tern_criu_features *f, tern_error **err);
/* The same, asked once per boot and criu binary and cached under `root`
 * (a check starts criu twice, ~20 ms each); `works` is false when criu did
 * not answer (nothing is cached then). */
tern_criu_features tern_criu_features_cached(const char *root, const char *criu);
/* o->criu_checked where the cache says criu works and can do what `o`
 * asks (lazy pages, dirty tracking): criu is not asked again. */
void tern_ckpt_skip_known_checks(const char *root, const char *criu, tern_ckpt_opts *o);

/* Whether criu can serve memory lazily here: its page server needs 4 MiB
 * pipes (fs.pipe-max-size, unless CAP_SYS_RESOURCE). */
int tern_criu_lazy_pipes_check(tern_error **err);

/* tern_container_restore of `images` (co->work_path becomes `work`), the
 * memory filled through `criu lazy-pages` where the kernel can, which is
 * much faster than criu's own reading (restore-filled.c); returns once
 * every page is in, or with `fill_behind` as soon as the container runs,
 * the rest filled by a background filler (criu-lazy-filler.h). A fill that
 * fails after the restore calls kill_it(data) (the container runs with
 * memory missing). *criu_ns: the restore; *fill_ns: the wait for the fill
 * after it (left alone when filled behind or not lazily). */
int tern_restore_filled(const tern_runtime *rt, const char *criu, const char *id,
			const tern_create_opts *copts, tern_ckpt_opts *co, const char *images,
			const char *work, void (*kill_it)(void *), void *data, bool fill_behind,
			int *exit_status, uint64_t *criu_ns, uint64_t *fill_ns, tern_error **err);

/* The live init's (`pid`, `pidfd`) stdio for a restore of the checkpoint
 * at `images` in its place (rollback, warm spare): per fd 0-2, the fd that
 * holds what the checkpoint recorded there, which is fd N itself unless
 * the process has it elsewhere just now (a shell's redirection); else fd N
 * as it is. -1 where there is none. */
void tern_ckpt_take_stdio(const char *images, int pidfd, pid_t pid, int fds[3]);

/* The init's stdio that was outside the container in the checkpoint at
 * `images`, per fd: kinds 0 (none), 'p' (a pipe) or 'f' (a file, whose
 * st_mode is in modes, 0 if the checkpoint is older than that record). */
void tern_ckpt_outside_stdio(const char *images, char kinds[3], unsigned modes[3]);
/* How the processes of the checkpoint in `images` get a userfaultfd once
 * restored (lazy pages): by the syscall, outside a user namespace of their
 * own or with vm.unprivileged_userfaultfd 1; else through /dev/userfaultfd
 * with tern-uffd-preload.so in criu (criu-uffd.h), which every restore with
 * lazy_pages then uses; else not at all. */
typedef enum { TERN_UFFD_NONE, TERN_UFFD_DIRECT, TERN_UFFD_DEVICE } tern_uffd_way;
tern_uffd_way tern_ckpt_uffd_way(const char *images);
/* tern_ckpt_uffd_way() is not TERN_UFFD_NONE */
bool tern_ckpt_uffd_usable(const char *images);
/* The checkpoint's config gives it a user namespace of its own. */
bool tern_ckpt_own_userns(const char *images);
/* Whether the checkpoint in `images` left the container's network
 * namespace out (tern_ckpt_opts.netns_fresh_if_plain): restore makes a new
 * one. */
bool tern_ckpt_netns_left_out(const char *images);

int tern_container_checkpoint(const tern_runtime *rt, const char *criu, const char *id,
			      const tern_ckpt_opts *o, tern_error **err);

/* Restore into a new container `id` from the bundle in copts->bundle.
 * Without --detach, wait for it as `run` does: *exit_status. */
int tern_container_restore(const tern_runtime *rt, const char *criu, const char *id,
			   const tern_create_opts *copts, const tern_ckpt_opts *o, int *exit_status,
			   tern_error **err);
