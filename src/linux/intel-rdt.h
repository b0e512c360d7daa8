/* linux.intelRdt: the container's resctrl group (Intel RDT, AMD PQoS).
 *
 * Owns: the checks of the schema lines of config.json, finding the resctrl
 * mount, making or joining the CTRL_MON group, writing its schemata, the
 * MON group of enableMonitoring, putting processes into them, and removing
 * what tern made. The rules are runtime-spec 1.3's (config-linux.md,
 * IntelRdt):
 *
 *   closID        the group                 made by tern?       removed on delete?
 *   absent        <resctrl>/<container id>  yes (must be new)   yes
 *   "/"           <resctrl> (the default)   no                  no
 *   set, lines    <resctrl>/<closID>        when missing        no
 *   set, no lines <resctrl>/<closID>        no: must exist      no
 *
 * "Lines" are l3CacheSchema, memBwSchema and schemata. A group tern makes
 * gets them written: l3CacheSchema and memBwSchema in one write, then the
 * schemata lines in a second one, so that they win where both name the
 * same domain (the kernel refuses a domain twice in one write). An existing
 * group must already hold what they say, or the config is refused.
 * enableMonitoring makes mon_groups/<container id> in the group, always
 * tern's: it goes with the container.
 *
 * Everything that can be known before anything is made is checked by
 * tern_rdt_plan, in the parent: a config that cannot work leaves nothing
 * behind. Without resctrl (no RDT in the CPU, or not mounted) every
 * linux.intelRdt fails there, naming the reason. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- schema lines, without resctrl (unit-tested) ---- */

typedef struct {
	unsigned long id;
	uint64_t value; /* a cache bit mask, or a bandwidth */
	char *text;	/* the value as written, for resources tern does not know */
} tern_rdt_domain;

typedef struct {
	char *resource; /* "L3", "MB", ... */
	tern_rdt_domain *domains;
	size_t n;
} tern_rdt_line;

/* Split "NAME:ID=VALUE;ID=VALUE..." as the kernel reads a schemata line
 * (blanks around the name and the values allowed, one ';' may end it).
 * The resource must be one resctrl has (L3, L3CODE, L3DATA, L2, L2CODE,
 * L2DATA: hexadecimal bit masks; MB, SMBA: decimal bandwidths), or with
 * any_resource, anything (its values then kept as text). A domain id must
 * not come twice. On failure *why says what is wrong (malloc'd). */
int tern_rdt_parse_line(const char *line, bool any_resource, tern_rdt_line *out, char **why);
void tern_rdt_line_clear(tern_rdt_line *line);

/* resctrl is known to the kernel and mounted in our mount namespace: a
 * config with linux.intelRdt can be honoured here. */
bool tern_rdt_available(void);

/* The checks of linux.intelRdt that need no resctrl: every line parses,
 * l3CacheSchema holds only L3 lines, no domain of a resource is given twice
 * in one write (l3CacheSchema with memBwSchema; schemata), the closID is
 * not a name resctrl uses for itself. Messages name the field
 * ("linux.intelRdt.schemata[1]: `L9:0=f`: ..."). */
int tern_rdt_check_config(const oci_intel_rdt *rdt, tern_error **err);

/* Whether a group's schemata file (`current`, as the kernel prints it)
 * already holds every value of `lines` (newline-separated, later lines
 * winning). 0 if so; otherwise -1 with *why naming the first difference. */
int tern_rdt_compare(const char *current, const char *lines, char **why);

/* Whether the info/L3_MON/mon_features text lists `event`. */
bool tern_rdt_has_mon_feature(const char *mon_features, const char *event);

/* ---- the group ---- */

typedef struct {
	char *root;	 /* the resctrl mount */
	char *group;	 /* the CTRL_MON group's directory; NULL: no intelRdt */
	char *mon_group; /* group/mon_groups/<id>; NULL without enableMonitoring */
	bool own_group;	 /* named after the container: delete removes it */
	bool make_group; /* it does not exist yet: tern_rdt_apply makes it */
	char *write1;	 /* l3CacheSchema + memBwSchema, "\n"-terminated; NULL: none */
	char *write2;	 /* schemata */
	bool made_group; /* what tern_rdt_apply made, for tern_rdt_undo */
	bool made_mon;
} tern_rdt;

/* In the parent, before anything is created: find resctrl (an error naming
 * linux.intelRdt and why when there is none), check the config against it
 * (tern_rdt_check_config first; then the resources and domains this host
 * has, whether the group may be made or joined, whether an existing one
 * holds the config's lines, monitoring) and fill *plan. rdt NULL: an empty
 * plan. */
int tern_rdt_plan(const oci_intel_rdt *rdt, const char *id, tern_rdt *plan, tern_error **err);

/* Make what the plan says: the group with its schemata, the MON group.
 * On failure what it made is removed again. */
int tern_rdt_apply(tern_rdt *plan, tern_error **err);

/* Put the process (one that has not exec'd the container's program yet)
 * into the group, then into the MON group. Its children inherit both. */
int tern_rdt_enter(const char *group, const char *mon_group, pid_t pid, tern_error **err);

/* A failed create: remove what tern_rdt_apply made. */
void tern_rdt_undo(tern_rdt *plan);

/* delete: remove the MON group, and the group when it is the container's
 * own. Gone already is fine. */
int tern_rdt_remove(const char *group, bool own_group, const char *mon_group, tern_error **err);

void tern_rdt_clear(tern_rdt *plan);

/* update --l3-cache-schema / --mem-bw-schema (runc's flags): one line
 * each, of an L3 resource and of MB. The check needs no resctrl. */
int tern_rdt_check_update(const char *l3, const char *mb, tern_error **err);
/* Both lines in one write to the group's schemata (NULL: not given). */
int tern_rdt_update(const char *group, const char *l3, const char *mb, tern_error **err);
