/* Whether a snapshot fits in its store, asked before the freeze: a
 * snapshot that runs out of space fails only after the container was
 * frozen for the copy of its rootfs and the dump of its memory, and for
 * nothing. Used by snapshot-take; uses no other snapshot file. */
#pragma once

#include "error.h"
#include "oci-state.h"

#include <stdint.h>

typedef struct {
	uint64_t memory; /* what criu writes, about: anonymous and shared memory */
	uint64_t rootfs; /* the rootfs files the record copies, about */
	uint64_t need;	 /* both, and a margin for the rest */
	uint64_t free;	 /* free to this user on the store's file system */
} tern_snap_space;

/* Estimate what a snapshot of the container `st` needs in the store
 * `store` (prevfd: the snapshot its files are linked from, or -1: only
 * files changed since it are copied) and refuse, ENOSPC, naming the
 * needed and the free bytes and the store, when it clearly does not fit.
 * `space` gets the figures either way. */
int tern_snap_space_check(const oci_state *st, const char *store, int prevfd,
			  tern_snap_space *space, tern_error **err);
