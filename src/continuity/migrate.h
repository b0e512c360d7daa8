/* Live migration between nodes: `tern migrate` (the source) and `tern
 * migrate-receive` (the target), both run by tern-migrate.
 *
 * The session, over one control connection (migrate-channel.h):
 *
 *   source                                target
 *   HELLO                  <---->         HELLO       (versions, in the channel)
 *   OFFER {id, mode, config, sizes} --->
 *                          <---           ACCEPT {id, mode, cert}  or ERROR
 *   --with-snapshots: <--- ROOTFS_MANIFEST; ROOTFS_DATA..., ROOTFS_DONE --->
 *                                         (the snapshot store, one round:
 *                                         migrate-snapshots.c)
 *                          <---           ROOTFS_MANIFEST
 *   ROOTFS_DATA..., ROOTFS_DONE  --->                 (round 1, container runs)
 *   -- freeze (cgroup freezer): downtime starts --
 *   ROOTFS_DATA..., ROOTFS_DONE  --->                 (last round, frozen)
 *   criu dump (leave running, so still frozen; post-copy: memory left behind)
 *   IMAGE_FILE, IMAGE_DATA... (each file), IMAGES_DONE --->
 *   post-copy: PAGE_SERVER {address, port, cert} --->  criu lazy-pages starts
 *                                         restored, detached: it runs here
 *                                         (the other modes, with userfaultfd:
 *                                         then its memory is filled from
 *                                         the images, migrate-target-restore.c)
 *                          <---           RUNNING {ran_for_ms}
 *   -- the target owns the container from here; the downtime ended when
 *      it ran there, ran_for_ms before --
 *   post-copy: criu's dump returns once every page was fetched
 *   delete the source container, DONE  --->
 *
 * Before RUNNING any failure thaws the source, which keeps running; the
 * target removes everything it made. After RUNNING the source never
 * thaws. */
#pragma once

#include "container.h"
#include "migrate-channel.h"
#include "progress-event.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

typedef enum {
	TERN_MIG_AUTO = 0,
	TERN_MIG_PRE_COPY,
	TERN_MIG_POST_COPY,
	TERN_MIG_STOP_AND_COPY,
} tern_mig_mode;

const char *tern_mig_mode_name(tern_mig_mode m);
int tern_mig_mode_parse(const char *s, tern_mig_mode *m);

/* Seconds each side waits for the next step of the other. */
#define TERN_MIG_STEP_TIMEOUT_MS    (120 * 1000)
#define TERN_MIG_CONNECT_TIMEOUT_MS (15 * 1000)

/* How long a criu run (dump, restore, lazy-pages) may take before tern
 * kills it and rolls back: a hung criu must not hang the migration, but a
 * dump of a large container is legitimately slow (criu writes about
 * 1 GiB/s here), so the default is generous. --criu-timeout, else
 * TERN_CRIU_TIMEOUT (seconds), else this. */
#define TERN_MIG_CRIU_TIMEOUT_S 300
/* The bound from TERN_CRIU_TIMEOUT (or the default), in ms; -EINVAL with
 * an error naming it when it is not a positive number of seconds. */
int tern_mig_criu_timeout_env(int *timeout_ms, tern_error **err);

typedef struct {
	const char *to; /* IP:PORT */
	const char *token_file;
	tern_mig_mode mode;
	bool tcp_established;
	int max_rounds;
	bool json;
	int criu_timeout_ms; /* each criu dump (see TERN_MIG_CRIU_TIMEOUT_S) */
	const char *id;
	/* the container's snapshots (migrate-snapshots.c): without either
	 * flag, a container that has some is refused */
	bool with_snapshots; /* --with-snapshots: sent, kept on the target */
	bool drop_snapshots; /* --drop-snapshots: deleted with the source */
} tern_migrate_opts;

typedef struct {
	const char *listen; /* IP:PORT */
	const char *bundle;
	const char *token_file;
	const char *new_id;
	bool json;
	int timeout_ms;		  /* waiting for the source to connect; -1: forever */
	int handshake_timeout_ms; /* each connection's handshake */
	int max_failed_peers;	  /* refused connections before giving up */
	int criu_timeout_ms;	  /* criu restore, lazy-pages */
} tern_receive_opts;

/* migrate-receive's defaults: a handshake takes a few round trips, and a
 * port scan or two must not end the wait */
#define TERN_MIG_HANDSHAKE_TIMEOUT_S 5
#define TERN_MIG_MAX_FAILED_PEERS    16

/* What a migration takes from tern-migrate's global options (the command
 * line is a layer above: it fills this in). */
typedef struct {
	const tern_runtime *rt; /* --root, --rootless, --systemd-cgroup */
	const char *criu;	/* --criu PATH, or NULL */
	bool debug;		/* --debug: keep the images and criu's logs */
} tern_mig_env;

int tern_migrate_source(const tern_mig_env *env, const tern_migrate_opts *o, tern_error **err);
int tern_migrate_target(const tern_mig_env *env, const tern_receive_opts *o, tern_error **err);

/* ---- progress: text on stderr, or one JSON object per line on stdout
 * (progress-event.h: tern_mig_progress, tern_jw, tern_mig_event) ---- */

/* ---- figures from criu and the kernel (migrate-progress.c) ---- */

/* The pages that criu's dump in `dir` left behind for the target to
 * fetch (post-copy): its pagemap images' lazy entries that are not in the
 * page images. The parser takes one pagemap image. */
int tern_mig_pagemap_lazy_parse(const void *buf, size_t len, uint64_t *pages);
int tern_mig_lazy_pages(const char *dir, uint64_t *pages, tern_error **err);

/* The size of the page images (pages-*.img) directly in `dir`. */
uint64_t tern_mig_pages_bytes(const char *dir);
uint64_t tern_mig_page_size(void);

/* The TCP payload bytes of criu's page-server connections at ip:port in
 * this network namespace: acknowledged by the peer on the server's side
 * (`server`), received on the client's. *seen: such a connection exists.
 * Criu's TLS records and page-server headers are included (a few bytes in
 * a thousand). */
int tern_mig_page_conn_bytes(const char *ip, int port, bool server, uint64_t *bytes, bool *seen,
			     tern_error **err);

/* Post-copy progress: each sample prints a "progress" event when the
 * connection's bytes moved (or every 5 s when they did not). */
#define TERN_MIG_PROGRESS_MS TERN_PROGRESS_MS
typedef struct {
	const char *ip;
	int port;
	bool server;
	uint64_t lazy_bytes; /* what the dump left behind, for the text */
	uint64_t bytes;	     /* the last figure seen */
	uint64_t t_last;
	bool sampled;
	/* when the counters last moved (or the wait began); only once they
	 * could be read (`counted`) does a silence mean anything */
	uint64_t bytes_moved;
	uint64_t t_moved;
	bool counted;
} tern_mig_fetch;

void tern_mig_fetch_init(tern_mig_fetch *f, const char *ip, int port, bool server,
			 uint64_t lazy_bytes);
void tern_mig_fetch_sample(tern_mig_fetch *f, tern_mig_progress *p);
/* How long the fetch has not moved a byte, in ms; -1 when its counters
 * could never be read (then nobody can tell a stall from a transfer). */
int64_t tern_mig_fetch_idle_ms(const tern_mig_fetch *f);
/* The end of post-copy: the "pages" event, `what` its text. The pages are
 * those the dump left behind (`known`: its pagemaps could be read); the
 * lazy dump ends only once the target's daemon has fetched them all (less
 * only what the container unmapped before they were fetched). */
void tern_mig_pages_event(tern_mig_progress *p, bool known, uint64_t lazy_pages,
			  const tern_mig_fetch *f, const char *what);
/* The "done" event's pages_fetched and bytes_fetched (null unless
 * post-copy). */
void tern_mig_fetched_fields(tern_jw *w, tern_mig_mode mode, bool known, uint64_t lazy_pages);

/* ---- reading the JSON of a message ---- */

/* Parse `text` (a message of `what`) into a yajl tree. */
int tern_mig_json_parse(const char *text, const char *what, yajl_val *out, tern_error **err);
const char *tern_mig_json_str(yajl_val v, const char *key);
bool tern_mig_json_u64(yajl_val v, const char *key, uint64_t *out);
bool tern_mig_json_bool(yajl_val v, const char *key);

/* ---- the images (migrate-images.c) ---- */

/* A name criu or tern gives an image file: [A-Za-z0-9_.-]+, at most 128
 * bytes, not "." or "..", and nothing else (never a path). */
bool tern_mig_image_name_ok(const char *name);

/* Send every regular file of `dir` (not `skip`, NULL-terminated list),
 * then IMAGES_DONE when `done`. *bytes: the file data sent. */
int tern_mig_images_send(tern_mchan *c, const char *dir, const char *const *skip, bool done,
			 uint64_t *bytes, tern_error **err);

/* Send the files of `dir` as the peer's image subdirectory `subdir`
 * ("pre-N": a pre-copy round), without IMAGES_DONE. */
int tern_mig_images_send_dir(tern_mchan *c, const char *dir, const char *subdir, uint64_t *bytes,
			     tern_error **err);

/* Receive image files into `dirfd` until IMAGES_DONE (pre-copy rounds
 * into pre-N subdirectories). *pre_rounds carries the rounds seen from
 * one batch to the next; with `final`, the directories are then linked to
 * each other as criu expects. Each name is
 * checked, no file may exist twice, and the sizes add up to at most
 * `space_left` bytes (what the file system holding it has free). Up to
 * TERN_MIG_PARTS_MAX files of the final dump may come in parts (the
 * source's page_stream), appended in order. */
#define TERN_MIG_PARTS_MAX 16
int tern_mig_images_recv(tern_mchan *c, int dirfd, const char *dir, uint64_t space_left,
			 uint64_t *bytes, int *pre_rounds, bool final, tern_error **err);

/* The free bytes of the file system holding `path`. */
int tern_mig_free_bytes(const char *path, uint64_t *free_bytes, tern_error **err);

/* If a send failed because the peer already gave up, its ERROR message
 * says why: replace *err with it when one arrives within a second. */
void tern_mig_peer_reason(tern_mchan *c, tern_error **err);

/* ---- work done in a child process ---- */

/* A watchdog: a child that outlives a killed tern migrate or receiver and
 * undoes what it left half done. fn(arg, fd) runs in the child with the
 * read end of a pipe and never returns; the parent keeps *pid and the write
 * end, *fd, through which it says what the watchdog need know. */
typedef void (*tern_mig_watchdog_fn)(void *arg, int fd);
int tern_mig_watchdog_start(tern_mig_watchdog_fn fn, void *arg, pid_t *pid, int *fd,
			    tern_error **err);
/* Send `what` (the byte that tells it nothing is left to undo), close the
 * pipe and reap it; nothing if it was never started. */
void tern_mig_watchdog_stop(pid_t *pid, int *fd, char what);
/* Tell the watchdog of a process group it must see gone ('P' and the
 * pgid) before it undoes anything; -1 (never started): nothing. */
void tern_mig_watchdog_group(int fd, pid_t pgid);
/* In the watchdog: read its pipe to the end. True if a 'C' or 'R' said
 * that nothing is left to undo; the groups it was told of in groups[]
 * (up to TERN_MIG_WATCH_GROUPS), their number in *ngroups. */
#define TERN_MIG_WATCH_GROUPS 8
bool tern_mig_watchdog_read(int fd, pid_t *groups, size_t *ngroups);
/* Wait until none of the groups has a process left, at most timeout_ms;
 * with `kill_first`, SIGKILL them first. */
void tern_mig_groups_gone(const pid_t *groups, size_t n, bool kill_first, int timeout_ms);

/* Run fn(arg, err) in a forked child (so that what it does to its own
 * process, such as restore's mount namespace, or how long it blocks, such
 * as a lazy dump, stays out of the session). *errfd receives the child's
 * error message; tern_mig_child_wait collects both. The child closes the
 * `n` fds of `close_in_child` first (the session's own). */
typedef int (*tern_mig_child_fn)(void *arg, tern_error **err);
int tern_mig_child_start(tern_mig_child_fn fn, void *arg, const int *close_in_child, size_t n,
			 pid_t *pid, int *errfd, tern_error **err);
/* Wait (at most timeout_ms, -1 forever) for the child: 0 when it
 * succeeded, its error otherwise; -ETIMEDOUT leaves it running. */
int tern_mig_child_wait(pid_t pid, int errfd, int timeout_ms, tern_error **err);
/* The same, but a child (the leader of a group, with its criu) still
 * running after left_ms is killed with its group and reaped: -ETIMEDOUT,
 * "WHAT did not finish within BOUND s: killed it" (bound_ms: the whole
 * bound, for the message). */
int tern_mig_child_wait_or_kill(pid_t pid, int errfd, int left_ms, int bound_ms, const char *what,
				tern_error **err);
