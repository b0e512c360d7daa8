/* Loading an existing container for the operations on it (see
 * container-load.h). */
#include "container-load.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

int tern_container_read(tern_container_dir *dir, oci_state **state, oci_config **config,
			tern_error **err)
{
	int ret = tern_state_read(dir, state, err);
	if (ret < 0)
		return ret;
	tern_state_refresh_status(dir, *state);
	if (config) {
		cleanup_free char *path = tern_strdup_printf("%s/%s", dir->dir, TERN_CONFIG_COPY);
		char *msg = NULL;
		*config = NULL;
		if (oci_config_parse_file(path, config, &msg) < 0) {
			tern_debug("cannot re-read the config of %s: %s", dir->id, msg ? msg : "");
			*config = NULL;
		}
		free(msg);
	}
	return 0;
}

static int load(const tern_runtime *rt, const char *id, bool peek, tern_container_dir **dir,
		oci_state **state, oci_config **config, tern_error **err)
{
	int ret = tern_state_dir_open(rt->root, id, peek, dir, err);
	if (ret < 0)
		return ret;
	ret = tern_container_read(*dir, state, config, err);
	if (ret == -ENOENT && peek) {
		/* a delete removed it while we read it without the lock */
		ret = tern_state_error_gone(rt->root, id, err);
	}
	if (ret < 0)
		tern_state_dir_freep(dir);
	return ret;
}

int tern_container_load(const tern_runtime *rt, const char *id, tern_container_dir **dir,
			oci_state **state, oci_config **config, tern_error **err)
{
	return load(rt, id, false, dir, state, config, err);
}

int tern_container_peek(const tern_runtime *rt, const char *id, tern_container_dir **dir,
			oci_state **state, tern_error **err)
{
	return load(rt, id, true, dir, state, NULL, err);
}
