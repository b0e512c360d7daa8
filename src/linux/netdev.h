/* linux.netDevices (runtime-spec 1.3, config-linux.md "Network Devices"):
 * host network devices moved into the container's network namespace,
 * renamed to `name` when one is given, with their permanent global
 * addresses and brought up there.
 *
 * The stages: tern_netdev_check with the other config checks, before
 * anything exists; tern_netdev_move_in by the parent once the init is in
 * its network namespace and before the prestart/createRuntime hooks; and,
 * only when that create fails afterwards, tern_netdev_undo.
 *
 * There is no move back on `delete`: the spec says the runtime MUST NOT
 * move a device out of the namespace before deleting it. The namespace's
 * owner decides; when the last process of a namespace tern created exits,
 * the kernel returns physical devices to the initial namespace (under
 * their container names) and destroys virtual ones (veth, dummy...). A
 * create that fails is another matter: no container ever existed, so what
 * it moved goes back as it was (name, addresses, up state), so that bad
 * input leaves nothing behind. */
#pragma once

#include "error.h"
#include "namespaces.h"
#include "oci-config.h"

#include <linux/netlink.h>
#include <stdbool.h>
#include <sys/types.h>

/* NLMSG_OK(h, len) without the comparison of the header's unsigned
 * length with the signed `len` inside glibc's macro (clang's
 * -Wsign-compare): `len` is what is left of the buffer. */
static inline bool tern_nlmsg_ok(const struct nlmsghdr *h, int len)
{
	return len >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
	       h->nlmsg_len <= (unsigned)len;
}

/* Whether the kernel would take `name` for a network device: 1 to 15
 * bytes, not "." or "..", no '/', ':' or white space (dev_valid_name);
 * with `template_ok`, one "%d" that the kernel replaces with the first
 * free number, and no other '%'. 0, or -EINVAL with *why saying what is
 * wrong (static text). */
int tern_netdev_name_check(const char *name, bool template_ok, const char **why);

/* The effective name inside the container: `name`, or the host name. */
const char *tern_netdev_target(const oci_net_device *d);

/* linux.netDevices before anything is created: a network namespace of the
 * container's own (new, or joined by path but not tern's own), valid and
 * distinct names, every host device present, and no target name already
 * taken in the namespace. `plan` holds the joined namespaces' fds. */
int tern_netdev_check(const oci_config *config, const tern_ns_plan *plan, tern_error **err);

/* Devices moved by one create, and what it takes to move them back. */
typedef struct tern_netdev_set tern_netdev_set;

/* Move every device of linux.netDevices into the network namespace of
 * `pid`, renamed, addresses re-added, up. On failure, the devices already
 * moved go back before it returns, and *set stays NULL. */
int tern_netdev_move_in(const oci_config *config, pid_t pid, tern_netdev_set **set,
			tern_error **err);

/* A failed create: each moved device back to tern's network namespace
 * under its host name, with its addresses and up state; the set keeps the
 * container's namespace alive, so this works after its init died. Problems
 * are warnings (there is already an error to report). */
void tern_netdev_undo(tern_netdev_set *set);

/* Forget the set (the devices stay where they are). NULL is fine. */
void tern_netdev_set_free(tern_netdev_set *set);

/* A config whose devices would go into a network namespace that is the
 * container's alone (not joined by path): CRIU cannot keep them across a
 * checkpoint, see src/criu/checkpoint-dump.c. */
bool tern_netdev_in_own_netns(const oci_config *config);

/* The device `name` of the network namespace `from_ns` moved into the
 * calling thread's and renamed `new_name` in the same request, left down;
 * *index: its index here. (tern rollback hands the live veth's inner end
 * through tern's namespace to criu, which moves it into the namespace it
 * restores: its outer end stays as it is.) */
int tern_netdev_move_out(int from_ns, const char *name, const char *new_name, int *index,
			 tern_error **err);

/* The device `index` of the calling thread's network namespace deleted if
 * it is still called `name` (a veth takes its peer with it); a failure is
 * a warning. */
void tern_netdev_delete(const char *name, int index);
