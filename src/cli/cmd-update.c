/* tern update [options] ID: change a container's resource limits. */
#include "cli.h"
#include "container-cgroup.h"
#include "intel-rdt.h"
#include "utils.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: tern update [options] CONTAINER-ID\n"
    "\n"
    "Update the resource limits of a container.\n"
    "\n"
    "Options:\n"
    "  -r, --resources FILE        linux.resources JSON from FILE, or - for stdin\n"
    "                              (then every other option is ignored)\n"
    "  --memory BYTES              memory limit (suffixes k m g t; -1 unlimited)\n"
    "  --memory-reservation BYTES  soft limit\n"
    "  --memory-swap BYTES         memory + swap limit (-1 unlimited)\n"
    "  --kernel-memory BYTES       kernel memory limit (cgroup v1 only)\n"
    "  --kernel-memory-tcp BYTES   kernel TCP buffer limit (cgroup v1 only)\n"
    "  --cpu-share N               CPU shares (relative weight)\n"
    "  --cpu-quota N               CFS quota in microseconds per period (-1 none)\n"
    "  --cpu-period N              CFS period in microseconds\n"
    "  --cpu-rt-runtime N          realtime runtime in microseconds\n"
    "  --cpu-rt-period N           realtime period in microseconds\n"
    "  --cpuset-cpus LIST          CPUs to use, e.g. 0-1,3\n"
    "  --cpuset-mems LIST          memory nodes to use\n"
    "  --pids-limit N              maximum number of processes (-1 unlimited)\n"
    "  --blkio-weight N            block IO weight, 10 to 1000\n"
    "  --l3-cache-schema LINE      the L3 line of the container's resctrl group\n"
    "                              schemata (linux.intelRdt), e.g. L3:0=f;1=ff\n"
    "  --mem-bw-schema LINE        its MB line, e.g. MB:0=50;1=70\n"
    "  -h, --help                  this help\n";

int tern_update_parse_bytes(const char *opt, const char *s, int64_t *out, tern_error **err)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	int64_t mult = 1;

	if (errno || end == s)
		return tern_error_make(err, EINVAL, "--%s `%s`: expected a size", opt, s);
	if (strcmp(s, "-1") == 0) {
		*out = -1;
		return 0;
	}
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'b':
		end++;
		break;
	case 'k':
		mult = 1LL << 10;
		end++;
		break;
	case 'm':
		mult = 1LL << 20;
		end++;
		break;
	case 'g':
		mult = 1LL << 30;
		end++;
		break;
	case 't':
		mult = 1LL << 40;
		end++;
		break;
	default:
		return tern_error_make(err, EINVAL, "--%s `%s`: unknown size suffix", opt, s);
	}
	if (mult > 1 && (*end == 'b' || *end == 'B'))
		end++;
	/* !(v >= 0): NaN too; inf and anything past int64 would be an
	 * undefined conversion */
	if (*end != '\0' || !(v >= 0))
		return tern_error_make(err, EINVAL, "--%s `%s`: expected a size", opt, s);
	if (!(v * (double)mult < 0x1p63))
		return tern_error_make(err, ERANGE, "--%s `%s`: too large", opt, s);
	*out = (int64_t)(v * (double)mult);
	return 0;
}

static int parse_i64(const char *opt, const char *s, int64_t *out, tern_error **err)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return tern_error_make(err, EINVAL, "--%s `%s`: expected an integer", opt, s);
	*out = v;
	return 0;
}

static oci_memory *memory_of(oci_resources *r)
{
	if (r->memory == NULL)
		r->memory = tern_xmalloc0(sizeof(*r->memory));
	return r->memory;
}

static oci_cpu *cpu_of(oci_resources *r)
{
	if (r->cpu == NULL)
		r->cpu = tern_xmalloc0(sizeof(*r->cpu));
	return r->cpu;
}

static int read_resources(const char *path, oci_resources **out, tern_error **err)
{
	cleanup_free char *data = NULL;
	char *msg = NULL;
	size_t len;
	int ret;

	if (strcmp(path, "-") == 0)
		ret = tern_read_fd_all(STDIN_FILENO, &data, &len, 0);
	else
		ret = tern_read_file(path, &data, &len, 0, err);
	if (ret < 0)
		return strcmp(path, "-") == 0 ? tern_error_make(err, -ret, "--resources: stdin")
					      : tern_error_wrap(err, "--resources");
	ret =
	    oci_resources_parse_data(data, len, strcmp(path, "-") == 0 ? "stdin" : path, out, &msg);
	if (ret < 0) {
		tern_error_make_literal(err, -ret, msg ? msg : "--resources: invalid");
		free(msg);
	}
	return ret;
}

/* The long options without a short one. */
enum {
	OPT_MEMORY = 256,
	OPT_MEMRES,
	OPT_MEMSWAP,
	OPT_KMEM,
	OPT_KMEMTCP,
	OPT_SHARES,
	OPT_QUOTA,
	OPT_PERIOD,
	OPT_RTRUNTIME,
	OPT_RTPERIOD,
	OPT_CPUS,
	OPT_MEMS,
	OPT_PIDS,
	OPT_BLKIO,
	OPT_L3,
	OPT_MBA,
};

static const struct option longopts[] = {
    {"resources", required_argument, NULL, 'r'},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"memory-reservation", required_argument, NULL, OPT_MEMRES},
    {"memory-swap", required_argument, NULL, OPT_MEMSWAP},
    {"kernel-memory", required_argument, NULL, OPT_KMEM},
    {"kernel-memory-tcp", required_argument, NULL, OPT_KMEMTCP},
    {"cpu-share", required_argument, NULL, OPT_SHARES},
    {"cpu-quota", required_argument, NULL, OPT_QUOTA},
    {"cpu-period", required_argument, NULL, OPT_PERIOD},
    {"cpu-rt-runtime", required_argument, NULL, OPT_RTRUNTIME},
    {"cpu-rt-period", required_argument, NULL, OPT_RTPERIOD},
    {"cpuset-cpus", required_argument, NULL, OPT_CPUS},
    {"cpuset-mems", required_argument, NULL, OPT_MEMS},
    {"pids-limit", required_argument, NULL, OPT_PIDS},
    {"blkio-weight", required_argument, NULL, OPT_BLKIO},
    {"l3-cache-schema", required_argument, NULL, OPT_L3},
    {"mem-bw-schema", required_argument, NULL, OPT_MBA},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One of the options that set a limit of linux.resources in `r`. */
static int set_limit(int c, oci_resources *r, tern_error **err)
{
	int64_t v;
	int ret = 0;

	switch (c) {
	case OPT_MEMORY:
		if ((ret = tern_update_parse_bytes("memory", optarg, &v, err)) == 0)
			memory_of(r)->limit = (oci_opt_int64){true, v};
		break;
	case OPT_MEMRES:
		if ((ret = tern_update_parse_bytes("memory-reservation", optarg, &v, err)) == 0)
			memory_of(r)->reservation = (oci_opt_int64){true, v};
		break;
	case OPT_MEMSWAP:
		if ((ret = tern_update_parse_bytes("memory-swap", optarg, &v, err)) == 0)
			memory_of(r)->swap = (oci_opt_int64){true, v};
		break;
	case OPT_KMEM:
		if ((ret = tern_update_parse_bytes("kernel-memory", optarg, &v, err)) == 0)
			memory_of(r)->kernel = (oci_opt_int64){true, v};
		break;
	case OPT_KMEMTCP:
		if ((ret = tern_update_parse_bytes("kernel-memory-tcp", optarg, &v, err)) == 0)
			memory_of(r)->kernel_tcp = (oci_opt_int64){true, v};
		break;
	case OPT_SHARES:
		if ((ret = parse_i64("cpu-share", optarg, &v, err)) == 0 && v < 0)
			ret = tern_error_make(err, EINVAL, "--cpu-share `%s`: must not be negative",
					      optarg);
		if (ret == 0)
			cpu_of(r)->shares = (oci_opt_uint64){true, (uint64_t)v};
		break;
	case OPT_QUOTA:
		if ((ret = parse_i64("cpu-quota", optarg, &v, err)) == 0)
			cpu_of(r)->quota = (oci_opt_int64){true, v};
		break;
	case OPT_PERIOD:
		if ((ret = parse_i64("cpu-period", optarg, &v, err)) == 0 && v < 0)
			ret = tern_error_make(err, EINVAL,
					      "--cpu-period `%s`: must not be negative", optarg);
		if (ret == 0)
			cpu_of(r)->period = (oci_opt_uint64){true, (uint64_t)v};
		break;
	case OPT_RTRUNTIME:
		if ((ret = parse_i64("cpu-rt-runtime", optarg, &v, err)) == 0)
			cpu_of(r)->realtime_runtime = (oci_opt_int64){true, v};
		break;
	case OPT_RTPERIOD:
		if ((ret = parse_i64("cpu-rt-period", optarg, &v, err)) == 0 && v < 0)
			ret = tern_error_make(err, EINVAL,
					      "--cpu-rt-period `%s`: must not be negative", optarg);
		if (ret == 0)
			cpu_of(r)->realtime_period = (oci_opt_uint64){true, (uint64_t)v};
		break;
	case OPT_CPUS:
		free(cpu_of(r)->cpus);
		r->cpu->cpus = tern_xstrdup(optarg);
		break;
	case OPT_MEMS:
		free(cpu_of(r)->mems);
		r->cpu->mems = tern_xstrdup(optarg);
		break;
	case OPT_PIDS:
		if ((ret = parse_i64("pids-limit", optarg, &v, err)) == 0)
			r->pids_limit = (oci_opt_int64){true, v};
		break;
	case OPT_BLKIO:
		if ((ret = parse_i64("blkio-weight", optarg, &v, err)) == 0 && (v < 10 || v > 1000))
			ret = tern_error_make(
			    err, EINVAL, "--blkio-weight `%s`: must be from 10 to 1000", optarg);
		if (ret == 0) {
			if (r->block_io == NULL)
				r->block_io = tern_xmalloc0(sizeof(*r->block_io));
			r->block_io->weight = (oci_opt_uint64){true, (uint64_t)v};
		}
		break;
	}
	return ret;
}

int tern_cmd_update(tern_global_opts *g, int argc, char **argv)
{
	cleanup_error tern_error *err = NULL;
	oci_resources *r = tern_xmalloc0(sizeof(*r));
	const char *resources_file = NULL, *l3 = NULL, *mb = NULL;
	int c, ret = 0;

	tern_cli_reset();
	while (ret == 0 && (c = tern_cli_next(argc, argv, "r:h", longopts, usage)) != -1) {
		switch (c) {
		case 'r':
			resources_file = optarg;
			break;
		case OPT_L3:
			l3 = optarg;
			break;
		case OPT_MBA:
			mb = optarg;
			break;
		default:
			ret = set_limit(c, r, &err);
			break;
		}
	}
	if (ret == 0)
		ret = tern_rdt_check_update(l3, mb, &err);
	if (ret == 0)
		tern_cli_require_args(argc, argv, 1, true, "update", usage);
	if (ret == 0 && resources_file) {
		oci_resources_free(r);
		r = NULL;
		ret = read_resources(resources_file, &r, &err);
	}
	/* resctrl first: a container without a group fails before its
	 * cgroup limits change */
	if (ret == 0 && (l3 || mb))
		ret = tern_container_update_rdt(&g->rt, argv[optind], l3, mb, &err);
	if (ret == 0)
		ret = tern_container_update(&g->rt, argv[optind], r, &err);
	oci_resources_free(r);
	return ret < 0 ? tern_error_report(err) : 0;
}
