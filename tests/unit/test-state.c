/* Unit tests for libocispec's state: the hook, CLI and disk shapes, their
 * round trips, and the CLI layout against a captured `runc state`. */
#include "tap.h"

#include "oci-state.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* `runc --root R state t1` from runc 1.1.5 for a created container whose
 * config.json had the annotation "a.b": "c\"d" (no trailing newline). */
static const char runc_state_created[] = "{\n"
					 "  \"ociVersion\": \"1.0.2-dev\",\n"
					 "  \"id\": \"t1\",\n"
					 "  \"pid\": 6801,\n"
					 "  \"status\": \"created\",\n"
					 "  \"bundle\": \"/tmp/ls/b\",\n"
					 "  \"rootfs\": \"/tmp/ls/b/rootfs\",\n"
					 "  \"created\": \"2026-12-02T09:41:34.076018009Z\",\n"
					 "  \"annotations\": {\n"
					 "    \"a.b\": \"c\\\"d\"\n"
					 "  },\n"
					 "  \"owner\": \"\"\n"
					 "}";

/* The same container once killed, and without annotations. */
static const char runc_state_stopped[] = "{\n"
					 "  \"ociVersion\": \"1.0.2-dev\",\n"
					 "  \"id\": \"t1\",\n"
					 "  \"pid\": 0,\n"
					 "  \"status\": \"stopped\",\n"
					 "  \"bundle\": \"/tmp/ls/b\",\n"
					 "  \"rootfs\": \"/tmp/ls/b/rootfs\",\n"
					 "  \"created\": \"2026-12-02T09:41:34.076018009Z\",\n"
					 "  \"owner\": \"\"\n"
					 "}";

static oci_kv runc_annotations[] = {{"a.b", "c\"d"}};

static oci_state runc_like(int pid, const char *status, bool with_annotations)
{
	return (oci_state){
	    .oci_version = "1.0.2-dev",
	    .id = "t1",
	    .status = (char *)status,
	    .pid = pid,
	    .bundle = "/tmp/ls/b",
	    .annotations = {with_annotations ? runc_annotations : NULL, with_annotations ? 1 : 0},
	    .rootfs = "/tmp/ls/b/rootfs",
	    .created = "2026-12-02T09:41:34.076018009Z",
	    .owner = "",
	    .pid_start_time = 12345,
	    .cgroup_path = "/sys/fs/cgroup/x",
	};
}

static void test_cli(void)
{
	oci_state s = runc_like(6801, "created", true);
	oci_state *back = NULL;
	char *out = NULL, *err = NULL;
	size_t len = 0;

	is_int(oci_state_to_json(&s, OCI_STATE_CLI, &out, &len), 0, "CLI state");
	is_str(out, runc_state_created, "CLI state matches runc state byte for byte");
	is_int(len, strlen(runc_state_created), "CLI length");
	is_int(oci_state_parse_data(out, len, "state", &back, &err), 0, "CLI state parses back");
	if (back) {
		is_str(back->id, "t1", "CLI round trip id");
		is_int(back->pid, 6801, "CLI round trip pid");
		is_str(back->owner, "", "CLI round trip owner");
		is_str(back->annotations.items[0].value, "c\"d", "CLI round trip annotation");
		ok(back->pid_start_time == 0 && back->cgroup_path == NULL,
		   "CLI shape has no private fields");
	}
	oci_state_free(back);
	free(out);

	s = runc_like(0, "stopped", false);
	is_int(oci_state_to_json(&s, OCI_STATE_CLI, &out, NULL), 0, "CLI stopped state");
	is_str(out, runc_state_stopped, "stopped: pid 0, no annotations, as runc prints");
	free(out);

	s = (oci_state){.pid = 1};
	is_int(oci_state_to_json(&s, OCI_STATE_CLI, &out, NULL), 0, "CLI with NULL strings");
	ok(out && strstr(out, "\"owner\": \"\"") && strstr(out, "\"created\": \"\""),
	   "NULL strings print as \"\"");
	free(out);
}

/* A migrated container: tern's two fields after runc's, only then; never
 * on disk (the mark in the state directory is what counts). */
static void test_migrated(void)
{
	oci_state s = runc_like(6801, "migrated", false);
	char *out = NULL;

	s.migrated_to = "10.0.0.2:4000";
	s.migrated_as = "t1-b";
	is_int(oci_state_to_json(&s, OCI_STATE_CLI, &out, NULL), 0, "CLI migrated state");
	ok(out && strstr(out, "\"status\": \"migrated\"") &&
	       strstr(out, "\"owner\": \"\",\n  \"migratedTo\": \"10.0.0.2:4000\",\n  "
			   "\"migratedAs\": \"t1-b\"\n}"),
	   "migratedTo and migratedAs follow owner");
	free(out);
	is_int(oci_state_to_json(&s, OCI_STATE_DISK, &out, NULL), 0, "disk migrated state");
	ok(out && !strstr(out, "migrated_to") && !strstr(out, "migratedTo"),
	   "the disk state does not keep where it went");
	free(out);
	s = runc_like(6801, "running", false);
	is_int(oci_state_to_json(&s, OCI_STATE_CLI, &out, NULL), 0, "CLI running state");
	ok(out && !strstr(out, "migrated"), "no migrated fields for any other container");
	free(out);
}

static void test_hook(void)
{
	oci_kv ann[] = {{"k", "v"}};
	oci_state s = runc_like(42, "running", false);
	oci_state *back = NULL;
	char *out = NULL, *err = NULL;

	s.oci_version = "1.2.0";
	s.bundle = "/b";
	s.annotations = (oci_map){ann, 1};
	is_int(oci_state_to_json(&s, OCI_STATE_HOOK, &out, NULL), 0, "hook state");
	is_str(out,
	       "{\"ociVersion\":\"1.2.0\",\"id\":\"t1\",\"status\":\"running\",\"pid\":42,"
	       "\"bundle\":\"/b\",\"annotations\":{\"k\":\"v\"}}",
	       "hook state is compact, with the spec's fields only");
	is_int(oci_state_parse_data(out, strlen(out), "hook", &back, &err), 0, "hook parses back");
	if (back) {
		is_str(back->status, "running", "hook round trip status");
		is_int(back->pid, 42, "hook round trip pid");
		is_str(back->bundle, "/b", "hook round trip bundle");
		is_str(back->annotations.items[0].key, "k", "hook round trip annotation");
		ok(back->rootfs == NULL && back->created == NULL, "hook has no rootfs or created");
	}
	oci_state_free(back);
	free(out);

	s.annotations = (oci_map){0};
	s.status = "stopped";
	s.pid = 0;
	is_int(oci_state_to_json(&s, OCI_STATE_HOOK, &out, NULL), 0, "stopped hook state");
	is_str(out,
	       "{\"ociVersion\":\"1.2.0\",\"id\":\"t1\",\"status\":\"stopped\",\"bundle\":\"/b\"}",
	       "stopped: no pid, no empty annotations");
	free(out);

	s.status = "created";
	is_int(oci_state_to_json(&s, OCI_STATE_HOOK, &out, NULL), 0, "created hook state, pid 0");
	ok(out && strstr(out, "\"pid\":0"), "pid is written when created (required by the spec)");
	free(out);
}

static void test_disk(void)
{
	oci_kv ann[] = {{"org.x", "tab\there \"quoted\" \\ \xc3\xa9"}, {"empty", ""}};
	oci_state s = {
	    .oci_version = "1.2.0",
	    .id = "c1",
	    .status = "running",
	    .pid = 2147483647,
	    .bundle = "/run/bundle",
	    .annotations = {ann, 2},
	    .rootfs = "/run/bundle/rootfs",
	    .created = "2026-12-02T09:34:16.123456789Z",
	    .owner = "",
	    .pid_start_time = UINT64_MAX,
	    .cgroup_path = "/tern/c1",
	    .systemd_cgroup = true,
	    .own_cgroup = true,
	    .config_path = "/run/tern/c1/config.json",
	    .detached_stdio = true,
	    .rdt_group = "/sys/fs/resctrl/c1",
	    .rdt_own_group = true,
	    .rdt_mon_group = "/sys/fs/resctrl/c1/mon_groups/c1",
	};
	oci_state *back = NULL;
	char *out = NULL, *err = NULL;
	size_t len;

	is_int(oci_state_to_json(&s, OCI_STATE_DISK, &out, &len), 0, "disk state");
	ok(out && strstr(out, "\"pid_start_time\":18446744073709551615"),
	   "pid_start_time above INT64_MAX written as a number");
	is_int(oci_state_parse_data(out, len, "state.json", &back, &err), 0, "disk parses back");
	if (back) {
		is_str(back->oci_version, "1.2.0", "disk ociVersion");
		is_str(back->id, "c1", "disk id");
		is_str(back->status, "running", "disk status");
		is_int(back->pid, 2147483647, "disk pid");
		is_str(back->bundle, "/run/bundle", "disk bundle");
		is_int(back->annotations.len, 2, "disk annotations count");
		is_str(back->annotations.items[0].value, ann[0].value, "disk escapes round trip");
		is_str(back->annotations.items[1].value, "", "disk empty annotation");
		is_str(back->rootfs, "/run/bundle/rootfs", "disk rootfs");
		is_str(back->created, "2026-12-02T09:34:16.123456789Z", "disk created");
		is_str(back->owner, "", "disk owner");
		ok(back->pid_start_time == UINT64_MAX, "disk pid_start_time");
		is_str(back->cgroup_path, "/tern/c1", "disk cgroup_path");
		ok(back->systemd_cgroup && back->own_cgroup && back->detached_stdio,
		   "disk booleans");
		is_str(back->config_path, "/run/tern/c1/config.json", "disk config_path");
		is_str(back->rdt_group, "/sys/fs/resctrl/c1", "disk rdt_group");
		ok(back->rdt_own_group, "disk rdt_own_group");
		is_str(back->rdt_mon_group, "/sys/fs/resctrl/c1/mon_groups/c1",
		       "disk rdt_mon_group");
	}
	oci_state_free(back);
	back = NULL;
	free(out);

	/* Absent strings stay absent. */
	s = (oci_state){.id = "x", .status = "creating"};
	is_int(oci_state_to_json(&s, OCI_STATE_DISK, &out, &len), 0, "sparse disk state");
	is_int(oci_state_parse_data(out, len, "state.json", &back, &err), 0, "sparse parses back");
	if (back) {
		ok(back->bundle == NULL && back->owner == NULL && back->cgroup_path == NULL &&
		       back->config_path == NULL,
		   "NULL strings read back as NULL");
		ok(back->annotations.len == 0 && !back->own_cgroup && back->pid == 0,
		   "zero fields read back as zero");
		ok(back->rdt_group == NULL && back->rdt_mon_group == NULL && !back->rdt_own_group,
		   "no resctrl group written, none read back");
	}
	ok(out && !strstr(out, "rdt_"), "no rdt_ fields without a resctrl group");
	oci_state_free(back);
	free(out);
}

static void test_parse_errors(void)
{
	struct {
		const char *json, *want;
	} bad[] = {
	    {"{\"pid\": -1}", "state.json: pid: -1 is out of range (0 to 2147483647)"},
	    {"{\"pid\": \"1\"}", "state.json: pid: expected an integer"},
	    {"{\"pid\": 2147483648}",
	     "state.json: pid: 2147483648 is out of range (0 to 2147483647)"},
	    {"{\"id\": 5}", "state.json: id: expected a string"},
	    {"{\"own_cgroup\": 1}", "state.json: own_cgroup: expected a boolean"},
	    {"{\"pid_start_time\": -5}",
	     "state.json: pid_start_time: expected an unsigned integer"},
	    {"{\"annotations\": {\"a\": null}}", "state.json: annotations.a: expected a string"},
	    {"{\"id\": \"x\"", "state.json: invalid JSON: parse error: premature EOF"},
	    {"\"state\"", "state.json: expected an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		oci_state *s = NULL;
		char *err = NULL;
		int ret =
		    oci_state_parse_data(bad[i].json, strlen(bad[i].json), "state.json", &s, &err);
		is_int(ret, -EINVAL, "bad state %zu fails", i);
		is_str(err, bad[i].want, "bad state %zu message", i);
		ok(s == NULL, "bad state %zu: nothing returned", i);
		free(err);
	}
	oci_state *s = NULL;
	char *err = NULL;
	is_int(oci_state_parse_data("{\"unknown\": [1], \"id\": \"a\"}", 27, NULL, &s, &err), 0,
	       "unknown fields are ignored");
	oci_state_free(s);
}

static void test_map(void)
{
	oci_kv kv[] = {{"a", "1"}, {"b", "2"}};
	oci_map src = {kv, 2}, dst = {0};

	is_int(oci_map_copy(&dst, &src), 0, "map copy");
	is_int(dst.len, 2, "map copy length");
	ok(dst.items[1].key != kv[1].key, "map copy duplicates the strings");
	is_str(dst.items[1].value, "2", "map copy value");
	is_int(oci_map_copy(&dst, &src), 0, "map copy over a filled map");
	oci_map_clear(&dst);
	ok(dst.items == NULL && dst.len == 0, "map clear");
	oci_map empty = {0};
	is_int(oci_map_copy(&dst, &empty), 0, "copy of an empty map");
	ok(dst.items == NULL && dst.len == 0, "empty copy is empty");
	oci_map_clear(NULL);
}

int main(void)
{
	test_cli();
	test_migrated();
	test_hook();
	test_disk();
	test_parse_errors();
	test_map();
	return done_testing();
}
