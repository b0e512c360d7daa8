/* Both halves of (4b) in sync.h (see seccomp-relay.h). */
#include "seccomp-relay.h"
#include "seccomp.h"
#include "sync.h"
#include "utils.h"

int tern_seccomp_relay_notify_fd(int sync_fd, const oci_seccomp *seccomp, pid_t pid,
				 const char *state_json, tern_error **err)
{
	cleanup_close int notify_fd = -1;
	int ret = tern_sync_expect_fd(sync_fd, SYNC_SECCOMP_FD, &notify_fd, err);

	if (ret < 0)
		return ret;
	ret = tern_seccomp_send_to_listener(seccomp, notify_fd, pid, state_json, err);
	if (ret < 0)
		return ret;
	return tern_sync_send(sync_fd, SYNC_SECCOMP_DONE, 0, err);
}

int tern_seccomp_load_and_hand_fd(const tern_seccomp_filter *filter, int sync_fd, tern_error **err)
{
	cleanup_close int notify_fd = -1;
	int ret = tern_seccomp_load(filter, &notify_fd, err);

	if (ret < 0)
		return ret;
	if (notify_fd < 0)
		return 0;
	ret = tern_sync_send_fd(sync_fd, SYNC_SECCOMP_FD, notify_fd, err);
	if (ret < 0)
		return ret;
	return tern_sync_expect(sync_fd, SYNC_SECCOMP_DONE, NULL, err);
}
