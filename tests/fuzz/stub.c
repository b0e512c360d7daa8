/* Linked into every fuzz target: cli.c's command lookup refers to the
 * command table of main.c, which the targets do not have. */
#include "cli.h"

const tern_command tern_commands[] = {{NULL}};
