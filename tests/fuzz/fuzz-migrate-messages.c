/* What `tern migrate` and `tern migrate-receive` read from the peer:
 * frames (type, length, payload) and HELLO through the channel's own code,
 * then each later message's payload as the side that receives it reads
 * it: OFFER (with the config it carries, and its mode), ACCEPT,
 * PAGE_SERVER (an IP address, a port, a certificate), RUNNING, DONE,
 * ERROR. The handlers themselves are static and drive a real migration,
 * so this calls the readers they use: tern_mig_json_parse, the field
 * accessors, tern_mig_mode_parse, oci_config_parse_data. */
#include "migrate.h"
#include "oci-config.h"

#include "fuzz-migrate.h"

#include <arpa/inet.h>
#include <string.h>

static void read_payload(uint32_t type, const char *payload)
{
	tern_error *err = NULL;
	yajl_val v = NULL;
	uint64_t u;
	tern_mig_mode mode;

	if (tern_mig_json_parse(payload, tern_mchan_type_name(type), &v, &err) < 0) {
		tern_error_free(err);
		return;
	}
	switch (type) {
	case TERN_MSG_OFFER: {
		const char *config = tern_mig_json_str(v, "config");
		tern_mig_json_str(v, "id");
		tern_mig_json_bool(v, "tcp_established");
		tern_mig_json_u64(v, "memory_bytes", &u);
		tern_mig_json_bool(v, "post_copy");
		tern_mig_json_bool(v, "pre_copy");
		tern_mig_mode_parse(tern_mig_json_str(v, "mode"), &mode);
		if (config) {
			oci_config *c = NULL;
			char *msg = NULL;
			if (oci_config_parse_data(config, strlen(config), "config.json", &c,
						  &msg) == 0)
				oci_config_free(c);
			free(msg);
		}
		break;
	}
	case TERN_MSG_ACCEPT: {
		const char *m = tern_mig_json_str(v, "mode");
		if (m)
			tern_mig_mode_parse(m, &mode);
		tern_mig_json_str(v, "id");
		tern_mig_json_str(v, "cert");
		break;
	}
	case TERN_MSG_PAGE_SERVER: {
		const char *a = tern_mig_json_str(v, "address");
		unsigned char buf[sizeof(struct in6_addr)];
		tern_mig_json_str(v, "cert");
		tern_mig_json_u64(v, "port", &u);
		if (a && inet_pton(AF_INET, a, buf) != 1)
			inet_pton(AF_INET6, a, buf);
		break;
	}
	case TERN_MSG_RUNNING:
		tern_mig_json_u64(v, "ran_for_ms", &u);
		break;
	case TERN_MSG_IMAGE_FILE: {
		const char *name = tern_mig_json_str(v, "name");
		if (name)
			tern_mig_image_name_ok(name);
		tern_mig_json_str(v, "dir");
		tern_mig_json_u64(v, "size", &u);
		tern_mig_json_bool(v, "part");
		break;
	}
	}
	yajl_tree_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int peer;
	tern_mchan *c = fuzz_mchan(data, size, &peer);
	tern_error *err = NULL;

	/* either role: an odd-sized input is read by the source, an even one
	 * by the target */
	if (tern_mchan_test_hello(c, size % 2 ? "source" : "target", &err) == 0) {
		for (int i = 0; i < 64; i++) {
			char *payload = NULL;
			uint32_t type;
			size_t len;
			if (tern_mchan_recv(c, 0, &type, &payload, &len, 1000, &err) < 0)
				break;
			read_payload(type, payload);
			free(payload);
		}
	}
	tern_error_free(err);
	tern_mchan_free(c);
	close(peer);
	return 0;
}
