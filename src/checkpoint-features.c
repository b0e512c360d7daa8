/* What criu says this kernel can do, for tern migrate's choice of mode. */
#include "checkpoint.h"
#include "utils.h"

#include <criu/criu.h>
#include <errno.h>

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
