/* tern features: what this build supports, as the runtime-spec's
 * features.md JSON (the same document `runc features` prints). Every entry
 * reflects what tern really does today: a feature still to come is
 * reported absent or false. */
#include "config.h"

#include "cli.h"
#include "intel-rdt.h"
#include "mounts.h"
#include "oci-config.h"
#include "seccomp.h"
#include "utils.h"

#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <yajl/yajl_gen.h>

static const char usage[] = "Usage: tern features\n"
			    "\n"
			    "Print the features this tern supports as JSON.\n";

static void str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void str_array(yajl_gen g, const char *key, const char *const *items, size_t n)
{
	str(g, key);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++)
		str(g, items[i]);
	yajl_gen_array_close(g);
}

static void boolean(yajl_gen g, const char *key, bool v)
{
	str(g, key);
	yajl_gen_bool(g, v);
}

static int compare_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void capabilities(yajl_gen g)
{
	str(g, "capabilities");
	yajl_gen_array_open(g);
	for (cap_value_t c = 0; c <= CAP_LAST_CAP + 8; c++) {
		if (!CAP_IS_SUPPORTED(c))
			continue;
		char *name = cap_to_name(c);
		if (name == NULL)
			continue;
		/* libcap names them "cap_sys_admin"; the spec writes CAP_SYS_ADMIN */
		char upper[64];
		size_t i = 0;
		for (; name[i] && i < sizeof(upper) - 1; i++)
			upper[i] =
			    (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 : name[i]);
		upper[i] = '\0';
		if (strncmp(upper, "CAP_", 4) == 0)
			str(g, upper);
		cap_free(name);
	}
	yajl_gen_array_close(g);
}

static void seccomp_section(yajl_gen g)
{
	static const char *const actions[] = {
	    "SCMP_ACT_ALLOW",	     "SCMP_ACT_ERRNO",	     "SCMP_ACT_KILL",
	    "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
	    "SCMP_ACT_NOTIFY",	     "SCMP_ACT_TRACE",	     "SCMP_ACT_TRAP"};
	static const char *const operators[] = {"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
						"SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ",
						"SCMP_CMP_NE"};
	/* the OCI names (runtime-spec 1.3's list) of the architectures this
	 * build's libseccomp resolves: seccomp.c takes exactly those */
	static const struct {
		const char *oci, *lib;
	} archs[] = {
	    {"SCMP_ARCH_AARCH64", "aarch64"},
	    {"SCMP_ARCH_ARM", "arm"},
	    {"SCMP_ARCH_LOONGARCH64", "loongarch64"},
	    {"SCMP_ARCH_M68K", "m68k"},
	    {"SCMP_ARCH_MIPS", "mips"},
	    {"SCMP_ARCH_MIPS64", "mips64"},
	    {"SCMP_ARCH_MIPS64N32", "mips64n32"},
	    {"SCMP_ARCH_MIPSEL", "mipsel"},
	    {"SCMP_ARCH_MIPSEL64", "mipsel64"},
	    {"SCMP_ARCH_MIPSEL64N32", "mipsel64n32"},
	    {"SCMP_ARCH_PARISC", "parisc"},
	    {"SCMP_ARCH_PARISC64", "parisc64"},
	    {"SCMP_ARCH_PPC", "ppc"},
	    {"SCMP_ARCH_PPC64", "ppc64"},
	    {"SCMP_ARCH_PPC64LE", "ppc64le"},
	    {"SCMP_ARCH_RISCV64", "riscv64"},
	    {"SCMP_ARCH_S390", "s390"},
	    {"SCMP_ARCH_S390X", "s390x"},
	    {"SCMP_ARCH_SH", "sh"},
	    {"SCMP_ARCH_SHEB", "sheb"},
	    {"SCMP_ARCH_X32", "x32"},
	    {"SCMP_ARCH_X86", "x86"},
	    {"SCMP_ARCH_X86_64", "x86_64"},
	};

	str(g, "seccomp");
	yajl_gen_map_open(g);
	boolean(g, "enabled", true);
	str_array(g, "actions", actions, sizeof(actions) / sizeof(actions[0]));
	str_array(g, "operators", operators, sizeof(operators) / sizeof(operators[0]));
	str(g, "archs");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (seccomp_arch_resolve_name(archs[i].lib) != 0)
			str(g, archs[i].oci);
	yajl_gen_array_close(g);
	/* known: the names tern accepts; supported: those this kernel takes */
	const char *flags[16];
	size_t nflags = tern_seccomp_known_flags(flags, sizeof(flags) / sizeof(flags[0]));
	str_array(g, "knownFlags", flags, nflags);
	str(g, "supportedFlags");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < nflags; i++)
		if (tern_seccomp_flag_supported(flags[i]))
			str(g, flags[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

/* linux.intelRdt (intel-rdt.c), schemata and enableMonitoring included.
 * Unlike the other entries (and runc, which says true everywhere), from
 * this host: tern implements it all, but without resctrl mounted a config
 * asking for it fails, and a client should know before it sends one. */
static void intel_rdt_section(yajl_gen g)
{
	bool here = tern_rdt_available();

	str(g, "intelRdt");
	yajl_gen_map_open(g);
	boolean(g, "enabled", here);
	boolean(g, "schemata", here);
	boolean(g, "monitoring", here);
	yajl_gen_map_close(g);
}

/* linux.memoryPolicy (features-linux.md): the modes and flags tern
 * accepts, from libocispec's one list of them. The spec's meaning:
 * recognized, whether or not this host's kernel has them (numa.c says
 * which it lacks when a container asks). */
static void memory_policy_section(yajl_gen g)
{
	str(g, "memoryPolicy");
	yajl_gen_map_open(g);
	str(g, "modes");
	yajl_gen_array_open(g);
	for (int m = 0; m < OCI_MPOL_MODE_COUNT; m++)
		str(g, oci_mpol_mode_name((oci_mpol_mode)m));
	yajl_gen_array_close(g);
	str(g, "flags");
	yajl_gen_array_open(g);
	for (int f = 0; f < OCI_MPOL_FLAG_COUNT; f++)
		str(g, oci_mpol_flag_name((oci_mpol_flag)f));
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

int tern_cmd_features(tern_global_opts *g_opts, int argc, char **argv)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	static const char *const hooks[] = {"prestart",	      "createRuntime", "createContainer",
					    "startContainer", "poststart",     "poststop"};
	static const char *const namespaces[] = {"cgroup", "ipc",  "mount", "network",
						 "pid",	   "time", "user",  "uts"};
	const char *opts[256];
	const unsigned char *buf;
	size_t len, nopts;
	char libseccomp_version[32];
	const struct scmp_version *sv = seccomp_version();

	(void)g_opts;
	tern_cli_reset();
	while (tern_cli_next(argc, argv, "h", longopts, usage) != -1)
		;
	tern_cli_require_args(argc, argv, 0, true, "features", usage);

	nopts = tern_mount_option_names(opts, sizeof(opts) / sizeof(opts[0]));
	if (nopts > sizeof(opts) / sizeof(opts[0]))
		nopts = sizeof(opts) / sizeof(opts[0]);
	qsort(opts, nopts, sizeof(opts[0]), compare_str);

	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "    ");
	yajl_gen_map_open(g);
	str(g, "ociVersionMin");
	str(g, "1.0.0");
	str(g, "ociVersionMax");
	str(g, TERN_OCI_VERSION);
	str_array(g, "hooks", hooks, sizeof(hooks) / sizeof(hooks[0]));
	str_array(g, "mountOptions", opts, nopts);
	str(g, "linux");
	yajl_gen_map_open(g);
	str_array(g, "namespaces", namespaces, sizeof(namespaces) / sizeof(namespaces[0]));
	capabilities(g);
	str(g, "cgroup");
	yajl_gen_map_open(g);
	boolean(g, "v1", true);
	boolean(g, "v2", true);
	boolean(g, "systemd", true); /* --systemd-cgroup (when systemd is PID 1) */
	boolean(g, "systemdUser", false); /* no user-bus scopes (rootless) yet */
	boolean(g, "rdma", true);	  /* linux.resources.rdma, v1 and v2 */
	yajl_gen_map_close(g);
	seccomp_section(g);
	str(g, "mountExtensions"); /* idmapped mounts: idmap.c */
	yajl_gen_map_open(g);
	str(g, "idmap");
	yajl_gen_map_open(g);
	boolean(g, "enabled", true);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	str(g, "apparmor");
	yajl_gen_map_open(g);
	boolean(g, "enabled", true); /* compiled in (the spec's meaning), whatever the host has */
	yajl_gen_map_close(g);
	str(g, "selinux");
	yajl_gen_map_open(g);
	boolean(g, "enabled", true); /* likewise; libselinux is always linked */
	yajl_gen_map_close(g);
	intel_rdt_section(g);
	str(g, "netDevices"); /* linux.netDevices: netdev.c */
	yajl_gen_map_open(g);
	boolean(g, "enabled", true);
	yajl_gen_map_close(g);
	memory_policy_section(g);
	yajl_gen_map_close(g);
	str(g, "annotations");
	yajl_gen_map_open(g);
	snprintf(libseccomp_version, sizeof(libseccomp_version), "%u.%u.%u", sv ? sv->major : 0,
		 sv ? sv->minor : 0, sv ? sv->micro : 0);
	str(g, "io.github.seccomp.libseccomp.version");
	str(g, libseccomp_version);
	/* checkpoint and restore through CRIU (libcriu is always linked),
	 * as runc's org.opencontainers.runc.checkpoint.enabled says it */
	str(g, "org.tern.checkpoint.enabled");
	str(g, "true");
	/* run by root, containers with a user namespace (id maps, idmapped
	 * mounts) are checkpointed, restored and snapshotted too */
	str(g, "org.tern.checkpoint.userns.enabled");
	str(g, "true");
	/* without root, criu (4.2) can neither dump a container's user
	 * namespace nor tern restore outside one: refused, with the reason
	 * (criu-rootless.h). The same for every caller: features says what
	 * tern does, not who asks. */
	str(g, "org.tern.checkpoint.rootless.enabled");
	str(g, "false");
	str(g, "org.tern.version");
	str(g, PACKAGE_VERSION);
	yajl_gen_map_close(g);
	/* config.json annotations that change what tern does: none, tern
	 * reads none (it only hands them on, in the state) */
	str_array(g, "potentiallyUnsafeConfigAnnotations", NULL, 0);
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	fwrite(buf, 1, len, stdout);
	yajl_gen_free(g);
	return 0;
}
