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

static int send_files(tern_mchan *c, const char *dir, const char *subdir, const char *const *skip,
		      uint64_t *bytes, tern_error **err);

int tern_mig_images_send(tern_mchan *c, const char *dir, const char *const *skip, bool done,
			 uint64_t *bytes, tern_error **err)
{
	int ret = send_files(c, dir, NULL, skip, bytes, err);

	if (ret == 0 && done)
		ret = tern_mchan_send(c, TERN_MSG_IMAGES_DONE, NULL, 0, err);
	return ret;
}

int tern_mig_images_send_dir(tern_mchan *c, const char *dir, const char *subdir, uint64_t *bytes,
			     tern_error **err)
{
	return send_files(c, dir, subdir, NULL, bytes, err);
}

static int send_files(tern_mchan *c, const char *dir, const char *subdir, const char *const *skip,
		      uint64_t *bytes, tern_error **err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ret = 0;

	if (d == NULL)
		return tern_error_make(err, errno, "images `%s`", dir);
	while (ret == 0 && (e = readdir(d)) != NULL) {
		struct stat st;
		/* criu's "parent" symlinks are the target's to make */
		if (e->d_name[0] == '.' || e->d_type == DT_LNK || e->d_type == DT_DIR ||
		    skipped(e->d_name, skip))
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
		if (subdir)
			tern_jw_str(&w, "dir", subdir);
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
	return ret;
}

/* `append`: a later part of a file sent in parts (see streamed) */
static int recv_one(tern_mchan *c, int dirfd, const char *dir, const char *name, uint64_t size,
		    bool append, tern_error **err)
{
	cleanup_close int fd = -1;
	uint64_t got = 0;

	/* O_EXCL: a name sent twice is refused, never overwritten */
	if (append)
		fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	else
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
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

/* A pre-copy round's directory: "pre-N", N from 1 to 999; 0 otherwise. */
static int pre_dir_number(const char *s)
{
	char *end;
	long n;

	if (strncmp(s, "pre-", 4) != 0 || s[4] < '1' || s[4] > '9')
		return 0;
	n = strtol(s + 4, &end, 10);
	return *end == '\0' && n >= 1 && n <= 999 ? (int)n : 0;
}

/* criu finds the pages of earlier rounds through a "parent" symlink in
 * each image directory; the target makes them itself (symlinks are never
 * taken from the stream): pre-N -> ../pre-(N-1), the final -> pre-LAST. */
static int link_parents(int dirfd, const char *dir, int rounds, tern_error **err)
{
	for (int n = 2; n <= rounds; n++) {
		cleanup_free char *link = tern_strdup_printf("pre-%d/parent", n);
		cleanup_free char *target = tern_strdup_printf("../pre-%d", n - 1);
		if (symlinkat(target, dirfd, link) < 0)
			return tern_error_make(err, errno, "images `%s/%s`", dir, link);
	}
	if (rounds > 0) {
		cleanup_free char *target = tern_strdup_printf("pre-%d", rounds);
		if (symlinkat(target, dirfd, "parent") < 0)
			return tern_error_make(err, errno, "images `%s/parent`", dir);
	}
	return 0;
}

/* The files of this batch that came in parts ({"part": true}: appended to
 * what came before; only in the final dump's directory): a part may
 * follow only parts of its name, and a whole file may not follow them. */
typedef struct {
	char *names[TERN_MIG_PARTS_MAX];
	size_t n;
} streamed;

static bool streamed_has(const streamed *st, const char *name)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->names[i], name) == 0)
			return true;
	return false;
}

static void streamed_free(streamed *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->names[i]);
	st->n = 0;
}

static int recv_batch(tern_mchan *c, int dirfd, const char *dir, uint64_t space_left,
		      uint64_t *bytes, int *pre_rounds, bool final, streamed *st, tern_error **err);

int tern_mig_images_recv(tern_mchan *c, int dirfd, const char *dir, uint64_t space_left,
			 uint64_t *bytes, int *pre_rounds, bool final, tern_error **err)
{
	streamed st = {.n = 0};
	int ret = recv_batch(c, dirfd, dir, space_left, bytes, pre_rounds, final, &st, err);

	streamed_free(&st);
	return ret;
}

static int recv_batch(tern_mchan *c, int dirfd, const char *dir, uint64_t space_left,
		      uint64_t *bytes, int *pre_rounds, bool final, streamed *st, tern_error **err)
{
	int rounds = *pre_rounds;

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
		if (type == TERN_MSG_IMAGES_DONE) {
			*pre_rounds = rounds;
			return final ? link_parents(dirfd, dir, rounds, err) : 0;
		}
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
		const char *sub = tern_mig_json_str(v, "dir");
		cleanup_free char *n = name ? tern_xstrdup(name) : NULL;
		int round = sub ? pre_dir_number(sub) : 0;
		bool have_size = tern_mig_json_u64(v, "size", &size);
		bool part = tern_mig_json_bool(v, "part");
		yajl_tree_free(v);
		if (n == NULL || !have_size)
			return tern_error_make_quiet(err, EPROTO,
						     "IMAGE_FILE: want a \"name\" and a \"size\"");
		/* pre-copy rounds come in order, each in its own directory */
		if (sub && (round == 0 || round < rounds || round > rounds + 1))
			return tern_error_make_quiet(err, EPERM,
						     "image directory refused: pre-copy rounds are "
						     "pre-1, pre-2, ... in order");
		if (!tern_mig_image_name_ok(n))
			return tern_error_make_quiet(
			    err, EPERM,
			    "image name `%.200s` refused: an image is a plain file name "
			    "([A-Za-z0-9_.-], not `.` or `..`)",
			    n);
		if (part && sub)
			return tern_error_make_quiet(err, EPERM,
						     "image `%.200s` refused: only the final dump's "
						     "images come in parts",
						     n);
		bool append = part && streamed_has(st, n);
		if (part && !append) {
			if (st->n == sizeof(st->names) / sizeof(st->names[0]))
				return tern_error_make_quiet(err, EPROTO,
							     "more than %zu images in parts",
							     st->n);
			st->names[st->n++] = tern_xstrdup(n);
		}
		if (size > space_left)
			return tern_error_make_quiet(
			    err, ENOSPC, "no space on %s: need %llu MiB more, have %llu MiB", dir,
			    (unsigned long long)((size + (1 << 20) - 1) >> 20),
			    (unsigned long long)(space_left >> 20));
		if (round) {
			cleanup_free char *subname = tern_strdup_printf("pre-%d", round);
			cleanup_free char *subpath = tern_strdup_printf("%s/%s", dir, subname);
			if (round > rounds && mkdirat(dirfd, subname, 0700) < 0)
				return tern_error_make(err, errno, "images `%s`", subpath);
			rounds = round;
			cleanup_close int subfd =
			    openat(dirfd, subname, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (subfd < 0)
				return tern_error_make(err, errno, "images `%s`", subpath);
			ret = recv_one(c, subfd, subpath, n, size, false, err);
		} else {
			ret = recv_one(c, dirfd, dir, n, size, append, err);
		}
		if (ret < 0)
			return ret;
		space_left -= size;
		*bytes += size;
	}
}

int tern_mig_free_bytes(const char *path, uint64_t *free_bytes, tern_error **err)
{
	struct statvfs sv;

	if (statvfs(path, &sv) < 0)
		return tern_error_make(err, errno, "statvfs `%s`", path);
	*free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}
