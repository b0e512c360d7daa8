/* The CRIU image files of a migration: sent file by file over the control
 * channel, received into the target's private directory after checking
 * every name and size (the peer is authenticated, but a bug or a
 * compromised source must still not write outside that directory or fill
 * the disk). */
#include "migrate.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define NAME_MAX_LEN 128

bool tern_mig_image_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > NAME_MAX_LEN || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-'))
			return false;
	return true;
}

static bool skipped(const char *name, const char *const *skip)
{
	for (; skip && *skip; skip++)
		if (strcmp(name, *skip) == 0)
			return true;
	return false;
}

int tern_mig_images_send(tern_mchan *c, const char *dir, const char *const *skip, bool done,
			 uint64_t *bytes, tern_error **err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ret = 0;

	if (d == NULL)
		return tern_error_make(err, errno, "images `%s`", dir);
	while (ret == 0 && (e = readdir(d)) != NULL) {
		struct stat st;
		if (e->d_name[0] == '.' || skipped(e->d_name, skip))
			continue;
		cleanup_close int fd =
		    openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) < 0) {
			ret = tern_error_make(err, errno, "image `%s/%s`", dir, e->d_name);
			break;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		tern_jw w;
		tern_jw_begin(&w);
		tern_jw_str(&w, "name", e->d_name);
		tern_jw_u64(&w, "size", (uint64_t)st.st_size);
		cleanup_free char *msg = tern_jw_end(&w);
		ret = tern_mchan_send(c, TERN_MSG_IMAGE_FILE, msg, strlen(msg), err);
		if (ret == 0 && st.st_size > 0)
			ret = tern_mchan_send_fd(c, TERN_MSG_IMAGE_DATA, fd, (uint64_t)st.st_size,
						 err);
		if (ret < 0)
			ret = tern_error_wrap(err, "send image `%s`", e->d_name);
		else
			*bytes += (uint64_t)st.st_size;
	}
	closedir(d);
	if (ret == 0 && done)
		ret = tern_mchan_send(c, TERN_MSG_IMAGES_DONE, NULL, 0, err);
	return ret;
}

static int recv_one(tern_mchan *c, int dirfd, const char *dir, const char *name, uint64_t size,
		    tern_error **err)
{
	cleanup_close int fd = -1;
	uint64_t got = 0;

	/* O_EXCL: a name sent twice is refused, never overwritten */
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return tern_error_make(err, errno, "image `%s/%s`", dir, name);
	while (got < size) {
		cleanup_free char *data = NULL;
		size_t len;
		int ret = tern_mchan_recv(c, TERN_MSG_IMAGE_DATA, NULL, &data, &len,
					  TERN_MIG_STEP_TIMEOUT_MS, err);
		if (ret < 0)
			return tern_error_wrap(err, "image `%s`", name);
		if (len > size - got)
			return tern_error_make_quiet(
			    err, EPROTO,
			    "image `%s`: the source sent more than the %llu "
			    "bytes it announced",
			    name, (unsigned long long)size);
		if (tern_write_all(fd, data, len) < 0)
			return tern_error_make(err, errno, "write image `%s/%s`", dir, name);
		got += len;
	}
	return 0;
}

int tern_mig_images_recv(tern_mchan *c, int dirfd, const char *dir, uint64_t space_left,
			 uint64_t *bytes, tern_error **err)
{
	for (;;) {
		cleanup_free char *payload = NULL;
		uint32_t type;
		size_t len;
		uint64_t size;
		yajl_val v = NULL;
		int ret =
		    tern_mchan_recv(c, 0, &type, &payload, &len, TERN_MIG_STEP_TIMEOUT_MS, err);

		if (ret < 0)
			return ret;
		if (type == TERN_MSG_IMAGES_DONE)
			return 0;
		if (type == TERN_MSG_IMAGE_DATA && len == 0)
			continue; /* an empty file's empty chunk */
		if (type != TERN_MSG_IMAGE_FILE)
			return tern_error_make_quiet(
			    err, EPROTO,
			    "protocol: message type %u while receiving the "
			    "images (want IMAGE_FILE or IMAGES_DONE)",
			    type);
		ret = tern_mig_json_parse(payload, "IMAGE_FILE", &v, err);
		if (ret < 0)
			return ret;
		const char *name = tern_mig_json_str(v, "name");
		cleanup_free char *n = name ? tern_xstrdup(name) : NULL;
		bool have_size = tern_mig_json_u64(v, "size", &size);
		yajl_tree_free(v);
		if (n == NULL || !have_size)
			return tern_error_make_quiet(err, EPROTO,
						     "IMAGE_FILE: want a \"name\" and a \"size\"");
		if (!tern_mig_image_name_ok(n))
			return tern_error_make_quiet(
			    err, EPERM,
			    "image name `%.200s` refused: an image is a plain file name "
			    "([A-Za-z0-9_.-], not `.` or `..`)",
			    n);
		if (size > space_left)
			return tern_error_make_quiet(
			    err, ENOSPC, "no space on %s: need %llu MiB more, have %llu MiB", dir,
			    (unsigned long long)((size + (1 << 20) - 1) >> 20),
			    (unsigned long long)(space_left >> 20));
		ret = recv_one(c, dirfd, dir, n, size, err);
		if (ret < 0)
			return ret;
		space_left -= size;
		*bytes += size;
	}
}

void tern_mig_remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (d == NULL) {
		unlink(path);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && (errno == EISDIR || errno == EPERM)) {
			cleanup_free char *sub = tern_strdup_printf("%s/%s", path, e->d_name);
			tern_mig_remove_tree(sub);
		}
	}
	closedir(d);
	rmdir(path);
}

int tern_mig_free_bytes(const char *path, uint64_t *free_bytes, tern_error **err)
{
	struct statvfs sv;

	if (statvfs(path, &sv) < 0)
		return tern_error_make(err, errno, "statvfs `%s`", path);
	*free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}
