/* libFuzzer target for the config.json parser: any input must either parse
 * (and then free cleanly) or fail with a message, never crash or leak.
 * Build and run: tests/fuzz/run-fuzz.sh [seconds] */
#include "oci-config.h"
#include "oci-state.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oci_config *config = NULL;
	oci_state *state = NULL;
	char *err = NULL;

	if (oci_config_parse_data((const char *)data, size, "config.json", &config, &err) == 0)
		oci_config_free(config);
	free(err);
	err = NULL;
	if (oci_state_parse_data((const char *)data, size, "state.json", &state, &err) == 0) {
		char *out = NULL;
		if (oci_state_to_json(state, OCI_STATE_DISK, &out, NULL) == 0)
			free(out);
		oci_state_free(state);
	}
	free(err);
	return 0;
}
