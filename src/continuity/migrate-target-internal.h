/* What the files of tern migrate-receive's target side share: the state
 * of one migration (target), the names in its work directory, and the
 * stages one file lends another. migrate-target.c runs them in order and
 * owns the work directory, the watchdog, the commit point and the roll
 * back; migrate-target-offer.c checks the OFFER and answers ACCEPT;
 * migrate-target-restore.c receives the rootfs rounds and the images and
 * restores from them (post-copy's lazy-pages, the fill from the images). */
#pragma once

#include "criu-lazy-daemon.h"
#include "migrate.h"

#include <stdbool.h>
#include <stdint.h>

#define WORK_PREFIX ".tern-migrate-"
#define WORK_LOCK   "lock"
/* in the work directory: the undo log of the rootfs rounds, the rootfs it
 * applies to, and a mark saying that config.json is the receiver's */
#define WORK_UNDO	  "undo"
#define WORK_ROOTFS	  "rootfs"
#define WORK_WROTE_CONFIG "wrote-config"
/* the state directory of the container it restores */
#define WORK_CONTAINER "container"
/* the snapshot store it received (--with-snapshots): undone with the rest */
#define WORK_SNAPSHOTS "snapshots"

typedef struct {
	const tern_mig_env *env;
	const tern_receive_opts *o;
	tern_mig_progress p;
	char *criu;
	tern_mchan *c;
	char *bundle;
	char *rootfs;
	char *id;
	char *src_id;
	bool wrote_config;
	char *work;
	int work_lock;
	char *images;
	tern_mig_mode mode;
	/* --mode auto that got stop-and-copy: why not post-copy (static text),
	 * else NULL */
	const char *not_post_copy;
	bool tcp_established;
	tern_criu_features features; /* checked before listening */
	uint64_t memory_bytes;
	char *cert; /* ours (post-copy) */
	/* post-copy: fed by the source's page server; the other modes,
	 * where this kernel has userfaultfd: fed by the images received */
	tern_lazy_daemon lazy;
	bool fill_from_images;
	bool restored;
	uint64_t t_restored; /* when the restore returned: the container runs */
	pid_t receiver_pid;
	bool keep_work; /* its undo failed: the next receiver tries again */
	pid_t watch_pid;
	int watch_fd; /* write end: see watchdog() in migrate-target.c */
	int pre_rounds;
	uint64_t image_bytes;
	/* post-copy: the pages the dump left for us to fetch */
	bool lazy_known;
	uint64_t lazy_pages;
	char *page_ip; /* post-copy: the source's page server */
	int page_port;
	uint64_t snapshots; /* OFFER: how many snapshots come */
	char *snap_store;   /* ROOT/@snapshots/ID while it is the migration's */
} target;

/* ---- migrate-target-offer.c ---- */

/* Read the OFFER and check everything in it: the config, the mode, the
 * id, the space for the images. */
int target_handle_offer(target *t, tern_error **err);
/* ACCEPT: the id it restores as, the mode and (post-copy) our
 * certificate for criu --tls. */
int target_accept_offer(target *t, tern_error **err);

/* ---- migrate-target-restore.c ---- */

/* MANIFEST, then the two rootfs rounds (pre-copy's memory rounds in
 * between), applied with an undo log in the work directory. */
int target_rootfs_rounds(target *t, tern_error **err);
/* The images of the frozen dump (within the free space), checked
 * complete. */
int target_receive_images(target *t, tern_error **err);
/* Post-copy: criu lazy-pages, fed by the source's page server. */
int target_start_lazy_daemon(target *t, tern_error **err);
/* The daemon ends once every page is here; non-zero when it failed.
 * Meanwhile: what its connection to the page server has received. */
int target_wait_lazy_daemon(target *t, tern_mig_fetch *f, tern_error **err);
/* The other modes: lazy-pages filling the memory from the images. */
int target_start_fill_from_images(target *t, tern_error **err);
int target_wait_fill_from_images(target *t, tern_error **err);
/* criu restore of the container, detached. */
int target_restore(target *t, tern_error **err);

/* ---- migrate-snapshots.c ---- */

/* OFFER with snapshots: the store they go to must be free. */
int target_snapshots_check(target *t, tern_error **err);
/* After ACCEPT: the snapshot store, into ROOT/@snapshots/ID. */
int target_snapshots_receive(target *t, tern_error **err);
/* Remove the store a work directory names (roll back, watchdog, sweep). */
void target_snapshots_undo(const char *work);
/* The commit: the store is the container's. */
void target_snapshots_commit(target *t);
