/* placeholder */
typedef int tern_placeholder_cli;
