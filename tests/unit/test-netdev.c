/* The parts of linux.netDevices that need no privileges: which names the
 * kernel would take for a device (tern_netdev_name_check), and the checks
 * `create` runs before anything exists that need no device of their own:
 * a network namespace of the container's, valid names, the host device
 * looked up, the loopback refused (tern_netdev_check). */
#include "tap.h"

#include "namespaces.h"
#include "netdev.h"

#include <errno.h>
#include <stdlib.h>

/* `n` for a TAP line: a control byte would end it */
static const char *shown(const char *n)
{
	static char buf[128];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)n; *p && o + 5 < sizeof(buf); p++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o,
				      *p < 0x20 || *p >= 0x7f ? "\\x%02x" : "%c", *p);
	buf[o] = '\0';
	return buf;
}

static void name(const char *n, bool template_ok, bool valid, const char *why_part)
{
	const char *why = NULL;
	int ret = tern_netdev_name_check(n, template_ok, &why);

	if (valid) {
		ok(ret == 0 && why == NULL, "`%s`%s is a device name", shown(n),
		   template_ok ? " (template allowed)" : "");
		return;
	}
	ok(ret == -EINVAL && why && strstr(why, why_part), "`%s`%s is refused: %s", shown(n),
	   template_ok ? " (template allowed)" : "", why ? why : "(no reason)");
}

static void names(void)
{
	name("eth0", false, true, NULL);
	name("a", false, true, NULL);
	name("abcdefghijklmno", false, true, NULL); /* 15 bytes */
	name("veth-1.2_x@y", false, true, NULL);
	name("abcdefghijklmnop", false, false, "longer than 15 bytes");
	name("", false, false, "empty");
	name(".", false, false, "`.` and `..`");
	name("..", false, false, "`.` and `..`");
	name("...", false, true, NULL);
	name("a/b", false, false, "'/' or ':'");
	name("a:1", false, false, "'/' or ':'");
	name("a b", false, false, "white space");
	name("a\tb", false, false, "white space");
	name("a\nb", false, false, "white space");
	name("a\vb", false, false, "white space");
	name("\xa0x", false, false, "white space");   /* the kernel's isspace */
	name("\xc3\xa9t\xc3\xa9", false, true, NULL); /* UTF-8 is bytes to the kernel */
	/* templates: only for the name inside the container */
	name("eth%d", false, false, "'%'");
	name("eth%d", true, true, NULL);
	name("%d", true, true, NULL);
	name("e%dx", true, true, NULL);
	name("eth%s", true, false, "one \"%d\"");
	name("eth%", true, false, "one \"%d\"");
	name("e%d%d", true, false, "one \"%d\"");
	name("e%d%x", true, false, "one \"%d\"");
	name("e%%d", true, false, "one \"%d\"");
	name("abcdefghijklm%dx", true, false, "longer than 15 bytes");
}

static char *msg;

static int check(oci_config *c, tern_ns_plan *plan)
{
	tern_error *e = NULL;
	int ret = tern_netdev_check(c, plan, &e);

	free(msg);
	msg = e ? strdup(e->msg) : NULL;
	tern_error_free(e);
	return ret;
}

static void checks(void)
{
	oci_namespace ns_net = {.type = OCI_NS_NETWORK};
	oci_net_device devs[2] = {{.name = "tern-no-such0"}};
	oci_linux lx = {.namespaces = &ns_net, .namespaces_len = 1, .net_devices = devs};
	oci_config c = {.linux_ = &lx};
	tern_ns_plan plan = {0};

	for (int i = 0; i < OCI_NS_COUNT; i++)
		plan.join_fd[i] = -1;
	ok(check(&c, &plan) == 0, "no netDevices: nothing to check");
	ok(!tern_netdev_in_own_netns(&c), "nor to keep from a checkpoint");

	lx.net_devices_len = 1;
	ok(check(&c, &plan) == -EINVAL, "netDevices without a network namespace are refused");
	ok(msg &&
	       strstr(msg, "linux.netDevices: the container needs a network namespace of its "
			   "own") &&
	       strstr(msg, "no \"network\" entry"),
	   "naming the field: %s", msg);

	plan.has[OCI_NS_NETWORK] = true;
	ok(tern_netdev_in_own_netns(&c), "a new network namespace is the container's own");
	ok(check(&c, &plan) == -ENODEV, "a host device that does not exist is refused");
	ok(msg && strcmp(msg, "linux.netDevices[\"tern-no-such0\"]: no such network device on the "
			      "host") == 0,
	   "naming the field: %s", msg);

	devs[0].name = "lo";
	ok(check(&c, &plan) == -EINVAL, "the loopback cannot be moved");
	ok(msg && strstr(msg, "linux.netDevices[\"lo\"]: the loopback device cannot leave"),
	   "naming the field: %s", msg);

	devs[0].new_name = "x/y";
	ok(check(&c, &plan) == -EINVAL, "a bad name inside is refused before the lookup");
	ok(msg && strstr(msg, "linux.netDevices[\"lo\"].name `x/y`: not a network device name: "),
	   "naming the field: %s", msg);

	devs[0].name = "bad%d";
	devs[0].new_name = NULL;
	ok(check(&c, &plan) == -EINVAL, "a host name with '%%' is refused");
	ok(msg && strstr(msg, "linux.netDevices[\"bad%d\"]: not a network device name"),
	   "naming the field: %s", msg);

	devs[0] = (oci_net_device){.name = "tern-no-such0", .new_name = "ok0"};
	devs[1] = (oci_net_device){.name = "tern-no-such1", .new_name = "a b"};
	lx.net_devices_len = 2;
	ok(check(&c, &plan) == -ENODEV, "devices are checked in order");
	ok(msg && strstr(msg, "[\"tern-no-such0\"]: no such network device"), "the first: %s", msg);

	ns_net.path = "/run/netns/x";
	ok(!tern_netdev_in_own_netns(&c), "a namespace joined by path is not the container's own");
	free(msg);
}

int main(void)
{
	names();
	checks();
	return done_testing();
}
