/* linux.memoryPolicy and process.execCPUAffinity (runtime-spec 1.3):
 * libocispec's parsing and checks with their exact messages, the number
 * lists, and src/linux/numa.c's checks against a machine described by a sysfs
 * tree of our own (four nodes, two with memory, eight CPUs). The last
 * tests ask this machine's kernel for real.
 *
 * As in test-config.c, inputs use single quotes for readability. */
#include "tap.h"

#include "error.h"
#include "numa.h"
#include "oci-config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* ---- src/linux/numa.c against a machine of our own ---- */

static char sysdir[] = "/tmp/test-numa-sys-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", sysdir, rel);
	FILE *f = fopen(path, "we");
	if (f == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

static void make_machine(void)
{
	char path[256];

	if (mkdtemp(sysdir) == NULL)
		abort();
	snprintf(path, sizeof(path), "%s/node", sysdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/cpu", sysdir);
	mkdir(path, 0755);
	put("node/possible", "0-3\n");
	put("node/has_memory", "0-1\n");
	put("cpu/possible", "0-7\n");
}

static void remove_machine(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sysdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", sysdir);
}

/* prepare `text` (a config); *err_out the message or NULL */
static int prepare(const char *text, tern_mempolicy *mp, char **msg)
{
	char *perr = NULL;
	oci_config *c = parse(text, &perr);
	tern_error *e = NULL;
	int ret;

	*msg = NULL;
	if (c == NULL) {
		*msg = perr;
		return -EINVAL;
	}
	ret = tern_mempolicy_prepare(c, sysdir, mp, &e);
	if (ret < 0) {
		*msg = strdup(e->msg);
		tern_error_free(e);
	}
	oci_config_free(c);
	return ret;
}

static void prepare_err(const char *text, const char *want, const char *what)
{
	tern_mempolicy mp;
	char *msg;

	is_int(prepare(text, &mp, &msg), -EINVAL, "%s: refused", what);
	is_str(msg, want, "%s: message", what);
	free(msg);
}

static void test_prepare(void)
{
	tern_mempolicy mp;
	char *msg;

	is_int(prepare(MP("'mode': 'MPOL_BIND', 'nodes': '1'"), &mp, &msg), 0, "bind 1 on 0-3");
	ok(mp.set, "policy set");
	is_int(mp.mode, 2, "the kernel's MPOL_BIND");
	ok(mp.nodemask && mp.nodemask[0] == 2, "node 1 in the mask");
	is_int(mp.maxnode, 5, "four possible nodes: maxnode 5");
	is_str(mp.what, "MPOL_BIND nodes 1", "described");
	tern_mempolicy_clear(&mp);

	is_int(prepare(MP("'mode': 'MPOL_INTERLEAVE', 'nodes': '0-3', 'flags': "
			  "['MPOL_F_STATIC_NODES']"),
		       &mp, &msg),
	       0, "interleave 0-3 static");
	is_int(mp.mode, 3 | (1 << 15), "MPOL_INTERLEAVE | MPOL_F_STATIC_NODES");
	ok(mp.nodemask && mp.nodemask[0] == 0xf, "nodes 0-3 in the mask");
	is_str(mp.what, "MPOL_INTERLEAVE nodes 0-3 MPOL_F_STATIC_NODES", "described");
	tern_mempolicy_clear(&mp);

	static const struct {
		const char *mode;
		int value;
	} values[] = {
	    {"MPOL_PREFERRED", 1},	     {"MPOL_LOCAL", 4},	  {"MPOL_PREFERRED_MANY", 5},
	    {"MPOL_WEIGHTED_INTERLEAVE", 6}, {"MPOL_DEFAULT", 0},
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char text[256];
		bool nodes = values[i].value == 5 || values[i].value == 6;
		snprintf(text, sizeof(text), MP("'mode': '%s'%s"), values[i].mode,
			 nodes ? ", 'nodes': '0'" : "");
		is_int(prepare(text, &mp, &msg), 0, "%s prepared", values[i].mode);
		is_int(mp.mode, values[i].value, "%s is %d for the kernel", values[i].mode,
		       values[i].value);
		ok(nodes ? mp.nodemask != NULL : mp.nodemask == NULL && mp.maxnode == 0,
		   "%s: mask %s", values[i].mode, nodes ? "given" : "empty");
		tern_mempolicy_clear(&mp);
	}
	is_int(prepare(MP("'mode': 'MPOL_BIND', 'nodes': '0', 'flags': ['MPOL_F_RELATIVE_NODES', "
			  "'MPOL_F_NUMA_BALANCING']"),
		       &mp, &msg),
	       0, "bind relative balancing");
	is_int(mp.mode, 2 | (1 << 14) | (1 << 13), "flag bits 14 and 13");
	is_str(mp.what, "MPOL_BIND nodes 0 MPOL_F_NUMA_BALANCING|MPOL_F_RELATIVE_NODES",
	       "flags described");
	tern_mempolicy_clear(&mp);

	is_int(prepare(PROC_ONLY_CONFIG, &mp, &msg), 0, "no policy");
	ok(!mp.set, "nothing to apply");

	prepare_err(MP("'mode': 'MPOL_BIND', 'nodes': '2,4'"),
		    "linux.memoryPolicy.nodes: node 4 does not exist on this machine (its nodes: "
		    "0-3)",
		    "node beyond the machine");
	prepare_err(MP("'mode': 'MPOL_PREFERRED', 'nodes': '7'"),
		    "linux.memoryPolicy.nodes: node 7 does not exist on this machine (its nodes: "
		    "0-3)",
		    "preferred node beyond the machine");
	prepare_err(MP("'mode': 'MPOL_BIND', 'nodes': '2-3'"),
		    "linux.memoryPolicy.nodes: none of the nodes 2-3 has memory (nodes with "
		    "memory: 0-1)",
		    "CPU-only nodes");
	is_int(prepare(MP("'mode': 'MPOL_BIND', 'nodes': '1-3'"), &mp, &msg), 0,
	       "one node with memory is enough");
	tern_mempolicy_clear(&mp);
	prepare_err(HEAD PROC ", 'linux': {'resources': {'cpu': {'mems': '0'}}, 'memoryPolicy': "
			      "{'mode': 'MPOL_BIND', 'nodes': '1'}}}",
		    "linux.memoryPolicy.nodes: none of the nodes 1 is in linux.resources.cpu.mems "
		    "(0), the only nodes the container may use",
		    "outside cpu.mems");
	is_int(prepare(HEAD PROC ", 'linux': {'resources': {'cpu': {'mems': '0-1'}}, "
				 "'memoryPolicy': {'mode': 'MPOL_BIND', 'nodes': '1'}}}",
		       &mp, &msg),
	       0, "inside cpu.mems");
	tern_mempolicy_clear(&mp);
	prepare_err(MP("'mode': 'MPOL_INTERLEAVE', 'nodes': '0-4', 'flags': "
		       "['MPOL_F_RELATIVE_NODES']"),
		    "linux.memoryPolicy.nodes: with MPOL_F_RELATIVE_NODES the nodes are positions "
		    "among the container's nodes, and this machine has 4 (0-3); position 4 is "
		    "beyond them",
		    "relative position beyond the machine");
	is_int(prepare(MP("'mode': 'MPOL_INTERLEAVE', 'nodes': '3', 'flags': "
			  "['MPOL_F_RELATIVE_NODES']"),
		       &mp, &msg),
	       0, "relative position 3 of 4 (not checked against has_memory)");
	tern_mempolicy_clear(&mp);

	/* a kernel without NUMA has no node directory */
	char node_dir[256], moved[256];
	snprintf(node_dir, sizeof(node_dir), "%s/node", sysdir);
	snprintf(moved, sizeof(moved), "%s/node.away", sysdir);
	rename(node_dir, moved);
	is_int(prepare(MP("'mode': 'MPOL_LOCAL'"), &mp, &msg), -ENOTSUP, "no NUMA: refused");
	ok(msg && strstr(msg, "linux.memoryPolicy: this kernel (Linux ") == msg &&
	       strstr(msg, ") has no NUMA support (no ") &&
	       strstr(msg, "/node), so no memory "
			   "policies"),
	   "no NUMA: message `%s`", msg ? msg : "");
	free(msg);
	rename(moved, node_dir);
}

static void test_affinity_prepare(void)
{
	oci_exec_cpu_affinity a = {.initial = "0-1,7", .final = "3"};
	tern_cpu_affinity aff;
	tern_error *e = NULL;

	is_int(tern_cpu_affinity_prepare(&a, sysdir, &aff, &e), 0, "affinity on CPUs 0-7");
	ok(aff.initial && aff.final, "both sets built");
	if (aff.initial && aff.final) {
		ok(CPU_ISSET_S(0, aff.size, aff.initial) && CPU_ISSET_S(1, aff.size, aff.initial) &&
		       CPU_ISSET_S(7, aff.size, aff.initial) &&
		       CPU_COUNT_S(aff.size, aff.initial) == 3,
		   "initial is 0,1,7");
		ok(CPU_ISSET_S(3, aff.size, aff.final) && CPU_COUNT_S(aff.size, aff.final) == 1,
		   "final is 3");
	}
	tern_cpu_affinity_clear(&aff);

	a = (oci_exec_cpu_affinity){.initial = "1", .final = NULL};
	is_int(tern_cpu_affinity_prepare(&a, sysdir, &aff, &e), 0, "initial only");
	ok(aff.initial && aff.final == NULL, "no final set: left to the kernel");
	tern_cpu_affinity_clear(&aff);

	a = (oci_exec_cpu_affinity){.initial = "", .final = ""};
	is_int(tern_cpu_affinity_prepare(&a, sysdir, &aff, &e), 0, "empty lists");
	ok(aff.initial == NULL && aff.final == NULL, "empty lists: nothing to set");
	is_int(tern_cpu_affinity_prepare(NULL, sysdir, &aff, &e), 0, "no execCPUAffinity");

	a = (oci_exec_cpu_affinity){.initial = "0", .final = "6-8"};
	is_int(tern_cpu_affinity_prepare(&a, sysdir, &aff, &e), -EINVAL, "CPU 8 refused");
	is_str(e ? e->msg : NULL,
	       "process.execCPUAffinity.final: CPU 8 does not exist on this machine (its CPUs: "
	       "0-7)",
	       "CPU 8: message");
	ok(aff.initial == NULL && aff.final == NULL, "nothing left built");
	tern_error_free(e);
	e = NULL;
	a = (oci_exec_cpu_affinity){.initial = "64"};
	is_int(tern_cpu_affinity_prepare(&a, sysdir, &aff, &e), -EINVAL, "CPU 64 refused");
	is_str(e ? e->msg : NULL,
	       "process.execCPUAffinity.initial: CPU 64 does not exist on this machine (its CPUs: "
	       "0-7)",
	       "CPU 64: message");
	tern_error_free(e);
}

/* ---- this machine's kernel ---- */

static bool have_numa(void)
{
	return access(TERN_SYSFS_SYSTEM "/node/possible", F_OK) == 0;
}

/* Run `fn` in a child (set_mempolicy and sched_setaffinity change the
 * calling thread); its exit status. */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout); /* the child's own lines only, once */
	pid = fork();
	if (pid == 0) {
		int ret = fn(arg);
		fflush(stdout);
		_exit(ret);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* 0 when numa_maps shows `want` as the policy of a page mapped now (its
 * address's line: the first line is not ours under ASan, whose shadow comes
 * first), 1 when another policy, 2 when the line cannot be read. */
static int numa_maps_policy(const char *want)
{
	char line[512] = "", addr[32];
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *f = fopen("/proc/self/numa_maps", "re");
	bool found = false;

	if (page == MAP_FAILED || f == NULL)
		return 2;
	*(volatile char *)page = 1;
	snprintf(addr, sizeof(addr), "%lx ", (unsigned long)page);
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strncmp(line, addr, strlen(addr)) == 0;
	fclose(f);
	if (!found)
		return 2;
	char *sp = strchr(line, ' ');
	if (sp == NULL || strncmp(sp + 1, want, strlen(want)) != 0 || sp[1 + strlen(want)] != ' ') {
		printf("#   numa_maps: %s", line);
		return 1;
	}
	return 0;
}

static int apply_bind0(void *arg)
{
	tern_error *e = NULL;
	if (tern_mempolicy_apply(arg, &e) < 0) {
		printf("#   %s\n", e->msg);
		return 3;
	}
	return numa_maps_policy("bind:0");
}

static int apply_final(void *arg)
{
	tern_error *e = NULL;
	cpu_set_t set;

	if (tern_cpu_affinity_apply_final(arg, &e) < 0) {
		printf("#   %s\n", e->msg);
		return 3;
	}
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 2;
	return CPU_COUNT(&set) == 1 && CPU_ISSET(0, &set) ? 0 : 1;
}

static void test_kernel(void)
{
	tern_mempolicy mp;
	tern_error *e = NULL;
	char *perr = NULL;

	if (!have_numa()) {
		printf("ok %d # skip !!! THIS KERNEL HAS NO NUMA SUPPORT (no %s/node): "
		       "set_mempolicy is not tested here !!!\n",
		       ++tap_count, TERN_SYSFS_SYSTEM);
	} else {
		oci_config *c = parse(MP("'mode': 'MPOL_BIND', 'nodes': '0'"), &perr);
		is_int(tern_mempolicy_prepare(c, NULL, &mp, &e), 0, "bind 0 on this machine");
		is_int(tern_mempolicy_probe(&mp, &e), 0, "this kernel takes MPOL_BIND");
		is_int(in_child(apply_bind0, &mp), 0, "applied: numa_maps says bind:0");
		tern_mempolicy_clear(&mp);
		oci_config_free(c);
		c = parse(MP("'mode': 'MPOL_BIND', 'nodes': '0-1023'"), &perr);
		is_int(tern_mempolicy_prepare(c, NULL, &mp, &e), -EINVAL,
		       "nodes 0-1023: not all on this machine");
		ok(e && strstr(e->msg, "linux.memoryPolicy.nodes: node ") == e->msg &&
		       strstr(e->msg, " does not exist on this machine (its nodes: "),
		   "message `%s`", e ? e->msg : "");
		oci_config_free(c);
	}
	free(perr);
	tern_error_free(e);
	e = NULL;

	oci_exec_cpu_affinity a = {.final = "0"};
	tern_cpu_affinity aff;
	is_int(tern_cpu_affinity_prepare(&a, NULL, &aff, &e), 0, "final 0 on this machine");
	is_int(in_child(apply_final, &aff), 0, "applied: the process runs on CPU 0 only");
	tern_cpu_affinity_clear(&aff);
}

int main(void)
{
	test_id_lists();
	test_names();
	test_parse();
	test_errors();
	test_affinity_parse();
	make_machine();
	test_prepare();
	test_affinity_prepare();
	remove_machine();
	test_kernel();
	return done_testing();
}
