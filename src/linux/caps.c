/* process.capabilities with libcap.
 *
 * Names follow runc: exact upper-case "CAP_..." names. A name that is not a
 * capability (or is written in lower case) is ignored with a warning, as
 * runc 1.1 does ("ignoring unknown or unavailable capabilities"), so that a
 * config written for a newer kernel still runs. A name libcap knows but the
 * running kernel does not (above /proc/sys/kernel/cap_last_cap) is skipped
 * with a debug log.
 */
#include "caps.h"
#include "log.h"
#include "utils.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Capabilities fit in the kernel's 64-bit masks. */
#define MAX_CAPS 64

static void cap_freep(cap_t *c)
{
	if (*c != NULL)
		cap_free(*c);
}
#define cleanup_cap __attribute__((cleanup(cap_freep)))

/* The highest capability the running kernel knows. libcap's own idea comes
 * from its build headers, which may be newer or older than the kernel. */
static int last_cap(void)
{
	static int cached = -1;
	char buf[16] = {0};
	cleanup_close int fd = -1;
	ssize_t n;

	if (cached >= 0)
		return cached;
	fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		int v = atoi(buf);
		if (v > 0 && v < MAX_CAPS)
			cached = v;
	}
	/* No /proc (a container without a proc mount): ask the kernel
	 * directly; PR_CAPBSET_READ fails with EINVAL past the last one. */
	if (cached < 0) {
		int cap = 0;
		while (cap + 1 < MAX_CAPS &&
		       prctl(PR_CAPBSET_READ, (unsigned long)(cap + 1), 0, 0, 0) >= 0)
			cap++;
		cached = cap;
	}
	return cached;
}

int tern_cap_from_name(const char *name)
{
	cap_value_t v;

	/* cap_from_name is case-insensitive and accepts names without the
	 * prefix; runc does not, and a config must mean the same thing with
	 * either runtime. */
	if (name == NULL || strncmp(name, "CAP_", 4) != 0 || name[4] == '\0')
		return -1;
	for (const char *p = name; *p; p++)
		if (!(isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
			return -1;
	if (cap_from_name(name, &v) < 0 || v < 0 || v >= MAX_CAPS)
		return -1;
	return v;
}

/* Turn a list of names into a membership table. Unknown names are warned
 * about and unavailable ones logged, both skipped. */
static void resolve_set(char **names, const char *set, bool in[MAX_CAPS])
{
	int last = last_cap();

	memset(in, 0, sizeof(bool) * MAX_CAPS);
	if (names == NULL)
		return;
	for (char **n = names; *n; n++) {
		int v = tern_cap_from_name(*n);
		if (v < 0) {
			tern_warn("process.capabilities.%s: ignoring unknown capability `%s`", set,
				  *n);
			continue;
		}
		if (v > last) {
			tern_debug("process.capabilities.%s: skipping %s, unknown to this kernel "
				   "(cap_last_cap %d)",
				   set, *n, last);
			continue;
		}
		in[v] = true;
	}
}

static char *cap_name(int cap)
{
	char *n = cap_to_name((cap_value_t)cap);
	char *r = tern_strdup_printf("%s", n ? n : "?");

	cap_free(n);
	/* libcap spells them in lower case; config.json uses upper case. */
	for (char *p = r; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return r;
}

int tern_caps_drop_bounding(const oci_capabilities *caps, tern_error **err)
{
	bool keep[MAX_CAPS];
	int last = last_cap();

	/* An absent list, or no process.capabilities at all, is the empty
	 * set: drop everything, as runc and crun do. containerd writes
	 * "capabilities": {} for a Kubernetes pod that drops ALL. */
	resolve_set(caps ? caps->bounding : NULL, "bounding", keep);
	for (int cap = 0; cap <= last; cap++) {
		if (keep[cap])
			continue;
		/* dropping one already out succeeds: read only on failure */
		if (cap_drop_bound((cap_value_t)cap) < 0) {
			int e = errno;
			if (prctl(PR_CAPBSET_READ, (unsigned long)cap, 0, 0, 0) == 0)
				continue;
			cleanup_free char *name = cap_name(cap);
			return tern_error_make(err, e,
					       "dropping %s from the "
					       "bounding set",
					       name);
		}
	}
	return 0;
}

static int set_flag(cap_t c, cap_flag_t flag, const bool in[MAX_CAPS])
{
	for (int cap = 0; cap < MAX_CAPS; cap++) {
		cap_value_t v = cap;
		if (in[cap] && cap_set_flag(c, flag, 1, &v, CAP_SET) < 0)
			return -errno;
	}
	return 0;
}

static int describe_failure(const bool eff[MAX_CAPS], const bool prm[MAX_CAPS],
			    const bool inh[MAX_CAPS], int e, tern_error **err)
{
	cleanup_cap cap_t cur = cap_get_proc();

	/* The kernel says only EPERM; point at the first capability we asked
	 * for but may not have, which is nearly always the real cause. */
	for (int cap = 0; cur != NULL && cap < MAX_CAPS; cap++) {
		cap_flag_value_t have = CAP_CLEAR;
		const char *set = NULL;
		if (cap_get_flag(cur, (cap_value_t)cap, CAP_PERMITTED, &have) < 0)
			break;
		if (have == CAP_SET)
			continue;
		if (prm[cap])
			set = "permitted";
		else if (eff[cap])
			set = "effective";
		else if (inh[cap] && prctl(PR_CAPBSET_READ, (unsigned long)cap, 0, 0, 0) == 0)
			set = "inheritable";
		if (set != NULL) {
			cleanup_free char *name = cap_name(cap);
			return tern_error_make(err, e,
					       "setting capabilities (%s %s is "
					       "not available to tern)",
					       set, name);
		}
	}
	return tern_error_make(err, e, "setting capabilities");
}

int tern_caps_apply(const oci_capabilities *caps, tern_error **err)
{
	bool eff[MAX_CAPS], prm[MAX_CAPS], inh[MAX_CAPS], amb[MAX_CAPS];
	cleanup_cap cap_t c = NULL;
	int ret;

	/* An absent list is an empty set, and so is every list when
	 * process.capabilities is absent, as in runc and crun. */
	resolve_set(caps ? caps->effective : NULL, "effective", eff);
	resolve_set(caps ? caps->permitted : NULL, "permitted", prm);
	resolve_set(caps ? caps->inheritable : NULL, "inheritable", inh);
	resolve_set(caps ? caps->ambient : NULL, "ambient", amb);

	c = cap_init();
	if (c == NULL)
		return tern_error_make(err, errno, "cap_init");
	if ((ret = set_flag(c, CAP_EFFECTIVE, eff)) < 0 ||
	    (ret = set_flag(c, CAP_PERMITTED, prm)) < 0 ||
	    (ret = set_flag(c, CAP_INHERITABLE, inh)) < 0)
		return tern_error_make(err, -ret, "building the sets");
	if (cap_set_proc(c) < 0)
		return describe_failure(eff, prm, inh, errno, err);

	/* Ambient last: the kernel only lets a capability in when it is both
	 * permitted and inheritable. Clear first so that nothing inherited
	 * from tern's own environment survives. */
	/* (one prctl: libcap's cap_reset_ambient asks for every capability
	 * first) */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return tern_error_make(err, errno, "ambient: clearing");
	for (int cap = 0; cap < MAX_CAPS; cap++) {
		if (!amb[cap])
			continue;
		if (cap_set_ambient((cap_value_t)cap, CAP_SET) < 0) {
			/* The kernel only takes an ambient capability that is
			 * also permitted and inheritable. runc's own default
			 * config lists ambient caps without inheritable ones and
			 * runc runs it, leaving them out: so do we, loudly in the
			 * debug log rather than failing a config runc accepts. */
			cleanup_free char *name = cap_name(cap);
			tern_debug("process.capabilities.ambient: %s not raised (it must also be "
				   "permitted and inheritable): %s",
				   name, strerror(errno));
		}
	}
	return 0;
}

static bool names_net_cap(char **set)
{
	for (char **c = set; c && *c; c++)
		if (strcasecmp(*c, "CAP_NET_ADMIN") == 0 || strcasecmp(*c, "CAP_SYS_ADMIN") == 0)
			return true;
	return false;
}

bool tern_caps_may_change_netns(const oci_capabilities *c)
{
	return c && (names_net_cap(c->bounding) || names_net_cap(c->permitted) ||
		     names_net_cap(c->effective) || names_net_cap(c->ambient));
}
