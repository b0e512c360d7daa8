#include "sync.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
	case SYNC_SECCOMP_FD:
		return "seccomp-fd";
	case SYNC_SECCOMP_DONE:
		return "seccomp-done";
	case SYNC_MOUNT_SOURCES:
		return "mount-sources";
	case SYNC_MOUNT_SOURCE:
		return "mount-source";
	case SYNC_ERROR:
		return "error";
	}
	return "unknown";
}

/* With passfd >= 0 the fd travels as SCM_RIGHTS in the same datagram. */
static int send_msg_fd(int fd, const tern_sync_msg *msg, int passfd)
{
	/* only the used part of text travels */
	size_t len = offsetof(tern_sync_msg, text) + strnlen(msg->text, TERN_SYNC_MSG_MAX - 1) + 1;
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	ssize_t n;

	if (passfd >= 0) {
		memset(&control, 0, sizeof(control));
		mh.msg_control = control.buf;
		mh.msg_controllen = sizeof(control.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &passfd, sizeof(int));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return 0;
}

static int send_msg(int fd, const tern_sync_msg *msg)
{
	return send_msg_fd(fd, msg, -1);
}

int tern_sync_send(int fd, tern_sync_type type, int32_t value, tern_error **err)
{
	tern_sync_msg msg = {.type = type, .value = value};
	int ret = send_msg(fd, &msg);

	if (ret < 0)
		return tern_error_make(err, -ret, "sync: send `%s`", tern_sync_type_name(type));
	return 0;
}

int tern_sync_send_fd_value(int fd, tern_sync_type type, int32_t value, int passfd,
			    tern_error **err)
{
	tern_sync_msg msg = {.type = type, .value = value};
	int ret = send_msg_fd(fd, &msg, passfd);

	if (ret < 0)
		return tern_error_make(err, -ret, "sync: send `%s` with fd %d",
				       tern_sync_type_name(type), passfd);
	return 0;
}

int tern_sync_send_fd(int fd, tern_sync_type type, int passfd, tern_error **err)
{
	return tern_sync_send_fd_value(fd, type, 0, passfd, err);
}

void tern_sync_send_error(int fd, const tern_error *e)
{
	tern_sync_msg msg = {.type = SYNC_ERROR, .value = e ? e->errnum : EINVAL};

	snprintf(msg.text, sizeof(msg.text), "%s", e && e->msg ? e->msg : "unknown error");
	send_msg(fd, &msg);
}

/* Receive one message; an fd that came with it goes to *passfd when the
 * caller wants one (close-on-exec), and is closed otherwise. */
static int expect_msg(int fd, tern_sync_type want, int32_t *value, int *passfd, tern_error **err)
{
	tern_sync_msg msg;
	struct iovec iov = {.iov_base = &msg, .iov_len = sizeof(msg)};
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = control.buf,
			    .msg_controllen = sizeof(control.buf)};
	int got_fd = -1;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	/* A peer that exits with our message unread in its queue (the child
	 * failed before reading `cgroup-done`) makes the kernel report
	 * ECONNRESET once, ahead of what the peer sent before it exited:
	 * read again to get its error message (or EOF). */
	bool reset_seen = false;
	for (;;) {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
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
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&got_fd, CMSG_DATA(cm), sizeof(int));
	msg.text[TERN_SYNC_MSG_MAX - 1] = '\0';
	if (msg.type == SYNC_ERROR || msg.type != (uint32_t)want || passfd == NULL) {
		if (got_fd >= 0)
			close(got_fd);
		got_fd = -1;
	}
	if (msg.type == SYNC_ERROR) {
		tern_error_make_literal(err, msg.value > 0 ? msg.value : EINVAL, msg.text);
		return msg.value > 0 ? -msg.value : -EINVAL;
	}
	if (msg.type != (uint32_t)want)
		return tern_error_make(err, EPROTO, "sync: expected `%s`, got `%s`",
				       tern_sync_type_name(want),
				       tern_sync_type_name((tern_sync_type)msg.type));
	if (passfd != NULL) {
		if (got_fd < 0)
			return tern_error_make(err, EPROTO, "sync: `%s` came without its fd",
					       tern_sync_type_name(want));
		*passfd = got_fd;
	}
	if (value)
		*value = msg.value;
	return 0;
}

int tern_sync_expect(int fd, tern_sync_type want, int32_t *value, tern_error **err)
{
	return expect_msg(fd, want, value, NULL, err);
}

int tern_sync_expect_fd(int fd, tern_sync_type want, int *passfd, tern_error **err)
{
	*passfd = -1;
	return expect_msg(fd, want, NULL, passfd, err);
}

int tern_sync_expect_fd_value(int fd, tern_sync_type want, int32_t *value, int *passfd,
			      tern_error **err)
{
	*passfd = -1;
	return expect_msg(fd, want, value, passfd, err);
}
