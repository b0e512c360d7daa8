/* linux.intelRdt: see intel-rdt.h for the rules and what this file owns.
 *
 * The schemata syntax is the kernel's (Documentation/filesystems/resctrl.rst
 * and how the kernel reads a write): one resource a line, "NAME:ID=VALUE"
 * with ';' between domains, blanks allowed around the name and the values,
 * not around the ids; bit masks in hexadecimal, bandwidths in decimal. */
#include "intel-rdt.h"
#include "log.h"
#include "mountinfo.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- schema lines ---- */

/* The resources resctrl has: caches take a hexadecimal capacity bit mask,
 * the memory bandwidths a decimal value (a percentage, MiB/s with the
 * mba_MBps mount option, or AMD's 1/8 GB/s units). */
static const struct {
	const char *name;
	bool cache;
} known_resources[] = {
    {"L3", true},     {"L3CODE", true}, {"L3DATA", true}, {"L2", true},
    {"L2CODE", true}, {"L2DATA", true}, {"MB", false},	  {"SMBA", false},
};
#define KNOWN_LIST "L3, L3CODE, L3DATA, L2, L2CODE, L2DATA, MB or SMBA"

/* -1: not one tern knows; 1: a cache; 0: a bandwidth */
static int resource_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(known_resources) / sizeof(known_resources[0]); i++)
		if (strcmp(name, known_resources[i].name) == 0)
			return known_resources[i].cache;
	return -1;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A copy of [s, s+len) without the blanks at either end. */
static char *trimmed(const char *s, size_t len)
{
	while (len > 0 && blank(*s))
		s++, len--;
	while (len > 0 && blank(s[len - 1]))
		len--;
	return tern_strdup_printf("%.*s", (int)len, s);
}

static bool parse_hex(const char *s, uint64_t *out)
{
	size_t digits = 0;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (*s == '\0')
		return false;
	for (; *s; s++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (v == 0 && d == 0)
			continue; /* leading zeros: the kernel prints masks padded */
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

static bool parse_dec(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

void tern_rdt_line_clear(tern_rdt_line *line)
{
	for (size_t i = 0; i < line->n; i++)
		free(line->domains[i].text);
	free(line->domains);
	free(line->resource);
	memset(line, 0, sizeof(*line));
}

/* One "ID=VALUE" of a line of resource `kind` (see resource_kind). */
static int parse_domain(const char *elem, size_t len, int kind, tern_rdt_line *out, char **why)
{
	const char *eq = memchr(elem, '=', len);
	cleanup_free char *id = NULL, *value = NULL;
	tern_rdt_domain d = {0};
	uint64_t n;

	if (eq == NULL) {
		*why = tern_strdup_printf("`%.*s` is not ID=VALUE", (int)len, elem);
		return -1;
	}
	id = tern_strdup_printf("%.*s", (int)(eq - elem), elem);
	value = trimmed(eq + 1, len - (size_t)(eq + 1 - elem));
	/* the kernel reads the id as it is: no blanks around it */
	if (!parse_dec(id, UINT32_MAX, &n)) {
		*why = tern_strdup_printf("domain `%s` is not a number", id);
		return -1;
	}
	d.id = (unsigned long)n;
	if (value[0] == '\0') {
		*why = tern_strdup_printf("no value for domain %lu", d.id);
		return -1;
	}
	if (kind == 1 && !parse_hex(value, &d.value)) {
		*why = tern_strdup_printf("`%s` (domain %lu) is not a hexadecimal bit mask of at "
					  "most 64 bits",
					  value, d.id);
		return -1;
	}
	if (kind == 0 && !parse_dec(value, UINT32_MAX, &d.value)) {
		*why = tern_strdup_printf("`%s` (domain %lu) is not a bandwidth (a decimal number)",
					  value, d.id);
		return -1;
	}
	for (size_t i = 0; i < out->n; i++)
		if (out->domains[i].id == d.id) {
			*why = tern_strdup_printf("domain %lu is given twice", d.id);
			return -1;
		}
	if (kind < 0)
		d.text = steal_pointer(&value);
	out->domains = realloc(out->domains, (out->n + 1) * sizeof(*out->domains));
	if (out->domains == NULL)
		abort();
	out->domains[out->n++] = d;
	return 0;
}

int tern_rdt_parse_line(const char *line, bool any_resource, tern_rdt_line *out, char **why)
{
	const char *colon = strchr(line, ':'), *p;
	int kind;

	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (colon == NULL) {
		*why = tern_xstrdup("no `:` after the resource name");
		return -1;
	}
	out->resource = trimmed(line, (size_t)(colon - line));
	if (out->resource[0] == '\0') {
		*why = tern_xstrdup("no resource name before `:`");
		goto fail;
	}
	kind = resource_kind(out->resource);
	if (kind < 0 && !any_resource) {
		*why = tern_strdup_printf("`%s` is not a resctrl resource (" KNOWN_LIST ")",
					  out->resource);
		goto fail;
	}
	p = colon + 1;
	if (*p == '\0') {
		*why = tern_strdup_printf("no domain after `%s:`", out->resource);
		goto fail;
	}
	/* As the kernel reads it: ';' between domains, and one may end the
	 * line; an empty domain anywhere else is an error. */
	while (*p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (parse_domain(p, len, kind, out, why) < 0)
			goto fail;
		p = end ? end + 1 : p + len;
	}
	return 0;
fail:
	tern_rdt_line_clear(out);
	return -1;
}

/* ---- the checks of config.json ---- */

/* The names at the top of a resctrl mount that are not groups. */
static const char *const resctrl_own_names[] = {
    "info",
    "mon_groups",
    "mon_data",
    "tasks",
    "cpus",
    "cpus_list",
    "schemata",
    "size",
    "mode",
    "ctrl_hw_id",
    "mon_hw_id",
    "mba_MBps_event",
    "mbm_L3_assignments",
};

static bool resctrl_own_name(const char *name)
{
	for (size_t i = 0; i < sizeof(resctrl_own_names) / sizeof(resctrl_own_names[0]); i++)
		if (strcmp(name, resctrl_own_names[i]) == 0)
			return true;
	return false;
}

/* One line of the config, parsed, with where it came from. */
typedef struct {
	char field[64]; /* "l3CacheSchema", "schemata[2]" */
	const char *text;
	int write; /* 1: l3CacheSchema and memBwSchema; 2: schemata */
	tern_rdt_line line;
} config_line;

typedef struct {
	config_line *items;
	size_t n;
	char *l3_copy; /* l3CacheSchema, split in place at its newlines */
} config_lines;

static void config_lines_clear(config_lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		tern_rdt_line_clear(&ls->items[i].line);
	free(ls->items);
	free(ls->l3_copy);
	memset(ls, 0, sizeof(*ls));
}

static int add_line(config_lines *ls, const char *field, const char *text, int write,
		    tern_error **err)
{
	config_line *l;
	char *why = NULL;

	ls->items = realloc(ls->items, (ls->n + 1) * sizeof(*ls->items));
	if (ls->items == NULL)
		abort();
	l = &ls->items[ls->n];
	memset(l, 0, sizeof(*l));
	snprintf(l->field, sizeof(l->field), "%s", field);
	l->text = text;
	l->write = write;
	if (tern_rdt_parse_line(text, false, &l->line, &why) < 0) {
		int ret = tern_error_make_quiet(err, EINVAL, "linux.intelRdt.%s: `%s`: %s", field,
						text, why);
		free(why);
		return ret;
	}
	ls->n++;
	return 0;
}

/* Every line of the config, in the order they are written. */
static int collect_lines(const oci_intel_rdt *rdt, config_lines *ls, tern_error **err)
{
	int ret;

	memset(ls, 0, sizeof(*ls));
	if (rdt->l3_cache_schema) {
		/* One line, the spec says (SHOULD); several, one per L3
		 * resource (L3CODE and L3DATA with CDP), are taken too. */
		ls->l3_copy = tern_xstrdup(rdt->l3_cache_schema);
		char *save = NULL;
		size_t k = 0;
		for (char *t = strtok_r(ls->l3_copy, "\n", &save); t;
		     t = strtok_r(NULL, "\n", &save), k++) {
			ret = add_line(ls, "l3CacheSchema", t, 1, err);
			if (ret < 0)
				return ret;
			if (strncmp(ls->items[ls->n - 1].line.resource, "L3", 2) != 0)
				return tern_error_make_quiet(
				    err, EINVAL,
				    "linux.intelRdt.l3CacheSchema: `%s`: %s is not an L3 "
				    "resource (L3, L3CODE or L3DATA; the others go in schemata)",
				    t, ls->items[ls->n - 1].line.resource);
		}
		if (k == 0)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.intelRdt.l3CacheSchema: no schema line in it");
	}
	if (rdt->mem_bw_schema) {
		ret = add_line(ls, "memBwSchema", rdt->mem_bw_schema, 1, err);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; rdt->schemata && rdt->schemata[i]; i++) {
		char field[32];
		snprintf(field, sizeof(field), "schemata[%zu]", i);
		ret = add_line(ls, field, rdt->schemata[i], 2, err);
		if (ret < 0)
			return ret;
	}
	/* The kernel takes one value per domain of a resource in a write
	 * ("Duplicate domain"): within each of the two, say where. */
	for (size_t i = 0; i < ls->n; i++)
		for (size_t j = 0; j < i; j++) {
			const config_line *a = &ls->items[j], *b = &ls->items[i];
			if (a->write != b->write || strcmp(a->line.resource, b->line.resource) != 0)
				continue;
			for (size_t x = 0; x < b->line.n; x++)
				for (size_t y = 0; y < a->line.n; y++)
					if (b->line.domains[x].id == a->line.domains[y].id)
						return tern_error_make_quiet(
						    err, EINVAL,
						    "linux.intelRdt.%s: `%s`: domain %lu of %s "
						    "is set in %s too",
						    b->field, b->text, b->line.domains[x].id,
						    b->line.resource, a->field);
		}
	return 0;
}

int tern_rdt_check_config(const oci_intel_rdt *rdt, tern_error **err)
{
	config_lines ls;
	int ret;

	if (rdt->clos_id && resctrl_own_name(rdt->clos_id))
		return tern_error_make_quiet(err, EINVAL,
					     "linux.intelRdt.closID: `%s` is a file of resctrl "
					     "itself, not a group",
					     rdt->clos_id);
	ret = collect_lines(rdt, &ls, err);
	config_lines_clear(&ls);
	return ret;
}

/* ---- comparing with an existing group ---- */

static bool same_value(const tern_rdt_domain *a, const tern_rdt_domain *b)
{
	if (a->text || b->text)
		return a->text && b->text && strcmp(a->text, b->text) == 0;
	return a->value == b->value;
}

static void format_value(char *buf, size_t len, const char *resource, const tern_rdt_domain *d)
{
	if (d->text)
		snprintf(buf, len, "%s", d->text);
	else if (resource_kind(resource) == 1)
		snprintf(buf, len, "%" PRIx64, d->value);
	else
		snprintf(buf, len, "%" PRIu64, d->value);
}

/* Split text into parsed lines (blank lines skipped). */
static int parse_text(const char *text, bool any_resource, tern_rdt_line **lines, size_t *n,
		      char **why)
{
	cleanup_free char *copy = tern_xstrdup(text);
	char *save = NULL;

	*lines = NULL;
	*n = 0;
	for (char *t = strtok_r(copy, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		tern_rdt_line l;
		if (t[strspn(t, " \t")] == '\0')
			continue;
		if (tern_rdt_parse_line(t, any_resource, &l, why) < 0)
			return -1;
		*lines = realloc(*lines, (*n + 1) * sizeof(**lines));
		if (*lines == NULL)
			abort();
		(*lines)[(*n)++] = l;
	}
	return 0;
}

static void free_lines(tern_rdt_line *lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tern_rdt_line_clear(&lines[i]);
	free(lines);
}

static const tern_rdt_domain *find_domain(const tern_rdt_line *lines, size_t n,
					  const char *resource, unsigned long id)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(lines[i].resource, resource) != 0)
			continue;
		for (size_t j = 0; j < lines[i].n; j++)
			if (lines[i].domains[j].id == id)
				return &lines[i].domains[j];
	}
	return NULL;
}

int tern_rdt_compare(const char *current, const char *lines, char **why)
{
	tern_rdt_line *have = NULL, *want = NULL;
	size_t nhave = 0, nwant = 0;
	int ret = 0;

	*why = NULL;
	if (parse_text(current, true, &have, &nhave, why) < 0 ||
	    parse_text(lines, true, &want, &nwant, why) < 0) {
		ret = -1;
		goto out;
	}
	for (size_t i = 0; i < nwant && ret == 0; i++)
		for (size_t j = 0; j < want[i].n && ret == 0; j++) {
			const tern_rdt_domain *w = &want[i].domains[j];
			const tern_rdt_domain *h =
			    find_domain(have, nhave, want[i].resource, w->id);
			char a[32], b[32];
			/* a later line for the same domain wins */
			if (find_domain(want + i + 1, nwant - i - 1, want[i].resource, w->id))
				continue;
			format_value(a, sizeof(a), want[i].resource, w);
			if (h == NULL) {
				*why = tern_strdup_printf("it has no %s domain %lu",
							  want[i].resource, w->id);
				ret = -1;
			} else if (!same_value(h, w)) {
				format_value(b, sizeof(b), want[i].resource, h);
				*why = tern_strdup_printf("%s domain %lu is %s there, not %s",
							  want[i].resource, w->id, b, a);
				ret = -1;
			}
		}
out:
	free_lines(have, nhave);
	free_lines(want, nwant);
	return ret;
}

bool tern_rdt_has_mon_feature(const char *mon_features, const char *event)
{
	size_t len = strlen(event);

	for (const char *p = mon_features; p && *p;) {
		const char *end = strchr(p, '\n');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (l == len && strncmp(p, event, len) == 0)
			return true;
		p = end ? end + 1 : p + l;
	}
	return false;
}

/* ---- resctrl on this host ---- */

static bool filesystem_known(const char *name)
{
	FILE *f = fopen("/proc/filesystems", "re");
	char *line = NULL;
	size_t cap = 0, len = strlen(name);
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		const char *fs = strrchr(line, '\t');
		fs = fs ? fs + 1 : line;
		found = strncmp(fs, name, len) == 0 && (fs[len] == '\n' || fs[len] == '\0');
	}
	free(line);
	fclose(f);
	return found;
}

/* The mount point of the first resctrl mount in our mount namespace (the
 * spec's "runtime mount namespace"), or NULL. */
static char *resctrl_mount(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *found = NULL;
	size_t cap = 0;

	if (f == NULL)
		return NULL;
	while (found == NULL && getline(&line, &cap, f) > 0) {
		tern_mountinfo_line m;
		line[strcspn(line, "\n")] = '\0';
		if (tern_mountinfo_parse(line, &m) && strcmp(m.fstype, "resctrl") == 0)
			found = tern_mountinfo_unescape(m.mountpoint);
	}
	free(line);
	fclose(f);
	return found;
}

static int find_resctrl(char **root, tern_error **err)
{
	*root = NULL;
	/* Registered only where the CPU has RDT (or AMD QoS) and the kernel
	 * was built with it: Linux makes no resctrl at all otherwise. */
	if (!filesystem_known("resctrl"))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "linux.intelRdt: resctrl is not available on this host: the kernel has no "
		    "resctrl filesystem (none in /proc/filesystems), so this CPU has no Intel "
		    "RDT or AMD QoS, or the kernel was built without them");
	*root = resctrl_mount();
	if (*root == NULL)
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "linux.intelRdt: resctrl is not mounted on this host (mount -t resctrl "
		    "resctrl /sys/fs/resctrl)");
	return 0;
}

bool tern_rdt_available(void)
{
	cleanup_free char *root = NULL;
	tern_error *err = NULL;
	bool ok = find_resctrl(&root, &err) == 0;

	tern_error_free(err);
	return ok;
}

/* " (resctrl: <info/last_cmd_status>)" when it says more than "ok". */
static char *kernel_says(const char *root)
{
	cleanup_free char *path = tern_strdup_printf("%s/info/last_cmd_status", root);
	cleanup_free char *text = NULL;
	size_t len = 0;

	if (tern_read_file(path, &text, &len, 4096, NULL) < 0)
		return tern_xstrdup("");
	text[strcspn(text, "\n")] = '\0';
	if (text[0] == '\0' || strcmp(text, "ok") == 0)
		return tern_xstrdup("");
	return tern_strdup_printf(" (resctrl: %s)", text);
}

/* The resources of this host: the directories of info/ but the monitoring
 * ones (L3_MON). `list` gets them comma-separated, for messages. */
static bool host_has_resource(const char *root, const char *resource, char **list)
{
	cleanup_free char *info = tern_strdup_printf("%s/info", root);
	DIR *d = opendir(info);
	bool found = false;

	*list = tern_xstrdup("");
	if (d == NULL)
		return false;
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || de->d_type != DT_DIR ||
		    (l > 4 && strcmp(de->d_name + l - 4, "_MON") == 0))
			continue;
		if (strcmp(de->d_name, resource) == 0)
			found = true;
		char *n = tern_strdup_printf("%s%s%s", *list, **list ? ", " : "", de->d_name);
		free(*list);
		*list = n;
	}
	closedir(d);
	return found;
}

/* Each line's resource and domains exist here (the default group's
 * schemata lists every domain of every resource). */
static int check_host_lines(const char *root, const config_lines *ls, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/schemata", root);
	cleanup_free char *text = NULL, *why = NULL;
	tern_rdt_line *have = NULL;
	size_t len = 0, nhave = 0;
	int ret = 0;

	ret = tern_read_file(path, &text, &len, 0, err);
	if (ret < 0)
		return tern_error_wrap(err, "linux.intelRdt");
	if (parse_text(text, true, &have, &nhave, &why) < 0)
		return tern_error_make_quiet(err, EIO, "linux.intelRdt: reading `%s`: %s", path,
					     why);
	for (size_t i = 0; i < ls->n && ret == 0; i++) {
		const config_line *l = &ls->items[i];
		cleanup_free char *list = NULL;
		if (!host_has_resource(root, l->line.resource, &list)) {
			ret = tern_error_make_quiet(err, ENOTSUP,
						    "linux.intelRdt.%s: `%s`: this host's resctrl "
						    "has no %s (it has: %s)",
						    l->field, l->text, l->line.resource,
						    *list ? list : "none");
			break;
		}
		for (size_t j = 0; j < l->line.n && ret == 0; j++)
			if (!find_domain(have, nhave, l->line.resource, l->line.domains[j].id))
				ret =
				    tern_error_make_quiet(err, EINVAL,
							  "linux.intelRdt.%s: `%s`: this host has "
							  "no %s domain %lu (%s lists them)",
							  l->field, l->text, l->line.resource,
							  l->line.domains[j].id, path);
	}
	free_lines(have, nhave);
	return ret;
}

/* The lines of each write, "\n"-terminated, NULL for none. */
static char *write_text(const config_lines *ls, int write)
{
	char *text = NULL;

	for (size_t i = 0; i < ls->n; i++) {
		if (ls->items[i].write != write)
			continue;
		char *n = tern_strdup_printf("%s%s\n", text ? text : "", ls->items[i].text);
		free(text);
		text = n;
	}
	return text;
}

/* An existing group must hold what the config asks (config-linux.md). */
static int compare_group(const tern_rdt *plan, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/schemata", plan->group);
	cleanup_free char *current = NULL, *wanted = NULL, *why = NULL;
	size_t len = 0;
	int ret;

	if (plan->write1 == NULL && plan->write2 == NULL)
		return 0;
	ret = tern_read_file(path, &current, &len, 0, err);
	if (ret < 0)
		return tern_error_wrap(err, "linux.intelRdt");
	wanted = tern_strdup_printf("%s%s", plan->write1 ? plan->write1 : "",
				    plan->write2 ? plan->write2 : "");
	if (tern_rdt_compare(current, wanted, &why) < 0)
		return tern_error_make_quiet(err, EEXIST,
					     "linux.intelRdt: the resctrl group `%s` exists and "
					     "holds other schemata than the config: %s",
					     plan->group, why ? why : "");
	return 0;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static int check_monitoring(const oci_intel_rdt *rdt, const char *root, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/info/L3_MON/mon_features", root);
	cleanup_free char *features = NULL;
	size_t len = 0;
	bool monitoring = rdt->enable_monitoring.set && rdt->enable_monitoring.value;
	bool cmt = rdt->enable_cmt.set && rdt->enable_cmt.value;
	bool mbm = rdt->enable_mbm.set && rdt->enable_mbm.value;
	const char *field = monitoring ? "enableMonitoring" : cmt ? "enableCMT" : "enableMBM";

	if (!monitoring && !cmt && !mbm)
		return 0;
	if (tern_read_file(path, &features, &len, 0, NULL) < 0)
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.intelRdt.%s: this host's resctrl has no "
					     "monitoring (no %s)",
					     field, path);
	/* enableCMT and enableMBM (runtime-spec 1.1 and 1.2) ask for what
	 * the group's mon_data then shows: the events must be there. */
	if (cmt && !tern_rdt_has_mon_feature(features, "llc_occupancy"))
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.intelRdt.enableCMT: this host's resctrl does "
					     "not monitor cache occupancy (no llc_occupancy in %s)",
					     path);
	if (mbm && !tern_rdt_has_mon_feature(features, "mbm_total_bytes") &&
	    !tern_rdt_has_mon_feature(features, "mbm_local_bytes"))
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.intelRdt.enableMBM: this host's resctrl does "
					     "not monitor memory bandwidth (no mbm_*_bytes in %s)",
					     path);
	return 0;
}

int tern_rdt_plan(const oci_intel_rdt *rdt, const char *id, tern_rdt *plan, tern_error **err)
{
	config_lines ls;
	bool lines;
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (rdt == NULL)
		return 0;
	ret = tern_rdt_check_config(rdt, err);
	if (ret < 0)
		return ret;
	ret = find_resctrl(&plan->root, err);
	if (ret < 0)
		goto fail;
	ret = collect_lines(rdt, &ls, err);
	if (ret == 0)
		ret = check_host_lines(plan->root, &ls, err);
	plan->write1 = write_text(&ls, 1);
	plan->write2 = write_text(&ls, 2);
	lines = ls.n > 0;
	config_lines_clear(&ls);
	if (ret < 0)
		goto fail;

	if (rdt->clos_id == NULL) {
		/* (the state directory checks the id fully, later) */
		if (id[0] == '\0' || strchr(id, '/') || strcmp(id, ".") == 0 ||
		    strcmp(id, "..") == 0) {
			ret = tern_error_make_quiet(err, EINVAL, "invalid container id `%s`", id);
			goto fail;
		}
		if (resctrl_own_name(id)) {
			ret = tern_error_make_quiet(err, EINVAL,
						    "linux.intelRdt: without a closID the group is "
						    "named after the container, and `%s` is a file "
						    "of resctrl itself: set linux.intelRdt.closID",
						    id);
			goto fail;
		}
		plan->group = tern_strdup_printf("%s/%s", plan->root, id);
		plan->own_group = plan->make_group = true;
		if (exists(plan->group)) {
			ret = tern_error_make_quiet(
			    err, EEXIST,
			    "linux.intelRdt: the resctrl group `%s` exists already (a container "
			    "`%s` exists, or the group is someone else's); without a closID the "
			    "container gets a new group named after it (set "
			    "linux.intelRdt.closID to join an existing one)",
			    plan->group, id);
			goto fail;
		}
	} else {
		plan->group = strcmp(rdt->clos_id, "/") == 0
				  ? tern_xstrdup(plan->root)
				  : tern_strdup_printf("%s/%s", plan->root, rdt->clos_id);
		if (exists(plan->group)) {
			ret = compare_group(plan, err);
			if (ret < 0)
				goto fail;
		} else if (lines) {
			plan->make_group = true;
		} else {
			ret = tern_error_make_quiet(
			    err, ENOENT,
			    "linux.intelRdt.closID: there is no resctrl group `%s`, and without "
			    "l3CacheSchema, memBwSchema or schemata it is only joined, not made",
			    plan->group);
			goto fail;
		}
	}
	ret = check_monitoring(rdt, plan->root, err);
	if (ret < 0)
		goto fail;
	if (rdt->enable_monitoring.set && rdt->enable_monitoring.value) {
		plan->mon_group = tern_strdup_printf("%s/mon_groups/%s", plan->group, id);
		if (exists(plan->mon_group)) {
			ret =
			    tern_error_make_quiet(err, EEXIST,
						  "linux.intelRdt.enableMonitoring: the MON group "
						  "`%s` exists already",
						  plan->mon_group);
			goto fail;
		}
	}
	return 0;
fail:
	tern_rdt_clear(plan);
	return ret;
}

/* ---- making, joining, removing ---- */

static int write_schemata(const char *root, const char *group, const char *text, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/schemata", group);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "linux.intelRdt: open `%s`", path);
	/* one write(2): the kernel applies a write as a whole */
	ret = (int)write(fd, text, strlen(text));
	if (ret < 0) {
		int e = errno;
		cleanup_free char *why = kernel_says(root);
		size_t l = strlen(text);
		return tern_error_make(err, e, "linux.intelRdt: writing `%.*s` to `%s`%s",
				       (int)(l && text[l - 1] == '\n' ? l - 1 : l), text, path,
				       why);
	}
	return 0;
}

static void remove_dir(const char *path)
{
	if (path && rmdir(path) < 0 && errno != ENOENT)
		tern_warn("linux.intelRdt: removing `%s`: %s", path, strerror(errno));
}

/* Whether a group still has a task in it. */
static bool has_tasks(const char *group)
{
	cleanup_free char *path = tern_strdup_printf("%s/tasks", group);
	cleanup_free char *text = NULL;
	size_t len = 0;

	if (tern_read_file(path, &text, &len, 0, NULL) < 0)
		return true; /* cannot tell: keep it */
	return text[strspn(text, " \n")] != '\0';
}

void tern_rdt_undo(tern_rdt *plan)
{
	if (plan->made_mon)
		remove_dir(plan->mon_group);
	plan->made_mon = false;
	/* A closID group this create made: another container may have
	 * joined it meanwhile; then it stays (the spec never removes one). */
	if (plan->made_group && (plan->own_group || !has_tasks(plan->group)))
		remove_dir(plan->group);
	plan->made_group = false;
}

int tern_rdt_apply(tern_rdt *plan, tern_error **err)
{
	int ret;

	if (plan->group == NULL)
		return 0;
	if (plan->make_group) {
		if (mkdir(plan->group, 0755) == 0) {
			plan->made_group = true;
		} else if (errno == EEXIST && !plan->own_group) {
			/* another container made the closID group since the
			 * plan: join it, as if it had been there */
			ret = compare_group(plan, err);
			if (ret < 0)
				return ret;
		} else {
			int e = errno;
			cleanup_free char *why = kernel_says(plan->root);
			return tern_error_make(err, e,
					       "linux.intelRdt: making the resctrl group `%s`%s",
					       plan->group, why);
		}
	}
	if (plan->made_group) {
		ret = plan->write1 ? write_schemata(plan->root, plan->group, plan->write1, err) : 0;
		if (ret == 0 && plan->write2)
			ret = write_schemata(plan->root, plan->group, plan->write2, err);
		if (ret < 0)
			goto fail;
	}
	if (plan->mon_group) {
		if (mkdir(plan->mon_group, 0755) < 0) {
			int e = errno;
			cleanup_free char *why = kernel_says(plan->root);
			ret = tern_error_make(err, e,
					      "linux.intelRdt.enableMonitoring: making the MON "
					      "group `%s`%s",
					      plan->mon_group, why);
			goto fail;
		}
		plan->made_mon = true;
	}
	return 0;
fail:
	tern_rdt_undo(plan);
	return ret;
}

static int add_task(const char *group, pid_t pid, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/tasks", group);
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d\n", pid);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return tern_error_make(err, errno, "linux.intelRdt: open `%s`", path);
	if (write(fd, buf, (size_t)len) < 0) {
		int e = errno;
		/* the mount is the group's ancestor: info/ is at its top */
		cleanup_free char *root = resctrl_mount();
		cleanup_free char *why = root ? kernel_says(root) : tern_xstrdup("");
		return tern_error_make(err, e, "linux.intelRdt: adding pid %d to `%s`%s", pid, path,
				       why);
	}
	return 0;
}

int tern_rdt_enter(const char *group, const char *mon_group, pid_t pid, tern_error **err)
{
	int ret;

	if (group == NULL)
		return 0;
	/* the CTRL_MON group first: a MON group takes only its own tasks */
	ret = add_task(group, pid, err);
	if (ret == 0 && mon_group)
		ret = add_task(mon_group, pid, err);
	return ret;
}

int tern_rdt_remove(const char *group, bool own_group, const char *mon_group, tern_error **err)
{
	/* rmdir moves what is left in a group (tasks of an exec that got
	 * away) to its parent: nothing keeps it */
	if (mon_group && rmdir(mon_group) < 0 && errno != ENOENT)
		return tern_error_make(err, errno, "linux.intelRdt: removing the MON group `%s`",
				       mon_group);
	if (group && own_group && rmdir(group) < 0 && errno != ENOENT)
		return tern_error_make(err, errno,
				       "linux.intelRdt: removing the resctrl group `%s`", group);
	return 0;
}

/* One line of an update option, of the resources it is for. */
static int check_update_line(const char *opt, const char *text, bool l3, tern_error **err)
{
	tern_rdt_line l;
	char *why = NULL;
	int ret = 0;

	if (text == NULL)
		return 0;
	if (strchr(text, '\n'))
		return tern_error_make_quiet(err, EINVAL, "%s `%s`: one line only", opt, text);
	if (tern_rdt_parse_line(text, false, &l, &why) < 0) {
		ret = tern_error_make_quiet(err, EINVAL, "%s `%s`: %s", opt, text, why);
		free(why);
		return ret;
	}
	if (l3 ? strncmp(l.resource, "L3", 2) != 0 : strcmp(l.resource, "MB") != 0)
		ret = tern_error_make_quiet(err, EINVAL, "%s `%s`: %s is not %s", opt, text,
					    l.resource,
					    l3 ? "an L3 resource (L3, L3CODE or L3DATA)" : "MB");
	tern_rdt_line_clear(&l);
	return ret;
}

int tern_rdt_check_update(const char *l3, const char *mb, tern_error **err)
{
	int ret = check_update_line("--l3-cache-schema", l3, true, err);
	return ret < 0 ? ret : check_update_line("--mem-bw-schema", mb, false, err);
}

int tern_rdt_update(const char *group, const char *l3, const char *mb, tern_error **err)
{
	cleanup_free char *root = resctrl_mount();
	cleanup_free char *text = tern_strdup_printf("%s%s%s%s", l3 ? l3 : "", l3 ? "\n" : "",
						     mb ? mb : "", mb ? "\n" : "");

	if (root == NULL)
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.intelRdt: resctrl is not mounted on this host");
	return text[0] ? write_schemata(root, group, text, err) : 0;
}

void tern_rdt_clear(tern_rdt *plan)
{
	free(plan->root);
	free(plan->group);
	free(plan->mon_group);
	free(plan->write1);
	free(plan->write2);
	memset(plan, 0, sizeof(*plan));
}
