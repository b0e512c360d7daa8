/* linux.memoryPolicy and process.execCPUAffinity (runtime-spec 1.3):
 * libocispec's parsing and checks with their exact messages, and the
 * number lists.
 *
 * As in test-config.c, inputs use single quotes for readability. */
#include "tap.h"

#include "oci-config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dq(const char *s)
{
	char *r = strdup(s);
	for (char *p = r; *p; p++)
		if (*p == '\'')
			*p = '"';
	return r;
}

static oci_config *parse(const char *text, char **err)
{
	char *json = dq(text);
	oci_config *config = NULL;

	*err = NULL;
	oci_config_parse_data(json, strlen(json), "config.json", &config, err);
	free(json);
	return config;
}

static oci_config *parse_ok(const char *text, const char *what)
{
	char *err;
	oci_config *c = parse(text, &err);

	ok(c != NULL, "%s: parses", what);
	if (c == NULL)
		printf("#   error: %s\n", err);
	free(err);
	return c;
}

static void parse_err(const char *text, const char *want, const char *what)
{
	char *err;
	oci_config *c = parse(text, &err);

	ok(c == NULL, "%s: refused", what);
	is_str(err, want, "%s: message", what);
	oci_config_free(c);
	free(err);
}

#define HEAD		 "{'ociVersion': '1.3.0', 'root': {'path': 'rootfs'}, "
#define PROC		 "'process': {'args': ['sh'], 'cwd': '/'}"
#define MP(x)		 HEAD PROC ", 'linux': {'memoryPolicy': {" x "}}}"
#define AFF(x)		 HEAD "'process': {'args': ['sh'], 'cwd': '/', 'execCPUAffinity': {" x "}}}"
#define E		 "config.json: linux.memoryPolicy."
#define PROC_ONLY_CONFIG HEAD PROC "}"

static void test_id_lists(void)
{
	static const struct {
		const char *in;
		size_t n;
		uint32_t first, last; /* of the last range */
	} good[] = {
	    {"", 0, 0, 0},	{"0", 1, 0, 0},		  {"0-3,7", 2, 7, 7},
	    {"7,0-3", 2, 0, 3}, {"5-5", 1, 5, 5},	  {"65535", 1, 65535, 65535},
	    {"1,1,1", 3, 1, 1}, {"0-65535", 1, 0, 65535},
	};
	static const struct {
		const char *in, *why;
	} bad[] = {
	    {"a", "expected a number"},
	    {"1,", "the list ends where a number should be"},
	    {"1-", "the list ends where a number should be"},
	    {"3-1", "a range runs backwards"},
	    {"0,,1", "expected a number"},
	    {" 1", "expected a number"},
	    {"1 ", "expected a comma or a dash after a number"},
	    {"1-2-3", "expected a comma or a dash after a number"},
	    {"65536", "a number is above 65535"},
	    {"99999999999999999999", "a number is above 65535"},
	    {"-1", "expected a number"},
	    {"0x1", "expected a comma or a dash after a number"},
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		oci_id_range *r = NULL;
		const char *why = NULL;
		size_t n = 99;
		int ret = oci_id_list_parse(good[i].in, &r, &n, &why);
		is_int(ret, 0, "list `%s` parses", good[i].in);
		is_int(n, good[i].n, "list `%s`: %zu ranges", good[i].in, good[i].n);
		if (n > 0 && n == good[i].n)
			ok(r[n - 1].first == good[i].first && r[n - 1].last == good[i].last,
			   "list `%s`: last range %u-%u", good[i].in, good[i].first, good[i].last);
		free(r);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		oci_id_range *r = NULL;
		const char *why = NULL;
		size_t n = 99;
		int ret = oci_id_list_parse(bad[i].in, &r, &n, &why);
		is_int(ret, -EINVAL, "list `%s` refused", bad[i].in);
		is_str(why, bad[i].why, "list `%s`: why", bad[i].in);
		ok(r == NULL && n == 0, "list `%s`: nothing returned", bad[i].in);
	}
}

static void test_names(void)
{
	static const char *const modes[] = {
	    "MPOL_DEFAULT",   "MPOL_BIND",	     "MPOL_INTERLEAVE", "MPOL_WEIGHTED_INTERLEAVE",
	    "MPOL_PREFERRED", "MPOL_PREFERRED_MANY", "MPOL_LOCAL",
	};
	static const char *const flags[] = {"MPOL_F_NUMA_BALANCING", "MPOL_F_RELATIVE_NODES",
					    "MPOL_F_STATIC_NODES"};

	is_int(OCI_MPOL_MODE_COUNT, 7, "seven modes, as in config-linux.md");
	for (int i = 0; i < OCI_MPOL_MODE_COUNT; i++)
		is_str(oci_mpol_mode_name((oci_mpol_mode)i), modes[i], "mode %d name", i);
	ok(oci_mpol_mode_name(OCI_MPOL_MODE_COUNT) == NULL, "no mode past the last");
	is_int(OCI_MPOL_FLAG_COUNT, 3, "three flags");
	for (int i = 0; i < OCI_MPOL_FLAG_COUNT; i++)
		is_str(oci_mpol_flag_name((oci_mpol_flag)i), flags[i], "flag %d name", i);
	ok(oci_mpol_flag_name((oci_mpol_flag)-1) == NULL, "no flag before the first");
}

static void test_parse(void)
{
	oci_config *c = parse_ok(MP("'mode': 'MPOL_BIND', 'nodes': '0-1,3', 'flags': "
				    "['MPOL_F_STATIC_NODES', 'MPOL_F_NUMA_BALANCING']"),
				 "bind with flags");
	if (c) {
		const oci_memory_policy *p = c->linux_->memory_policy;
		ok(p != NULL, "memoryPolicy present");
		is_int(p->mode, OCI_MPOL_BIND, "mode");
		is_str(p->nodes, "0-1,3", "nodes");
		is_int(p->flags,
		       (1u << OCI_MPOL_F_STATIC_NODES) | (1u << OCI_MPOL_F_NUMA_BALANCING),
		       "flags as bits");
		ok(c->warnings == NULL, "no warning for ociVersion 1.3.0");
	}
	oci_config_free(c);
	c = parse_ok(HEAD PROC ", 'linux': {'memoryPolicy': null}}", "null memoryPolicy");
	if (c)
		ok(c->linux_->memory_policy == NULL, "null is absent");
	oci_config_free(c);

	/* Every mode with what it needs. */
	const char *fine[] = {
	    "'mode': 'MPOL_DEFAULT'",
	    "'mode': 'MPOL_DEFAULT', 'nodes': '', 'flags': []",
	    "'mode': 'MPOL_LOCAL'",
	    "'mode': 'MPOL_PREFERRED'",
	    "'mode': 'MPOL_PREFERRED', 'nodes': '1'",
	    "'mode': 'MPOL_PREFERRED', 'nodes': '1', 'flags': ['MPOL_F_RELATIVE_NODES']",
	    "'mode': 'MPOL_INTERLEAVE', 'nodes': '0-3', 'flags': ['MPOL_F_STATIC_NODES']",
	    "'mode': 'MPOL_WEIGHTED_INTERLEAVE', 'nodes': '0,2'",
	    "'mode': 'MPOL_PREFERRED_MANY', 'nodes': '0-1', 'flags': ['MPOL_F_NUMA_BALANCING']",
	    "'mode': 'MPOL_BIND', 'nodes': '2', 'flags': ['MPOL_F_RELATIVE_NODES', "
	    "'MPOL_F_NUMA_BALANCING']",
	};
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		char text[512];
		snprintf(text, sizeof(text), MP("%s"), fine[i]);
		c = parse_ok(text, fine[i]);
		oci_config_free(c);
	}
}

static void test_errors(void)
{
	parse_err(MP("'nodes': '0'"), E "mode: is required", "mode missing");
	parse_err(MP("'mode': 2"), E "mode: expected a string", "mode a number");
	parse_err(MP("'mode': 'bind'"),
		  E "mode: unknown mode \"bind\" (the modes are MPOL_DEFAULT, MPOL_BIND, "
		    "MPOL_INTERLEAVE, MPOL_WEIGHTED_INTERLEAVE, MPOL_PREFERRED, "
		    "MPOL_PREFERRED_MANY or MPOL_LOCAL)",
		  "unknown mode");
	parse_err(HEAD PROC ", 'linux': {'memoryPolicy': 'MPOL_BIND'}}",
		  "config.json: linux.memoryPolicy: expected an object", "not an object");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': 0"), E "nodes: expected a string",
		  "nodes a number");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': '0', 'flags': 'MPOL_F_STATIC_NODES'"),
		  E "flags: expected an array of strings", "flags a string");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': '0', 'flags': [1]"),
		  E "flags[0]: expected a string", "flag a number");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': '0', 'flags': ['MPOL_F_STATIC_NODES', "
		     "'MPOL_F_LAZY']"),
		  E "flags[1]: unknown flag \"MPOL_F_LAZY\" (the flags are MPOL_F_NUMA_BALANCING, "
		    "MPOL_F_RELATIVE_NODES or MPOL_F_STATIC_NODES)",
		  "unknown flag");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': '0', 'flags': ['MPOL_F_STATIC_NODES', "
		     "'MPOL_F_STATIC_NODES']"),
		  E "flags[1]: MPOL_F_STATIC_NODES is given twice", "flag twice");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': '1-0'"),
		  E "nodes: \"1-0\" is not a list of node numbers such as \"0-3,7\": a range runs "
		    "backwards",
		  "nodes backwards");
	parse_err(MP("'mode': 'MPOL_BIND', 'nodes': 'node0'"),
		  E "nodes: \"node0\" is not a list of node numbers such as \"0-3,7\": expected a "
		    "number",
		  "nodes not numbers");

	parse_err(MP("'mode': 'MPOL_DEFAULT', 'nodes': '0'"),
		  E "nodes: must be empty: MPOL_DEFAULT takes no nodes", "default with nodes");
	parse_err(MP("'mode': 'MPOL_LOCAL', 'nodes': '0-1'"),
		  E "nodes: must be empty: MPOL_LOCAL takes no nodes", "local with nodes");
	parse_err(MP("'mode': 'MPOL_DEFAULT', 'flags': ['MPOL_F_STATIC_NODES']"),
		  E "flags: must be empty: MPOL_DEFAULT takes no flags", "default with a flag");
	parse_err(MP("'mode': 'MPOL_LOCAL', 'flags': ['MPOL_F_RELATIVE_NODES']"),
		  E "flags: must be empty: MPOL_LOCAL takes no flags", "local with a flag");
	static const char *const need_nodes[] = {"MPOL_BIND", "MPOL_INTERLEAVE",
						 "MPOL_WEIGHTED_INTERLEAVE", "MPOL_PREFERRED_MANY"};
	for (size_t i = 0; i < 4; i++) {
		char text[256], want[256];
		snprintf(text, sizeof(text), MP("'mode': '%s'"), need_nodes[i]);
		snprintf(want, sizeof(want), E "nodes: %s needs at least one node", need_nodes[i]);
		parse_err(text, want, need_nodes[i]);
		snprintf(text, sizeof(text), MP("'mode': '%s', 'nodes': ''"), need_nodes[i]);
		parse_err(text, want, "empty nodes");
	}
	parse_err(MP("'mode': 'MPOL_PREFERRED', 'flags': ['MPOL_F_STATIC_NODES']"),
		  E "flags: MPOL_F_STATIC_NODES needs nodes: MPOL_PREFERRED without nodes means "
		    "local allocation",
		  "preferred, static, no nodes");
	parse_err(MP("'mode': 'MPOL_INTERLEAVE', 'nodes': '0', 'flags': ['MPOL_F_RELATIVE_NODES', "
		     "'MPOL_F_STATIC_NODES']"),
		  E "flags: MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES exclude each other",
		  "static and relative");
	parse_err(MP("'mode': 'MPOL_INTERLEAVE', 'nodes': '0', 'flags': ['MPOL_F_NUMA_BALANCING']"),
		  E "flags: MPOL_F_NUMA_BALANCING works only with MPOL_BIND and "
		    "MPOL_PREFERRED_MANY, not MPOL_INTERLEAVE",
		  "balancing with interleave");
	parse_err(MP("'mode': 'MPOL_PREFERRED', 'nodes': '0', 'flags': ['MPOL_F_NUMA_BALANCING']"),
		  E "flags: MPOL_F_NUMA_BALANCING works only with MPOL_BIND and "
		    "MPOL_PREFERRED_MANY, not MPOL_PREFERRED",
		  "balancing with preferred");
}

static void test_affinity_parse(void)
{
	oci_config *c = parse_ok(AFF("'initial': '1', 'final': '0-1'"), "execCPUAffinity");
	if (c) {
		is_str(c->process->exec_cpu_affinity->initial, "1", "initial");
		is_str(c->process->exec_cpu_affinity->final, "0-1", "final");
	}
	oci_config_free(c);
	c = parse_ok(AFF("'initial': '', 'final': ''"), "empty lists (config.md: as omitted)");
	oci_config_free(c);
	c = parse_ok(AFF(""), "no lists");
	oci_config_free(c);
	parse_err(AFF("'initial': 'cpu1'"),
		  "config.json: process.execCPUAffinity.initial: \"cpu1\" is not a list of CPU "
		  "numbers such as \"0-3,7\": expected a number",
		  "initial not a list");
	parse_err(AFF("'initial': '0', 'final': '0-'"),
		  "config.json: process.execCPUAffinity.final: \"0-\" is not a list of CPU "
		  "numbers such as \"0-3,7\": the list ends where a number should be",
		  "final cut short");
	parse_err(AFF("'final': 3"),
		  "config.json: process.execCPUAffinity.final: expected a string",
		  "final a number");

	/* exec --process FILE: the same check, the path from the file's root */
	char dir[] = "/tmp/test-numa-XXXXXX", *path, *err = NULL;
	oci_process *p = NULL;
	if (mkdtemp(dir) == NULL)
		abort();
	if (asprintf(&path, "%s/process.json", dir) < 0)
		abort();
	FILE *f = fopen(path, "we");
	fputs("{\"args\": [\"sh\"], \"cwd\": \"/\", \"execCPUAffinity\": {\"final\": \"2-1\"}}", f);
	fclose(f);
	is_int(oci_process_parse_file(path, &p, &err), -EINVAL, "process file refused");
	is_str(err,
	       "process.json: execCPUAffinity.final: \"2-1\" is not a list of CPU numbers "
	       "such as \"0-3,7\": a range runs backwards",
	       "process file message");
	free(err);
	oci_process_free(p);
	unlink(path);
	rmdir(dir);
	free(path);
}

int main(void)
{
	test_id_lists();
	test_names();
	test_parse();
	test_errors();
	test_affinity_parse();
	return done_testing();
}
