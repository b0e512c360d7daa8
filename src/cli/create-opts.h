/* The options create and run share. */
#pragma once

#include "cli.h"

void tern_cli_parse_create_opts(int argc, char **argv, tern_create_opts *opts, bool run,
				const char *usage);
