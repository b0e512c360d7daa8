/* tern-migrate's small pieces that need no privileges: image names the
 * receiver accepts, the mode names, the JSON of messages and events (the
 * writer escapes, the reader reads it back), and the receiver's image
 * loop refusing names and sizes it must not accept. */
#include "tap.h"

#include "migrate.h"
#include "utils.h"

#include <errno.h>
#include <stdlib.h>

int main(void)
{
	static const char *const good[] = {"inventory.img", "pages-1.img", "tmpfs-dev-42.tar.gz.img",
					   "tern-checkpoint.txt", "tern-config.json"};
	static const char *const bad[] = {"", ".", "..", "../x", "a/b", "/etc/passwd", "a b",
					  "x\n", "-rf*"};
	char longname[200];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ok(tern_mig_image_name_ok(good[i]), "image name `%s` accepted", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(!tern_mig_image_name_ok(bad[i]), "image name `%s` refused", bad[i]);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ok(!tern_mig_image_name_ok(longname), "a 199-byte image name refused");

	tern_mig_mode m;
	is_int(tern_mig_mode_parse("post-copy", &m), 0, "post-copy parses");
	is_str(tern_mig_mode_name(m), "post-copy", "and names itself");
	is_int(tern_mig_mode_parse("stop-and-copy", &m), 0, "stop-and-copy parses");
	is_int(tern_mig_mode_parse("fast", &m), -EINVAL, "an unknown mode is refused");
	is_int(tern_mig_mode_parse(NULL, &m), -EINVAL, "no mode is refused");

	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "config", "{\"a\":\"b\\\\c\"}\n\t");
	tern_jw_u64(&w, "size", 18446744073709551615ULL);
	tern_jw_bool(&w, "lazy", true);
	char *text = tern_jw_end(&w);
	yajl_val v = NULL;
	tern_error *err = NULL;
	uint64_t size = 0;
	is_int(tern_mig_json_parse(text, "TEST", &v, &err), 0, "the writer's JSON parses: %s", text);
	is_str(tern_mig_json_str(v, "config"), "{\"a\":\"b\\\\c\"}\n\t",
	       "a string with quotes, backslashes and controls comes back as it was");
	ok(tern_mig_json_bool(v, "lazy"), "a boolean comes back");
	ok(!tern_mig_json_u64(v, "size", &size), "a number beyond int64 is refused, not wrapped");
	ok(tern_mig_json_str(v, "missing") == NULL, "a missing key is NULL");
	yajl_tree_free(v);
	free(text);
	ok(tern_mig_json_parse("[1,2]", "OFFER", &v, &err) < 0 && strstr(err->msg, "OFFER"),
	   "a message that is not an object is refused, naming the message: %s",
	   err ? err->msg : "");
	tern_error_free(err);

	tern_jw_begin(&w);
	tern_jw_null(&w, "dirty_rate");
	text = tern_jw_end(&w);
	is_str(text, "{\"dirty_rate\":null}", "an unknown figure is written as null");
	free(text);

	/* a pagemap image as criu writes it: its two magic words, then
	 * length-prefixed messages, the head first (pages_id 1), then entries
	 * { vaddr 1, compat_nr_pages 2, flags 4, nr_pages 5 } */
	static const unsigned char pagemap[] = {
	    0x19, 0x43, 0x56, 0x54, 0x25, 0x40, 0x08, 0x56, /* magic */
	    2, 0, 0, 0, 0x08, 0x01,			    /* head */
	    /* 300 lazy pages (nr_pages, a two-byte varint), not in the images */
	    10, 0, 0, 0, 0x08, 0x80, 0x20, 0x10, 0x00, 0x20, 0x02, 0x28, 0xac, 0x02,
	    /* 3 pages lazy and present: in the images, not fetched */
	    6, 0, 0, 0, 0x08, 0x01, 0x10, 0x03, 0x20, 0x06,
	    /* 2 lazy pages of an older criu (compat_nr_pages only) */
	    6, 0, 0, 0, 0x08, 0x02, 0x10, 0x02, 0x20, 0x02,
	    /* 4 pages not lazy */
	    4, 0, 0, 0, 0x10, 0x04, 0x20, 0x04};
	uint64_t lazy = 0;
	is_int(tern_mig_pagemap_lazy_parse(pagemap, sizeof(pagemap), &lazy), 0,
	       "a pagemap image parses");
	ok(lazy == 302, "its lazy pages not in the page images are counted: %llu",
	   (unsigned long long)lazy);
	is_int(tern_mig_pagemap_lazy_parse(pagemap, sizeof(pagemap) - 1, &lazy), -EINVAL,
	       "a truncated pagemap image is refused");
	is_int(tern_mig_pagemap_lazy_parse(pagemap + 4, sizeof(pagemap) - 4, &lazy), -EINVAL,
	       "an image without criu's magic is refused");
	return done_testing();
}
