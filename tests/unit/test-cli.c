/* Command-line helpers: repeatable options, boolean values, the command
 * table lookup. */
#include "tap.h"

#include "cli.h"
#include "utils.h"

#include <stdlib.h>
#include <unistd.h>

/* cli.c looks commands up in the table main.c defines; a small one here. */
static int fake(tern_global_opts *g, int argc, char **argv)
{
	(void)g;
	(void)argc;
	(void)argv;
	return 7;
}
const tern_command tern_commands[] = {
    {"create", fake, "create"},
    {"run", fake, "run"},
    {NULL, NULL, NULL},
};

int main(void)
{
	char **v = NULL;
	v = tern_strv_add(v, "a");
	v = tern_strv_add(v, "b");
	is_str(v[0], "a", "first repeated option");
	is_str(v[1], "b", "second repeated option");
	ok(v[2] == NULL, "list stays NULL-terminated");
	free(v);

	ok(tern_cli_bool_value(NULL), "flag without value is true");
	ok(!tern_cli_bool_value("false"), "=false is false");
	ok(tern_cli_bool_value("true"), "=true is true");

	ok(tern_command_find("run") != NULL, "run is a command");
	ok(tern_command_find("create")->run(NULL, 0, NULL) == 7, "lookup gives the function");
	ok(tern_command_find("frobnicate") == NULL, "unknown command");
	is_int(tern_cli_parse_int("preserve-fds", "3"), 3, "int option");

	/* single-dash long options, as containerd passes them */
	static const struct option longopts[] = {{"no-subreaper", no_argument, NULL, 1},
						 {"bundle", required_argument, NULL, 'b'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	char *argv[] = {
	    "restore", "-no-subreaper", "-bundle", "/b", "--bundle=/c", "-b", "/d", "id", NULL};
	int seen_subreaper = 0;
	const char *bundles[3] = {0};
	int nb = 0, c;
	tern_cli_reset();
	while ((c = tern_cli_next(8, argv, "+b:h", longopts, "usage")) != -1) {
		if (c == 1)
			seen_subreaper++;
		else if (c == 'b' && nb < 3)
			bundles[nb++] = optarg;
	}
	is_int(seen_subreaper, 1, "-no-subreaper parsed as a long option");
	is_str(bundles[0], "/b", "-bundle VALUE");
	is_str(bundles[1], "/c", "--bundle=VALUE");
	is_str(bundles[2], "/d", "-b VALUE");
	is_str(argv[optind], "id", "positional argument after options");

	/* options after the id, as runc's CLI library reorders them; `--`
	 * ends them, and what follows stays a positional argument */
	char *after[] = {"kill", "id", "KILL", "-b", "/e", "--", "-h", NULL};
	nb = 0;
	tern_cli_reset();
	while ((c = tern_cli_next(7, after, "b:h", longopts, "usage")) != -1)
		if (c == 'b' && nb < 3)
			bundles[nb++] = optarg;
	is_int(nb, 1, "an option after the id is parsed");
	is_str(bundles[0], "/e", "its value");
	is_int(7 - optind, 3, "three positional arguments");
	is_str(after[optind], "id", "the id first");
	is_str(after[optind + 1], "KILL", "then the signal");
	is_str(after[optind + 2], "-h", "then the word after --, untouched");

	/* --root: absolute from the start, from the current directory,
	 * whether or not it exists */
	{
		char cwd[4096];
		char *gargv[] = {"tern", "--root", "./rootS/../st", "list", NULL};
		tern_global_opts g = {.rt = {.root = NULL}};
		int action = 0, ind;
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			cwd[0] = '\0';
		cleanup_free char *want = tern_strdup_printf("%s/st", cwd);
		tern_cli_reset();
		ind = tern_cli_parse_globals(4, gargv, &g, &action);
		is_int(ind, 3, "the command word after --root DIR");
		is_str(g.rt.root, want, "a relative --root is made absolute and clean");
		char *aargv[] = {"tern", "--root=/run/x", "list", NULL};
		tern_cli_reset();
		ind = tern_cli_parse_globals(3, aargv, &g, &action);
		is_str(g.rt.root, "/run/x", "an absolute --root stays as it is");
	}

	/* '+' (exec, ps): the words after the id are the command's */
	char *exec_argv[] = {"exec", "-b", "/f", "id", "sh", "-b", "x", NULL};
	nb = 0;
	tern_cli_reset();
	while ((c = tern_cli_next(7, exec_argv, "+b:h", longopts, "usage")) != -1)
		if (c == 'b' && nb < 3)
			bundles[nb++] = optarg;
	is_int(nb, 1, "with '+', only the option before the id");
	is_str(exec_argv[optind], "id", "the id");
	is_str(exec_argv[optind + 2], "-b", "the command's own -b untouched");
	return done_testing();
}
