/* linux.intelRdt without resctrl: the schemata line syntax as the kernel
 * reads it, the checks of config.json's lines, the comparison with an
 * existing group's schemata (text as the kernel prints it), and the
 * mon_features list.
 *
 * This machine has no resctrl (no RDT in its CPU, and none in qemu's
 * emulated one), so the part of intel-rdt.c that makes, joins and removes
 * groups is not run by any test here: tests/integration/process-attrs.bats
 * checks only that linux.intelRdt fails cleanly, naming why. Nothing here
 * fakes a resctrl filesystem. */
#include "tap.h"

#include "intel-rdt.h"

#include <stdlib.h>
#include <string.h>

static char *why;

static int parse(const char *text, bool any, tern_rdt_line *l)
{
	free(why);
	why = NULL;
	return tern_rdt_parse_line(text, any, l, &why);
}

static void parse_ok(void)
{
	tern_rdt_line l;

	is_int(parse("L3:0=7ff;1=7ff", false, &l), 0, "L3 with two domains");
	is_str(l.resource, "L3", "resource L3");
	ok(l.n == 2 && l.domains[0].id == 0 && l.domains[0].value == 0x7ff &&
	       l.domains[1].id == 1 && l.domains[1].value == 0x7ff,
	   "domains 0 and 1, mask 0x7ff");
	tern_rdt_line_clear(&l);

	is_int(parse("    MB:0=2048;1=  16", false, &l), 0,
	       "MB as the kernel prints it (name and values padded)");
	is_str(l.resource, "MB", "resource MB");
	ok(l.n == 2 && l.domains[0].value == 2048 && l.domains[1].value == 16,
	   "bandwidths 2048 and 16, in decimal");
	tern_rdt_line_clear(&l);

	is_int(parse("L3DATA:2=3c0;", false, &l), 0, "one ';' may end the line");
	ok(l.n == 1 && l.domains[0].id == 2 && l.domains[0].value == 0x3c0, "domain 2 = 0x3c0");
	tern_rdt_line_clear(&l);

	is_int(parse("L2CODE:0=0x0F", false, &l), 0, "a 0x prefix");
	ok(l.n == 1 && l.domains[0].value == 0xf, "is 0xf");
	tern_rdt_line_clear(&l);

	is_int(parse("L3:0=0000000000000000000ffff", false, &l), 0,
	       "leading zeros do not count towards 64 bits");
	ok(l.n == 1 && l.domains[0].value == 0xffff, "is 0xffff");
	tern_rdt_line_clear(&l);

	is_int(parse("SMBA:0=64", false, &l), 0, "SMBA (AMD's slow memory bandwidth)");
	tern_rdt_line_clear(&l);

	is_int(parse("L3:0=0", false, &l), 0,
	       "an empty mask parses (AMD takes it; Intel's kernel refuses it)");
	tern_rdt_line_clear(&l);

	is_int(parse("NEWRES:3=a b", true, &l), 0, "any resource, when asked");
	ok(l.n == 1 && l.domains[0].text && strcmp(l.domains[0].text, "a b") == 0,
	   "its value kept as text");
	tern_rdt_line_clear(&l);
}

static void parse_bad(void)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
	    {"L3", "no `:` after the resource name"},
	    {":0=f", "no resource name before `:`"},
	    {"L9:0=f",
	     "`L9` is not a resctrl resource (L3, L3CODE, L3DATA, L2, L2CODE, L2DATA, MB or SMBA)"},
	    {"l3:0=f",
	     "`l3` is not a resctrl resource (L3, L3CODE, L3DATA, L2, L2CODE, L2DATA, MB or SMBA)"},
	    {"L3:", "no domain after `L3:`"},
	    {"L3:   ", "`   ` is not ID=VALUE"},
	    {"L3:0", "`0` is not ID=VALUE"},
	    {"L3: 0=f", "domain ` 0` is not a number"},
	    {"L3:x=f", "domain `x` is not a number"},
	    {"L3:-1=f", "domain `-1` is not a number"},
	    {"L3:4294967296=f", "domain `4294967296` is not a number"},
	    {"L3:0=", "no value for domain 0"},
	    {"L3:0=  ", "no value for domain 0"},
	    {"L3:0=fg", "`fg` (domain 0) is not a hexadecimal bit mask of at most 64 bits"},
	    {"L3:0=0x", "`0x` (domain 0) is not a hexadecimal bit mask of at most 64 bits"},
	    {"L3:0=1ffffffffffffffff",
	     "`1ffffffffffffffff` (domain 0) is not a hexadecimal bit mask of at most 64 bits"},
	    {"MB:0=ff", "`ff` (domain 0) is not a bandwidth (a decimal number)"},
	    {"MB:0=-10", "`-10` (domain 0) is not a bandwidth (a decimal number)"},
	    {"MB:0=4294967296", "`4294967296` (domain 0) is not a bandwidth (a decimal number)"},
	    {"L3:0=f;0=3", "domain 0 is given twice"},
	    {"L3:0=f;;1=f", "`` is not ID=VALUE"},
	    {"L3:0=f; ", "` ` is not ID=VALUE"},
	};
	tern_rdt_line l;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(parse(bad[i].line, false, &l) < 0, "`%s` is refused", bad[i].line);
		is_str(why, bad[i].why, "`%s`: why", bad[i].line);
		ok(l.resource == NULL && l.domains == NULL && l.n == 0, "`%s`: nothing kept",
		   bad[i].line);
	}
}

static char *msg;

static int check(oci_intel_rdt *r)
{
	tern_error *e = NULL;
	int ret = tern_rdt_check_config(r, &e);

	free(msg);
	msg = e ? strdup(e->msg) : NULL;
	tern_error_free(e);
	return ret;
}

static void config_checks(void)
{
	char *good[] = {"L2:0=f;1=f", "MB:0=20", "L3:0=1f", NULL};
	char *dup[] = {"L3:0=f", "MB:0=10", "L3:1=3;0=3", NULL};
	char *bad[] = {"L3:0=f", "L9:0=f", NULL};
	char *l3_only[] = {"L3:0=3", NULL};
	oci_intel_rdt r = {0};

	is_int(check(&r), 0, "an empty intelRdt");
	r.clos_id = "guaranteed";
	r.l3_cache_schema = "L3:0=7f0;1=1f";
	r.mem_bw_schema = "MB:0=20;1=70";
	r.schemata = good;
	is_int(check(&r), 0, "the spec's example (closID, schemata) with l3 and MB lines");

	r.schemata = l3_only;
	is_int(check(&r), 0,
	       "l3CacheSchema and schemata may name the same domain (two writes, schemata last)");

	r.l3_cache_schema = "L3CODE:0=f\nL3DATA:0=3";
	is_int(check(&r), 0, "an l3CacheSchema of CDP's two L3 lines");
	r.l3_cache_schema = "L3CODE:0=f\n\nL3CODE:0=3";
	ok(check(&r) < 0, "the same domain twice in l3CacheSchema");
	is_str(msg,
	       "linux.intelRdt.l3CacheSchema: `L3CODE:0=3`: domain 0 of L3CODE is set in "
	       "l3CacheSchema too",
	       "named");
	r.l3_cache_schema = "L2:0=f";
	ok(check(&r) < 0, "an L2 line in l3CacheSchema");
	is_str(msg,
	       "linux.intelRdt.l3CacheSchema: `L2:0=f`: L2 is not an L3 resource (L3, L3CODE or "
	       "L3DATA; the others go in schemata)",
	       "named");
	r.l3_cache_schema = "\n";
	ok(check(&r) < 0, "an l3CacheSchema of only a newline");
	is_str(msg, "linux.intelRdt.l3CacheSchema: no schema line in it", "named");
	r.l3_cache_schema = "L3:0=zz";
	ok(check(&r) < 0, "a bad mask in l3CacheSchema");
	is_str(msg,
	       "linux.intelRdt.l3CacheSchema: `L3:0=zz`: `zz` (domain 0) is not a hexadecimal bit "
	       "mask of at most 64 bits",
	       "named");
	r.l3_cache_schema = NULL;

	r.mem_bw_schema = "MB:0=lots";
	ok(check(&r) < 0, "a bad bandwidth in memBwSchema");
	is_str(msg,
	       "linux.intelRdt.memBwSchema: `MB:0=lots`: `lots` (domain 0) is not a bandwidth (a "
	       "decimal number)",
	       "named");
	r.mem_bw_schema = NULL;

	r.schemata = bad;
	ok(check(&r) < 0, "an unknown resource in schemata[1]");
	is_str(msg,
	       "linux.intelRdt.schemata[1]: `L9:0=f`: `L9` is not a resctrl resource (L3, L3CODE, "
	       "L3DATA, L2, L2CODE, L2DATA, MB or SMBA)",
	       "named with its index");
	r.schemata = dup;
	ok(check(&r) < 0, "domain 0 of L3 in two schemata lines");
	is_str(msg,
	       "linux.intelRdt.schemata[2]: `L3:1=3;0=3`: domain 0 of L3 is set in schemata[0] "
	       "too",
	       "both lines named");
	r.schemata = NULL;

	r.clos_id = "info";
	ok(check(&r) < 0, "closID info (a directory of resctrl itself)");
	is_str(msg, "linux.intelRdt.closID: `info` is a file of resctrl itself, not a group",
	       "named");
	r.clos_id = "tasks";
	ok(check(&r) < 0, "closID tasks");
	r.clos_id = "/";
	is_int(check(&r), 0, "closID / (the default group)");
}

static int compare(const char *current, const char *lines)
{
	free(why);
	why = NULL;
	return tern_rdt_compare(current, lines, &why);
}

static void compare_checks(void)
{
	/* as the kernel prints a group's schemata on an AMD machine with
	 * SMBA: resource names right-aligned, values padded */
	const char *cur = "SMBA:0=2048;1=  64\n"
			  "  MB:0=2048;1=2048\n"
			  "  L3:0=ffff;1=00ff\n";

	is_int(compare(cur, "L3:1=ff\n"), 0, "a mask equal but for its padding");
	is_int(compare(cur, "L3:0=0xFFFF\nMB:1=2048\nSMBA:1=64\n"), 0,
	       "several lines, 0x and upper case");
	is_int(compare(cur, "L3:0=f\nL3:0=ffff\n"), 0, "a later line for the same domain wins");
	ok(compare(cur, "L3:0=ffff;1=ffff\n") < 0, "a different mask");
	is_str(why, "L3 domain 1 is ff there, not ffff", "says which");
	ok(compare(cur, "SMBA:1=16\n") < 0, "a different bandwidth");
	is_str(why, "SMBA domain 1 is 64 there, not 16", "says which");
	ok(compare(cur, "L2:0=f\n") < 0, "a resource the group has not");
	is_str(why, "it has no L2 domain 0", "says which");
	ok(compare(cur, "L3:7=f\n") < 0, "a domain the group has not");
	is_str(why, "it has no L3 domain 7", "says which");
	is_int(compare("L3:0=f\n", ""), 0, "nothing asked, nothing to differ");
	ok(compare("garbage\n", "L3:0=f\n") < 0, "a file that does not parse");
	is_str(why, "no `:` after the resource name", "says why");
}

static int update_check(const char *l3, const char *mb)
{
	tern_error *e = NULL;
	int ret = tern_rdt_check_update(l3, mb, &e);

	free(msg);
	msg = e ? strdup(e->msg) : NULL;
	tern_error_free(e);
	return ret;
}

static void update_checks(void)
{
	is_int(update_check(NULL, NULL), 0, "update without RDT flags");
	is_int(update_check("L3:0=f;1=ff", "MB:0=50"), 0, "--l3-cache-schema and --mem-bw-schema");
	is_int(update_check("L3CODE:0=f", NULL), 0, "an L3CODE line (CDP)");
	ok(update_check("MB:0=10", NULL) < 0, "--l3-cache-schema of an MB line");
	is_str(msg, "--l3-cache-schema `MB:0=10`: MB is not an L3 resource (L3, L3CODE or L3DATA)",
	       "named");
	ok(update_check(NULL, "L3:0=f") < 0, "--mem-bw-schema of an L3 line");
	is_str(msg, "--mem-bw-schema `L3:0=f`: L3 is not MB", "named");
	ok(update_check("L3:0=zz", NULL) < 0, "a bad mask");
	is_str(msg,
	       "--l3-cache-schema `L3:0=zz`: `zz` (domain 0) is not a hexadecimal bit mask of at "
	       "most 64 bits",
	       "named");
	ok(update_check(NULL, "MB:0=10\nMB:1=10") < 0, "two lines");
	is_str(msg, "--mem-bw-schema `MB:0=10\nMB:1=10`: one line only", "named");
}

static void mon_features(void)
{
	const char *f = "llc_occupancy\nmbm_total_bytes\nmbm_total_bytes_config\n";

	ok(tern_rdt_has_mon_feature(f, "llc_occupancy"), "llc_occupancy listed");
	ok(tern_rdt_has_mon_feature(f, "mbm_total_bytes"), "mbm_total_bytes listed");
	ok(!tern_rdt_has_mon_feature(f, "mbm_local_bytes"), "mbm_local_bytes not");
	ok(!tern_rdt_has_mon_feature(f, "mbm_total"), "a prefix is not a match");
	ok(!tern_rdt_has_mon_feature("", "llc_occupancy"), "an empty list has none");
}

int main(void)
{
	parse_ok();
	parse_bad();
	config_checks();
	compare_checks();
	update_checks();
	mon_features();
	free(why);
	free(msg);
	return done_testing();
}
