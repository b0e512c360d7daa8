/* Unit tests for the systemd cgroup driver's names: slice:prefix:name and
 * the cgroup path of a slice. (Talking to systemd is tested for real in a
 * guest that boots systemd: tests/integration-systemd.) */
#include "cgroup-systemd.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void slice(const char *name, const char *want)
{
	char *got = tern_systemd_slice_path(name);
	is_str(got, want, "slice `%s` -> `%s`", name ? name : "(null)", want ? want : "(invalid)");
	free(got);
}

static void unit(const char *path, const char *id, const char *want_slice, const char *want_unit,
		 const char *want_cgroup)
{
	tern_systemd_unit u;
	tern_error *err = NULL;
	int ret = tern_systemd_unit_parse(path, id, &u, &err);
	ok(ret == 0, "parse `%s`", path ? path : "(null)");
	if (ret < 0) {
		tern_error_free(err);
		return;
	}
	is_str(u.slice, want_slice, "  slice");
	is_str(u.unit, want_unit, "  unit");
	is_str(u.cgroup, want_cgroup, "  cgroup");
	tern_systemd_unit_clear(&u);
}

static void bad(const char *path, int want_errno, const char *mentions)
{
	tern_systemd_unit u;
	tern_error *err = NULL;
	int ret = tern_systemd_unit_parse(path, "id", &u, &err);
	is_int(ret, -want_errno, "`%s` refused", path);
	ok(err && strstr(err->msg, "linux.cgroupsPath") && strstr(err->msg, mentions),
	   "  the error names linux.cgroupsPath and `%s`", mentions);
	tern_error_free(err);
}

int main(void)
{
	slice("system.slice", "/system.slice");
	slice("-.slice", "");
	slice("a-b-c.slice", "/a.slice/a-b.slice/a-b-c.slice");
	slice("kubepods-burstable-pod1.slice",
	      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice");
	slice("a--b.slice", NULL);
	slice("-a.slice", NULL);
	slice("a-.slice", NULL);
	slice(".slice", NULL);
	slice("system.scope", NULL);
	slice("a/b.slice", NULL);
	slice(NULL, NULL);

	unit(NULL, "c1", "system.slice", "tern-c1.scope", "/system.slice/tern-c1.scope");
	unit("", "c1", "system.slice", "tern-c1.scope", "/system.slice/tern-c1.scope");
	unit("machine.slice:crio:abc", "x", "machine.slice", "crio-abc.scope",
	     "/machine.slice/crio-abc.scope");
	unit(":tern:abc", "x", "system.slice", "tern-abc.scope", "/system.slice/tern-abc.scope");
	unit("user-1000.slice::abc", "x", "user-1000.slice", "abc.scope",
	     "/user.slice/user-1000.slice/abc.scope");

	bad("/plain/path", EINVAL, "slice:prefix:name");
	bad("a:b", EINVAL, "slice:prefix:name");
	bad("a.slice:b:c:d", EINVAL, "slice:prefix:name");
	bad("system.slice:tern:", EINVAL, "name");
	bad("system.slice:te/rn:x", EINVAL, "/");
	bad("bad--slice.slice:tern:x", EINVAL, "bad--slice.slice");
	bad("system:tern:x", EINVAL, "not a systemd slice name");
	bad("system.slice:tern:pod.slice", ENOTSUP, "slice itself");
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
