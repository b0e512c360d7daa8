/* The command-line overrides of `tern exec`: --user UID[:GID],
 * --additional-gids, --env KEY=VALUE, --cwd, --cap, applied to the default
 * spec's process as exec does. Input: one option per line, "u VALUE",
 * "g VALUE", "e VALUE", "w VALUE" (cwd) or "c VALUE" (cap); other lines
 * are the command. Nothing is executed. */
#include "exec.h"
#include "oci-config.h"

#include "fuzz-util.h"

static char **push(char **v, char *s)
{
	size_t n = fuzz_strv_len(v);
	v = realloc(v, (n + 2) * sizeof(char *));
	if (v == NULL)
		abort();
	v[n] = s;
	v[n + 1] = NULL;
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *spec;
	char **lines = fuzz_lines(data, size, 128);
	tern_exec_opts o = {0};
	oci_config *config = NULL;
	oci_process *p = NULL;
	tern_error *err = NULL;
	char *msg = NULL;

	if (spec == NULL)
		spec = oci_default_spec_json(false);
	if (oci_config_parse_data(spec, strlen(spec), "config.json", &config, &msg) < 0)
		abort();
	for (size_t i = 0; lines[i]; i++) {
		char *l = lines[i], *v = l[0] && l[1] == ' ' ? l + 2 : NULL;
		switch (v ? l[0] : 0) {
		case 'u':
			o.user = v;
			break;
		case 'g':
			o.additional_gids = push(o.additional_gids, v);
			break;
		case 'e':
			o.env = push(o.env, v);
			break;
		case 'w':
			o.cwd = v;
			break;
		case 'c':
			o.caps = push(o.caps, v);
			break;
		default:
			o.args = push(o.args, l);
		}
	}
	if (o.args == NULL)
		o.args = push(NULL, (char *)"sh");
	tern_exec_apply_overrides(&o, config, &p, &err);
	tern_error_free(err);
	oci_process_free(p);
	oci_config_free(config);
	free(o.additional_gids);
	free(o.env);
	free(o.caps);
	free(o.args);
	fuzz_strv_free(lines);
	return 0;
}
