#include "create-opts.h"

void tern_cli_parse_create_opts(int argc, char **argv, tern_create_opts *opts, bool run,
				const char *usage)
{
	enum {
		OPT_CONSOLE = 256,
		OPT_PIDFILE,
		OPT_NOPIVOT,
		OPT_NOKEYRING,
		OPT_PRESERVE,
		OPT_KEEP,
		OPT_NOSUBREAPER
	};
	/* run takes every flag of create, plus its own */
#define CREATE_LONGOPTS                                                                            \
	{"bundle", required_argument, NULL, 'b'},                                                  \
	    {"console-socket", required_argument, NULL, OPT_CONSOLE},                              \
	    {"pid-file", required_argument, NULL, OPT_PIDFILE},                                    \
	    {"no-pivot", no_argument, NULL, OPT_NOPIVOT},                                          \
	    {"no-new-keyring", no_argument, NULL, OPT_NOKEYRING},                                  \
	    {"preserve-fds", required_argument, NULL, OPT_PRESERVE},                               \
	    {"help", no_argument, NULL, 'h'}
	static const struct option create_longopts[] = {
	    CREATE_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	static const struct option run_longopts[] = {
	    CREATE_LONGOPTS,
	    {"detach", no_argument, NULL, 'd'},
	    {"keep", no_argument, NULL, OPT_KEEP},
	    {"no-subreaper", no_argument, NULL, OPT_NOSUBREAPER},
	    {NULL, 0, NULL, 0},
	};
#undef CREATE_LONGOPTS
	int c;

	opts->bundle = ".";
	tern_cli_reset();
	while ((c = tern_cli_next(argc, argv, run ? "b:dh" : "b:h",
				  run ? run_longopts : create_longopts, usage)) != -1) {
		switch (c) {
		case 'b':
			opts->bundle = optarg;
			break;
		case OPT_CONSOLE:
			opts->console_socket = optarg;
			break;
		case OPT_PIDFILE:
			opts->pid_file = optarg;
			break;
		case OPT_NOPIVOT:
			opts->no_pivot = true;
			break;
		case OPT_NOKEYRING:
			opts->no_new_keyring = true;
			break;
		case OPT_PRESERVE:
			opts->preserve_fds = tern_cli_parse_int("preserve-fds", optarg);
			break;
		case 'd':
			opts->detach = true;
			break;
		case OPT_KEEP:
			opts->keep = true;
			break;
		case OPT_NOSUBREAPER:
			opts->no_subreaper = true;
			break;
		}
	}
}
