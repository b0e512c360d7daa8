/* Loading an existing container: its state, with the status refreshed, and
 * the config copy create kept. Below the lifecycle operations that act on
 * a container already made (start, kill, delete, exec, pause, update...),
 * which all begin here. */
#pragma once

#include "container-shared.h"
#include "error.h"
#include "oci-config.h"
#include "oci-state.h"
#include "state.h"

/* Load state (with refreshed status) and the config copy. */
int tern_container_load(const tern_runtime *rt, const char *id, tern_container_dir **dir,
			oci_state **state, oci_config **config, tern_error **err);
/* The same for reading only (state, list): does not wait for a command
 * that holds the container (see tern_state_dir_open). */
/* Read the state (status refreshed) and, when `config` is not NULL, the
 * config copy (NULL if unreadable) of a container whose directory the
 * caller has open and locked. */
int tern_container_read(tern_container_dir *dir, oci_state **state, oci_config **config,
			tern_error **err);
int tern_container_peek(const tern_runtime *rt, const char *id, tern_container_dir **dir,
			oci_state **state, tern_error **err);
