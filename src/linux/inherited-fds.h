/* The fds tern inherits from its caller and hands on to the container:
 * stdio and --preserve-fds (with socket activation's LISTEN_FDS after
 * them). Whatever sits in those slots becomes the container's, so a slot
 * the caller left empty must never be filled by one of tern's own fds (a
 * namespace, the sync socket, the state directory, the log). */
#pragma once

#include "error.h"

/* fds 0, 1 and 2 that the caller closed are opened on /dev/null, first
 * thing in main: otherwise the first fds tern opens would land there and
 * be handed to the container as its stdio. (Go does the same for runc at
 * start-up.) Best effort: a failure leaves the slot empty. */
void tern_stdio_fill_closed(void);

/* `flag` (e.g. "--preserve-fds") N hands fds 3..3+N-1 on as they are:
 * each must be open, and not tern's own (the --log file or the fault
 * trace opened in a hole). Call it before opening anything that stays
 * open: afterwards every fd tern opens lands above the range.
 * "--preserve-fds 3: fd 4 (of 3 to 5) was not passed to tern". */
int tern_inherited_fds_check(const char *flag, int n, tern_error **err);
