/* The command line: global options, the command table, and the small
 * parsing helpers every cmd-*.c uses. Long options are accepted with one
 * dash as well as two (runc accepts both; containerd passes
 * `-no-subreaper`), through getopt_long_only. */
#pragma once

#include "container.h"

#include <getopt.h>
#include <stdbool.h>

typedef struct {
	tern_runtime rt;
	const char *log;
	const char *log_format;
	bool debug;
	const char *criu;
} tern_global_opts;

typedef int (*tern_command_fn)(tern_global_opts *g, int argc, char **argv);

typedef struct {
	const char *name;
	tern_command_fn run;
	const char *summary;
} tern_command;

extern const tern_command tern_commands[];

const tern_command *tern_command_find(const char *name);

/* Option parsing for a command. `usage` is printed for --help (exit 0)
 * and after a bad option (exit 1, as runc's CLI library does). Returns the
 * getopt value, -1 at the end; calls exit() itself for help and errors.
 * Options may follow the container id (`tern update ID --pids-limit 30`):
 * runc's CLI library reorders them to the front, and glibc's getopt
 * permutes the same way unless `shortopts` starts with '+'. Only commands
 * whose words after the id belong to another program (exec's command,
 * ps's ps(1) options, as runc passes them untouched) start with '+'; `--`
 * ends the options everywhere. */
int tern_cli_next(int argc, char **argv, const char *shortopts, const struct option *longopts,
		  const char *usage);

/* The global options, shared by tern and tern-migrate: fills `g` and
 * returns the index of the command word (argc when there is none), or -1
 * after printing what is wrong (the caller prints the usage). --version
 * and --help stop the parsing: *action is then 'v' or 'h'. */
int tern_cli_parse_globals(int argc, char **argv, tern_global_opts *g, int *action);

/* Reset getopt before parsing a command's options. */
void tern_cli_reset(void);

/* Exactly `n` positional arguments left (or at least `n` when !exact);
 * otherwise print the usage error and exit 1. */
void tern_cli_require_args(int argc, char **argv, int n, bool exact, const char *cmd,
			   const char *usage);

/* Parse a non-negative int option value; exits with a message on error. */
int tern_cli_parse_int(const char *opt, const char *value);

/* runc-style boolean flag values: "--detach=false" */
bool tern_cli_bool_value(const char *value);
/* `tern update`'s sizes: "512m", "1g", "100", "-1" (no limit): bytes, with
 * binary suffixes (b, k, m, g, t, optionally followed by b) as runc takes
 * them. The error names --OPT. */
int tern_update_parse_bytes(const char *opt, const char *s, int64_t *out, tern_error **err);

int tern_cmd_spec(tern_global_opts *g, int argc, char **argv);
int tern_cmd_create(tern_global_opts *g, int argc, char **argv);
int tern_cmd_start(tern_global_opts *g, int argc, char **argv);
int tern_cmd_run(tern_global_opts *g, int argc, char **argv);
int tern_cmd_state(tern_global_opts *g, int argc, char **argv);
int tern_cmd_list(tern_global_opts *g, int argc, char **argv);
int tern_cmd_kill(tern_global_opts *g, int argc, char **argv);
int tern_cmd_delete(tern_global_opts *g, int argc, char **argv);
int tern_cmd_exec(tern_global_opts *g, int argc, char **argv);
int tern_cmd_pause(tern_global_opts *g, int argc, char **argv);
int tern_cmd_resume(tern_global_opts *g, int argc, char **argv);
int tern_cmd_ps(tern_global_opts *g, int argc, char **argv);
int tern_cmd_update(tern_global_opts *g, int argc, char **argv);
int tern_cmd_events(tern_global_opts *g, int argc, char **argv);
int tern_cmd_features(tern_global_opts *g, int argc, char **argv);
int tern_cmd_checkpoint(tern_global_opts *g, int argc, char **argv);
int tern_cmd_restore(tern_global_opts *g, int argc, char **argv);
int tern_cmd_snapshot(tern_global_opts *g, int argc, char **argv);
int tern_cmd_rollback(tern_global_opts *g, int argc, char **argv);
int tern_cmd_clone(tern_global_opts *g, int argc, char **argv);
