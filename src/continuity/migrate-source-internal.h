/* What the files of tern migrate's source side share: the state of one
 * migration (source) and the stages one file lends another.
 * migrate-source.c runs the stages in order and owns the commit point
 * (freeze, RUNNING, finish, roll back, the watchdog);
 * migrate-source-prepare.c the checks before anything changes and the
 * conversation up to the rootfs rounds; migrate-source-dump.c criu's
 * dumps, pre-copy's memory rounds and the frozen dump's pages streamed
 * while criu writes them. */
#pragma once

#include "dump-progress.h"
#include "migrate.h"
#include "rootfs-sync.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
	const tern_mig_env *env;
	const tern_migrate_opts *o;
	tern_mig_progress p;
	char *criu;
	tern_mchan *c;
	int lock_fd;
	char *config_json;
	char *rootfs;
	pid_t pid; /* the container's init */
	uint64_t memory_bytes;
	tern_mig_mode mode;
	/* --mode auto: why this side cannot serve post-copy, said when the
	 * target then chose stop-and-copy ("" when it can) */
	char no_post_copy[512];
	char *target_id;
	char *target_cert;
	/* root/id/migrate-XXXXXX: images/, work/, tls/ */
	char *work;
	char *images;
	char *crit_work;
	char *tls_dir;
	char *page_ip;
	int page_port;
	pid_t dump_pid;
	bool criu_killed; /* a dump past --criu-timeout was killed */
	int dump_errfd;
	int status_fd; /* read end: a byte once a lazy dump's images are written */
	bool frozen;
	bool freezer_v1; /* frozen before the dump; else by criu (see dump_frozen) */
	bool committed;
	pid_t watch_pid;
	int watch_fd; /* write end: see start_watchdog */
	uint64_t t_freeze, t_running;
	uint64_t downtime_ns; /* from the freeze until it ran on the target */
	uint64_t image_bytes, rootfs_bytes;
	uint64_t sent_during_dump; /* of the frozen dump's images (see page_stream) */
	/* pre-copy: when the last memory round's pre-dump started (criu
	 * resets the dirty bits there), for the dirty rate of the next */
	uint64_t t_dump, t_last_round;
	int last_round;
	/* the frozen dump (stop-and-copy, pre-copy): its progress while
	 * criu writes it (dump-progress.h), and how long it took */
	bool dump_progress;
	tern_dump_progress dprog;
	uint64_t dump_ns;
	/* post-copy: the pages the dump left for the target to fetch */
	bool lazy_known;
	uint64_t lazy_pages;
	struct source_snaps *snaps; /* migrate-snapshots.c; NULL: none */
} source;

/* criu writes each page image (pages-N.img) front to back, and a reader
 * sees no byte beyond the file's size before it is written. So what is
 * there is sent while criu writes the rest: the copy overlaps the dump
 * instead of following it, which matters most when the memory is large.
 * A part is IMAGE_FILE {name, size, part: true} and its IMAGE_DATA, which
 * the target appends; the last part goes once criu has exited, then the
 * other images. */
#define STREAM_FILES_MAX TERN_MIG_PARTS_MAX /* more go whole, after */
#define STREAM_PART_MIN	 (4u << 20)	    /* smaller parts wait (but the last) */

typedef struct {
	char *names[STREAM_FILES_MAX + 1]; /* NULL-terminated: the skip list */
	int fds[STREAM_FILES_MAX];
	uint64_t sent[STREAM_FILES_MAX];
	size_t n;
} page_stream;

/* ---- migrate-source-prepare.c: checks, OFFER/ACCEPT, rootfs rounds ---- */

/* The migration lock in the container's state directory: one migration
 * of a container at a time. */
int source_take_lock(source *s, tern_error **err);
/* criu refuses established connections without --tcp-established, but
 * only once the container is frozen and half dumped: look first. */
int source_check_tcp(source *s, tern_error **err);
/* The init's stdio must be something the target can stand in for. */
int source_check_stdio(source *s, tern_error **err);
/* The container's state, config, rootfs and memory estimate. */
int source_load(source *s, tern_error **err);
/* Which modes can work here; the target decides with its own half. */
int source_choose_features(source *s, bool *post_copy, bool *pre_copy, tern_error **err);
/* OFFER, then the target's ACCEPT: its id, the mode, its certificate. */
int source_offer(source *s, bool post_copy, bool pre_copy, tern_error **err);
/* One rootfs-sync round, ended by ROOTFS_DONE. */
int source_rootfs_round(source *s, tern_rootfs_sender *rs, int round, tern_error **err);

/* ---- migrate-source-dump.c: criu's dumps and the images ---- */

/* Post-copy: the certificates of criu --tls and a port for its page
 * server. */
int source_prepare_tls(source *s, tern_error **err);
/* Start criu's dump (or pre-dump) into `images` in a child. */
int source_start_dump(source *s, const char *images, const char *parent, bool pre_dump,
		      tern_error **err);
/* Wait for the dump child and its criu within --criu-timeout. */
int source_wait_dump(source *s, tern_error **err);
/* Post-copy: wait until the images are written and criu's page server
 * listens, or the dump failed. */
int source_wait_lazy_ready(source *s, tern_error **err);
/* Connect to a lazy dump's page server and hang up at once. */
void source_hang_up_page_server(const char *ip, int port);
/* Make a lazy dump that is still waiting give up cleanly; if it does not
 * end, kill it. */
void source_abort_dump(source *s);
/* Post-copy: PAGE_SERVER, where the target's criu fetches the pages. */
int source_send_page_server(source *s, tern_error **err);
/* The event of a memory round (`round` > 0) or of the images sent frozen
 * (0). */
void source_memory_event(source *s, int round, uint64_t pages_bytes, uint64_t sent,
			 uint64_t since_ns);
/* Pre-copy's memory rounds while the container runs; *rounds: how many
 * were sent. */
int source_precopy_rounds(source *s, int *rounds, tern_error **err);
void source_page_stream_free(page_stream *ps);
/* Wait for the frozen dump, sending its pages meanwhile. */
int source_dump_streaming(source *s, page_stream *ps, uint64_t *bytes, tern_error **err);

/* ---- migrate-snapshots.c: the container's snapshots ---- */

/* Before anything changes: a container with snapshots is refused without
 * --with-snapshots or --drop-snapshots; with one, it is said. */
int source_snapshots_check(source *s, tern_error **err);
/* Once the migration lock is held, before OFFER: the store is locked
 * (until source_snapshots_finish) and read again. */
int source_snapshots_lock(source *s, tern_error **err);
/* How many snapshots go to the target (OFFER's "snapshots"). */
size_t source_snapshots_count(const source *s);
/* After ACCEPT (`target_takes`: it said "snapshots": true): the store, as
 * one rootfs-sync round. */
int source_snapshots_send(source *s, bool target_takes, tern_error **err);
/* After RUNNING, before the store is deleted: unlock it, say so. */
void source_snapshots_finish(source *s);
void source_snapshots_free(source *s);
