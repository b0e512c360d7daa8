/* placeholder */
typedef int tern_placeholder_init;
