#include "sync.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

const char *tern_sync_type_name(tern_sync_type type)
{
	switch (type) {
	case SYNC_GO:
		return "go";
	case SYNC_CGROUP_DONE:
		return "cgroup-done";
	case SYNC_MAPS_REQUEST:
		return "maps-request";
	case SYNC_MAPS_DONE:
		return "maps-done";
	case SYNC_CHILD_PID:
		return "child-pid";
	case SYNC_HOOKS_REQUEST:
		return "hooks-request";
	case SYNC_HOOKS_DONE:
		return "hooks-done";
	case SYNC_READY:
		return "ready";
	case SYNC_FINISH:
		return "finish";
	case SYNC_ERROR:
		return "error";
	}
	return "unknown";
}

static int send_msg(int fd, const tern_sync_msg *msg)
{
	/* only the used part of text travels */
	size_t len = offsetof(tern_sync_msg, text) + strnlen(msg->text, TERN_SYNC_MSG_MAX - 1) + 1;
	ssize_t n;

	do
		n = send(fd, msg, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return 0;
}

int tern_sync_send(int fd, tern_sync_type type, int32_t value, tern_error **err)
{
	tern_sync_msg msg = {.type = type, .value = value};
	int ret = send_msg(fd, &msg);

	if (ret < 0)
		return tern_error_make(err, -ret, "sync: send `%s`", tern_sync_type_name(type));
	return 0;
}

void tern_sync_send_error(int fd, const tern_error *e)
{
	tern_sync_msg msg = {.type = SYNC_ERROR, .value = e ? e->errnum : EINVAL};

	snprintf(msg.text, sizeof(msg.text), "%s", e && e->msg ? e->msg : "unknown error");
	send_msg(fd, &msg);
}

int tern_sync_expect(int fd, tern_sync_type want, int32_t *value, tern_error **err)
{
	tern_sync_msg msg;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	/* A peer that exits with our message unread in its queue (the child
	 * failed before reading `cgroup-done`) makes the kernel report
	 * ECONNRESET once, ahead of what the peer sent before it exited:
	 * read again to get its error message (or EOF). */
	bool reset_seen = false;
	for (;;) {
		n = recv(fd, &msg, sizeof(msg), 0);
		if (n >= 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == ECONNRESET && !reset_seen) {
			reset_seen = true;
			continue;
		}
		break;
	}
	if (n < 0)
		return tern_error_make(err, errno, "sync: waiting for `%s`",
				       tern_sync_type_name(want));
	if (n == 0)
		return tern_error_make(err, EPIPE,
				       "sync: the other side exited while tern waited for `%s`",
				       tern_sync_type_name(want));
	msg.text[TERN_SYNC_MSG_MAX - 1] = '\0';
	if (msg.type == SYNC_ERROR) {
		tern_error_make_literal(err, msg.value > 0 ? msg.value : EINVAL, msg.text);
		return msg.value > 0 ? -msg.value : -EINVAL;
	}
	if (msg.type != (uint32_t)want)
		return tern_error_make(err, EPROTO, "sync: expected `%s`, got `%s`",
				       tern_sync_type_name(want),
				       tern_sync_type_name((tern_sync_type)msg.type));
	if (value)
		*value = msg.value;
	return 0;
}
