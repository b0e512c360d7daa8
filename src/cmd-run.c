/* placeholder */
typedef int tern_placeholder_cmd_run;
