/* state.json (tern's state directory record, and `tern state` output):
 * parse, and for what parses, write it back in both formats and parse that
 * again; the round trip must succeed. */
#include "oci-state.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oci_state *state = NULL, *again = NULL;
	char *msg = NULL, *out = NULL;
	size_t len = 0;

	if (oci_state_parse_data((const char *)data, size, "state.json", &state, &msg) < 0) {
		if (msg == NULL)
			abort();
		free(msg);
		return 0;
	}
	for (int f = OCI_STATE_HOOK; f < OCI_STATE_DISK; f++) {
		if (oci_state_to_json(state, (oci_state_format)f, &out, &len) == 0)
			free(out);
		out = NULL;
	}
	if (oci_state_to_json(state, OCI_STATE_DISK, &out, &len) < 0)
		abort();
	/* what tern writes it must read back */
	if (oci_state_parse_data(out, len, "state.json", &again, &msg) < 0) {
		free(msg);
		abort();
	}
	oci_state_free(again);
	free(out);
	oci_state_free(state);
	return 0;
}
