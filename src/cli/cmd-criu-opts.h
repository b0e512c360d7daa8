/* The CRIU options that `checkpoint` and `restore` share (runc spells them
 * the same for both): one option table and one parser, so the two
 * commands cannot drift apart. Command-specific option values start at
 * CKPT_OPT_NEXT. */
#pragma once

#include "checkpoint.h"

#include <getopt.h>
#include <stdbool.h>

enum {
	CKPT_OPT_IMAGE = 256,
	CKPT_OPT_WORK,
	CKPT_OPT_PARENT,
	CKPT_OPT_TCP,
	CKPT_OPT_EXTUNIX,
	CKPT_OPT_SHELL,
	CKPT_OPT_LOCKS,
	CKPT_OPT_CGMODE,
	CKPT_OPT_EMPTYNS,
	CKPT_OPT_DEDUP,
	CKPT_OPT_LAZY,
	CKPT_OPT_NEXT
};

#define CKPT_COMMON_LONGOPTS                                                                       \
	{"image-path", required_argument, NULL, CKPT_OPT_IMAGE},                                   \
	    {"work-path", required_argument, NULL, CKPT_OPT_WORK},                                 \
	    {"parent-path", required_argument, NULL, CKPT_OPT_PARENT},                             \
	    {"tcp-established", no_argument, NULL, CKPT_OPT_TCP},                                  \
	    {"ext-unix-sk", no_argument, NULL, CKPT_OPT_EXTUNIX},                                  \
	    {"shell-job", no_argument, NULL, CKPT_OPT_SHELL},                                      \
	    {"file-locks", no_argument, NULL, CKPT_OPT_LOCKS},                                     \
	    {"manage-cgroups-mode", required_argument, NULL, CKPT_OPT_CGMODE},                     \
	    {"empty-ns", required_argument, NULL, CKPT_OPT_EMPTYNS},                               \
	    {"auto-dedup", no_argument, NULL, CKPT_OPT_DEDUP},                                     \
	{                                                                                          \
		"lazy-pages", no_argument, NULL, CKPT_OPT_LAZY                                     \
	}

/* Apply option `c` (with `arg`) to `o` if it is one of the shared ones. */
bool tern_ckpt_common_opt(int c, char *arg, tern_ckpt_opts *o);
