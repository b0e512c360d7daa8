/* What criu says this kernel can do: for tern migrate's choice of mode,
 * and, cached per boot and criu binary, for every checkpoint, restore,
 * snapshot and clone (which then skip asking criu its version). */
#include "checkpoint.h"
#include "utils.h"

#include <criu/criu.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int tern_criu_features_check(const char *criu, tern_criu_features *f, tern_error **err)
{
	struct criu_feature_check want = {.mem_track = true, .lazy_pages = true};
	criu_opts *opts = NULL;
	int ret;

	*f = (tern_criu_features){0};
	if (criu_local_init_opts(&opts) < 0)
		return tern_error_make(err, ENOMEM, "libcriu options");
	criu_local_set_service_binary(opts, criu);
	/* the version here, once, before anything is frozen: the dump and
	 * restore of a migration skip it (tern_ckpt_opts.criu_checked) */
	int v = criu_local_get_version(opts);
	if (v < 31100) {
		criu_local_free_opts(opts);
		return v <= 0 ? tern_error_make_quiet(err, ENOEXEC,
						      "criu `%s` does not work (it did not answer "
						      "a version request)",
						      criu)
			      : tern_error_make_quiet(
				    err, ENOTSUP, "criu `%s` is version %d; tern needs 3.11 or later",
				    criu, v);
	}
	/* criu answers a feature check with each asked feature set or
	 * cleared (or fails outright when none works: then neither) */
	ret = criu_local_feature_check(opts, &want, sizeof(want));
	criu_local_free_opts(opts);
	f->works = true;
	if (ret == 0) {
		f->mem_track = want.mem_track;
		f->lazy_pages = want.lazy_pages;
	}
	return 0;
}

/* What criu can do here (track dirty pages, restore lazily), asked once
 * per boot and criu binary (a check starts criu twice, ~40 ms each: every
 * checkpoint, restore, snapshot, rollback and clone would pay it) and kept
 * in ROOT/.criu:features (':' is never in a container id, so it is no
 * container's state; beside the seccomp cache) as "BOOT-ID CRIU-ID
 * MEM-TRACK LAZY" (CRIU-ID: the binary's device, inode and mtime). Only a
 * criu that answered is cached, so `works` is true when it is. */
tern_criu_features tern_criu_features_cached(const char *root, const char *criu)
{
	cleanup_free char *cache = tern_strdup_printf("%s/.criu:features", root);
	cleanup_free char *boot = NULL, *cached = NULL;
	tern_criu_features f = {0};
	struct stat st;
	size_t len;

	if (stat(criu, &st) < 0 ||
	    tern_read_file("/proc/sys/kernel/random/boot_id", &boot, &len, 64, NULL) < 0)
		return f;
	boot[strcspn(boot, "\n")] = '\0';
	cleanup_free char *binary = tern_strdup_printf(
	    "%llx:%llx:%lld.%09ld", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (tern_read_file(cache, &cached, &len, 256, NULL) == 0) {
		char id[64], bin[96];
		int m, l;
		if (sscanf(cached, "%63s %95s %d %d", id, bin, &m, &l) == 4 &&
		    strcmp(id, boot) == 0 && strcmp(bin, binary) == 0) {
			f.mem_track = m == 1;
			f.lazy_pages = l == 1;
			f.works = true;
			return f;
		}
	}
	tern_error *e = NULL;
	if (tern_criu_features_check(criu, &f, &e) < 0) {
		tern_error_free(e);
		return f;
	}
	cleanup_free char *line = tern_strdup_printf("%s %s %d %d\n", boot, binary,
						     f.mem_track ? 1 : 0, f.lazy_pages ? 1 : 0);
	if (tern_mkdir_p(root, 0700, &e) < 0 ||
	    tern_write_file(cache, line, strlen(line), 0600, &e) < 0)
		tern_error_free(e);
	return f;
}

void tern_ckpt_skip_known_checks(const char *root, const char *criu, tern_ckpt_opts *o)
{
	tern_criu_features f = tern_criu_features_cached(root, criu);

	o->criu_checked = f.works && (!o->lazy_pages || f.lazy_pages) &&
			  (!o->pre_dump || f.mem_track);
}
