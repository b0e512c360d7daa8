/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libocispec internal helpers: reading JSON through field tables, writing it
 * with yajl_gen. See oci-json.h for the model. */
#include "oci-json.h"
#include "oci-state.h"

#include <yajl/yajl_parse.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* config.json nests about six levels deep. yajl_tree_free recurses once per
 * level, so a hostile file of a million '[' would overflow the stack; refuse
 * anything deeper than this long before that. */
#define MAX_DEPTH 128

/* No config or state file is anywhere near this; it bounds memory use. */
#define MAX_FILE_SIZE (64u << 20)

void *ojson_xmalloc0(size_t size)
{
	void *p = calloc(1, size ? size : 1);
	if (p == NULL)
		abort();
	return p;
}

void *ojson_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		abort();
	return p;
}

char *ojson_xstrdup(const char *s)
{
	char *r;
	if (s == NULL)
		return NULL;
	r = strdup(s);
	if (r == NULL)
		abort();
	return r;
}

static char *vstrdup_printf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	return s;
}

char *ojson_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = vstrdup_printf(fmt, ap);
	va_end(ap);
	return s;
}

void ojson_strv_free(char **strv)
{
	if (strv == NULL)
		return;
	for (char **s = strv; *s; s++)
		free(*s);
	free(strv);
}

size_t oci_strv_len(char *const *strv)
{
	size_t n = 0;
	while (strv && strv[n])
		n++;
	return n;
}

/* ---- paths and errors ---- */

static void path_print(FILE *f, const ojson_path *p)
{
	if (p == NULL)
		return;
	path_print(f, p->up);
	if (p->key == NULL && p->up == NULL)
		return;
	if (p->key == NULL)
		fprintf(f, "[%zu]", p->index);
	else if (ftell(f) > 0)
		fprintf(f, ".%s", p->key);
	else
		fputs(p->key, f);
}

char *ojson_path_string(const ojson_path *p)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (f == NULL)
		abort();
	path_print(f, p);
	if (fclose(f) != 0)
		abort();
	return buf;
}

int ojson_fail(ojson_ctx *c, const ojson_path *p, const char *fmt, ...)
{
	char *msg, *path;
	va_list ap;

	if (c->err != NULL)
		return -EINVAL;
	va_start(ap, fmt);
	msg = vstrdup_printf(fmt, ap);
	va_end(ap);
	path = ojson_path_string(p);
	if (path[0])
		c->err = ojson_strdup_printf("%s: %s: %s", c->name, path, msg);
	else
		c->err = ojson_strdup_printf("%s: %s", c->name, msg);
	free(path);
	free(msg);
	return -EINVAL;
}

/* ---- reading text ---- */

/* Read `fd` (named `path` in messages) to its end, at most MAX_FILE_SIZE
 * bytes. Closes fd. */
static int read_all(int fd, const char *path, char **data, size_t *len, char **err)
{
	char *buf = NULL;
	size_t used = 0, cap = 0;
	int ret;

	for (;;) {
		ssize_t n;
		if (used + 1 >= cap) {
			cap = cap ? cap * 2 : 16384;
			buf = realloc(buf, cap);
			if (buf == NULL)
				abort();
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			*err = ojson_strdup_printf("read %s: %s", path, strerror(-ret));
			goto fail;
		}
		if (n == 0)
			break;
		used += n;
		if (used > MAX_FILE_SIZE) {
			ret = -EFBIG;
			*err = ojson_strdup_printf("read %s: more than the limit of %u MiB (%s)",
						   path, MAX_FILE_SIZE >> 20, strerror(EFBIG));
			goto fail;
		}
	}
	close(fd);
	buf[used] = '\0';
	*data = buf;
	*len = used;
	return 0;
fail:
	close(fd);
	free(buf);
	return ret;
}

/* Open `path` and check its type: a regular file, or also a pipe or FIFO
 * when `pipes`. */
static int open_typed(const char *path, bool pipes, int *out, char **err)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		*err = ojson_strdup_printf("open %s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		*err = ojson_strdup_printf("stat %s: %s", path, strerror(-ret));
		close(fd);
		return ret;
	}
	/* A device could block or never end (/dev/zero is bounded by the
	 * size limit, a tty by nothing); a pipe ends when its writer closes,
	 * and what it sends is bounded by the size limit all the same. */
	if (!S_ISREG(st.st_mode) && !(pipes && S_ISFIFO(st.st_mode))) {
		*err = ojson_strdup_printf("open %s: not a regular file%s", path,
					   pipes ? " or a pipe" : "");
		close(fd);
		return -EINVAL;
	}
	*out = fd;
	return 0;
}

int ojson_read_file(const char *path, char **data, size_t *len, char **err)
{
	int fd, ret = open_typed(path, false, &fd, err);
	return ret < 0 ? ret : read_all(fd, path, data, len, err);
}

int ojson_read_file_or_pipe(const char *path, char **data, size_t *len, char **err)
{
	int fd, ret = open_typed(path, true, &fd, err);
	return ret < 0 ? ret : read_all(fd, path, data, len, err);
}

/* What the tree cannot tell us afterwards: a "\u0000" escape ends the C
 * string it produces, so "/etc\u0000/x" would quietly read as "/etc". And
 * a first, cheap look at the depth (the tree builder below counts it for
 * real). This is a scan for those two things only, not a parser: yajl
 * still judges the syntax. */
static const char *prescan(const char *data, size_t len)
{
	size_t depth = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char ch = data[i];
		if (ch == '\0')
			return "the text contains a NUL byte";
		if (in_string) {
			if (ch == '\\') {
				if (i + 5 < len && memcmp(data + i + 1, "u0000", 5) == 0)
					return "strings must not contain \\u0000";
				i++;
			} else if (ch == '"') {
				in_string = false;
			}
			continue;
		}
		if (ch == '"') {
			in_string = true;
		} else if (ch == '[' || ch == '{') {
			if (++depth > MAX_DEPTH)
				return "nested too deeply";
		} else if ((ch == ']' || ch == '}') && depth > 0) {
			depth--;
		}
	}
	return NULL;
}

/* ---- the tree ----
 *
 * The same tree as yajl_tree_parse's (yajl_val nodes that yajl_tree_free
 * frees), built here on yajl's callback parser for two reasons. yajl_tree
 * grows an array or object by one element per value: glibc's realloc
 * absorbs that (mremap), but an allocator that copies on every growth
 * (ASan's, valgrind's) made 100000 process.args take minutes; here the
 * room doubles. And the depth is counted on the real structure: prescan's
 * count can be fooled by brackets inside comments, which yajl_tree_parse
 * allows (so do we), and yajl_tree_free recurses once per level. */

typedef struct {
	yajl_val root;
	yajl_val open[MAX_DEPTH]; /* the arrays and objects not closed yet */
	size_t room[MAX_DEPTH];	  /* how many elements each one's arrays hold */
	size_t depth;
	char *key; /* an object's key, until its value comes */
	bool too_deep;
} tree_builder;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

static yajl_val new_node(yajl_type type)
{
	yajl_val v = ojson_xmalloc0(sizeof(*v));
	v->type = type;
	return v;
}

static char *xstrndup(const unsigned char *s, size_t n)
{
	char *c = ojson_xmalloc0(n + 1);
	memcpy(c, s, n);
	return c;
}

/* v into the innermost open array or object, or as the root */
static int attach(tree_builder *b, yajl_val v)
{
	if (b->depth == 0) {
		b->root = v;
		return 1;
	}
	yajl_val parent = b->open[b->depth - 1];
	size_t *room = &b->room[b->depth - 1];
	if (parent->type == yajl_t_array) {
		if (parent->u.array.len == *room) {
			*room = *room ? *room * 2 : 4;
			parent->u.array.values =
			    xrealloc(parent->u.array.values, *room * sizeof(yajl_val));
		}
		parent->u.array.values[parent->u.array.len++] = v;
		return 1;
	}
	if (parent->u.object.len == *room) {
		*room = *room ? *room * 2 : 4;
		parent->u.object.keys = xrealloc(parent->u.object.keys, *room * sizeof(char *));
		parent->u.object.values = xrealloc(parent->u.object.values, *room * sizeof(yajl_val));
	}
	parent->u.object.keys[parent->u.object.len] = b->key;
	parent->u.object.values[parent->u.object.len++] = v;
	b->key = NULL;
	return 1;
}

static int open_container(tree_builder *b, yajl_type type)
{
	if (b->depth == MAX_DEPTH) {
		b->too_deep = true;
		return 0; /* yajl stops: "client cancelled parse" */
	}
	yajl_val v = new_node(type);
	attach(b, v);
	b->open[b->depth] = v;
	b->room[b->depth++] = 0;
	return 1;
}

static int on_null(void *ctx)
{
	return attach(ctx, new_node(yajl_t_null));
}

static int on_boolean(void *ctx, int value)
{
	return attach(ctx, new_node(value ? yajl_t_true : yajl_t_false));
}

/* the raw text, and the integer and double it reads as when it does, as
 * yajl_tree keeps them */
static int on_number(void *ctx, const char *s, size_t n)
{
	yajl_val v = new_node(yajl_t_number);
	char *end;

	v->u.number.r = xstrndup((const unsigned char *)s, n);
	errno = 0;
	v->u.number.i = strtoll(v->u.number.r, &end, 10);
	if (errno == 0 && end != v->u.number.r && *end == '\0')
		v->u.number.flags |= YAJL_NUMBER_INT_VALID;
	errno = 0;
	v->u.number.d = strtod(v->u.number.r, &end);
	if (errno == 0 && end != v->u.number.r && *end == '\0')
		v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
	return attach(ctx, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
	yajl_val v = new_node(yajl_t_string);
	v->u.string = xstrndup(s, n);
	return attach(ctx, v);
}

static int on_start_map(void *ctx)
{
	return open_container(ctx, yajl_t_object);
}

static int on_map_key(void *ctx, const unsigned char *s, size_t n)
{
	tree_builder *b = ctx;
	free(b->key);
	b->key = xstrndup(s, n);
	return 1;
}

static int on_start_array(void *ctx)
{
	return open_container(ctx, yajl_t_array);
}

static int on_close(void *ctx)
{
	tree_builder *b = ctx;
	b->depth--;
	return 1;
}

static const yajl_callbacks tree_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_close,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_close,
};

int ojson_parse_tree(const char *data, size_t len, const char *name, yajl_val *out, char **err)
{
	tree_builder *b;
	yajl_handle h;
	yajl_status st;
	const char *why;
	char *msg, *nl;

	why = prescan(data, len);
	if (why != NULL) {
		*err = ojson_strdup_printf("%s: invalid JSON: %s", name, why);
		return -EINVAL;
	}
	b = ojson_xmalloc0(sizeof(*b));
	h = yajl_alloc(&tree_callbacks, NULL, b);
	if (h == NULL)
		abort();
	yajl_config(h, yajl_allow_comments, 1);
	st = yajl_parse(h, (const unsigned char *)data, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st == yajl_status_ok && b->root != NULL) {
		yajl_free(h);
		*out = b->root;
		free(b);
		return 0;
	}
	if (b->too_deep) {
		*err = ojson_strdup_printf("%s: invalid JSON: nested too deeply", name);
	} else {
		/* yajl's message goes on with a copy of the text and a "right
		 * here" arrow on further lines; keep the first line only. */
		msg = (char *)yajl_get_error(h, 1, (const unsigned char *)data, len);
		nl = msg ? strchr(msg, '\n') : NULL;
		if (nl)
			*nl = '\0';
		for (size_t n = msg ? strlen(msg) : 0; n > 0 && msg[n - 1] == ' '; n--)
			msg[n - 1] = '\0';
		*err = ojson_strdup_printf("%s: invalid JSON: %s", name,
					   msg && msg[0] ? msg : "parse error");
		if (msg)
			yajl_free_error(h, (unsigned char *)msg);
	}
	yajl_free(h);
	yajl_tree_free(b->root);
	free(b->key);
	free(b);
	return -EINVAL;
}

/* ---- single values ---- */

yajl_val ojson_get(yajl_val obj, const char *key)
{
	if (!YAJL_IS_OBJECT(obj))
		return NULL;
	for (size_t i = obj->u.object.len; i > 0; i--) {
		if (strcmp(obj->u.object.keys[i - 1], key) == 0) {
			yajl_val v = obj->u.object.values[i - 1];
			return YAJL_IS_NULL(v) ? NULL : v;
		}
	}
	return NULL;
}

int ojson_get_string(ojson_ctx *c, yajl_val v, const ojson_path *p, char **out)
{
	if (!YAJL_IS_STRING(v))
		return ojson_fail(c, p, "expected a string");
	free(*out);
	*out = ojson_xstrdup(v->u.string);
	return 0;
}

/* JSON allows 1.0 and 1e3; Go's decoder (and so runc) refuses them for
 * integer fields, and so do we: only plain digits, with an optional '-'. */
static bool is_integer_text(const char *s, bool allow_minus)
{
	if (allow_minus && *s == '-')
		s++;
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int ojson_get_uint(ojson_ctx *c, yajl_val v, const ojson_path *p, uint64_t max, uint64_t *out)
{
	unsigned long long x;
	const char *text;
	char *end;

	if (!YAJL_IS_NUMBER(v) || !is_integer_text(v->u.number.r, false))
		return ojson_fail(c, p, "expected an unsigned integer");
	text = v->u.number.r;
	errno = 0;
	x = strtoull(text, &end, 10);
	if (errno == ERANGE || *end != '\0' || x > max)
		return ojson_fail(c, p, "%s is out of range (at most %" PRIu64 ")", text, max);
	*out = x;
	return 0;
}

int ojson_get_int(ojson_ctx *c, yajl_val v, const ojson_path *p, int64_t min, int64_t max,
		  int64_t *out)
{
	long long x;
	const char *text;
	char *end;

	if (!YAJL_IS_NUMBER(v) || !is_integer_text(v->u.number.r, true))
		return ojson_fail(c, p, "expected an integer");
	text = v->u.number.r;
	errno = 0;
	x = strtoll(text, &end, 10);
	if (errno == ERANGE || *end != '\0' || x < min || x > max)
		return ojson_fail(c, p, "%s is out of range (%" PRId64 " to %" PRId64 ")", text,
				  min, max);
	*out = x;
	return 0;
}

/* ---- composite values ---- */

static int parse_strv(ojson_ctx *c, yajl_val v, const ojson_path *p, bool nonempty, char ***out)
{
	const char *what =
	    nonempty ? "expected a non-empty array of strings" : "expected an array of strings";
	char **strv;
	size_t n;

	if (!YAJL_IS_ARRAY(v) || (nonempty && v->u.array.len == 0))
		return ojson_fail(c, p, "%s", what);
	n = v->u.array.len;
	for (size_t i = 0; i < n; i++) {
		if (!YAJL_IS_STRING(v->u.array.values[i])) {
			ojson_path ip = {p, NULL, i};
			return ojson_fail(c, &ip, "expected a string");
		}
	}
	/* Present but empty is a one-element {NULL}: see oci-config.h. */
	strv = ojson_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		strv[i] = ojson_xstrdup(v->u.array.values[i]->u.string);
	ojson_strv_free(*out);
	*out = strv;
	return 0;
}

static int parse_u32_array(ojson_ctx *c, yajl_val v, const ojson_path *p, uint32_t **out,
			   size_t *len)
{
	uint32_t *items;
	uint64_t x;
	int ret;

	if (!YAJL_IS_ARRAY(v))
		return ojson_fail(c, p, "expected an array of unsigned integers");
	items = ojson_xcalloc(v->u.array.len, sizeof(uint32_t));
	for (size_t i = 0; i < v->u.array.len; i++) {
		ojson_path ip = {p, NULL, i};
		ret = ojson_get_uint(c, v->u.array.values[i], &ip, UINT32_MAX, &x);
		if (ret < 0) {
			free(items);
			return ret;
		}
		items[i] = (uint32_t)x;
	}
	*out = items;
	*len = v->u.array.len;
	return 0;
}

struct key_ref {
	const char *key;
	size_t index;
};

static int key_ref_cmp(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	int r = strcmp(x->key, y->key);
	if (r != 0)
		return r;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Marks which members of a JSON object to keep when keys repeat: the last
 * of each, as Go's decoder does. Sorting keeps this O(n log n) however many
 * annotations a file holds. Returns a malloc'd array of flags. */
static bool *last_of_each_key(yajl_val obj)
{
	size_t n = obj->u.object.len;
	struct key_ref *refs = ojson_xcalloc(n, sizeof(*refs));
	bool *keep = ojson_xcalloc(n, sizeof(bool));

	for (size_t i = 0; i < n; i++)
		refs[i] = (struct key_ref){obj->u.object.keys[i], i};
	qsort(refs, n, sizeof(*refs), key_ref_cmp);
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || strcmp(refs[i].key, refs[i + 1].key) != 0)
			keep[refs[i].index] = true;
	free(refs);
	return keep;
}

static int parse_map(ojson_ctx *c, yajl_val v, const ojson_path *p, oci_map *map)
{
	bool *keep;
	int ret = 0;

	if (!YAJL_IS_OBJECT(v))
		return ojson_fail(c, p, "expected an object");
	oci_map_clear(map);
	keep = last_of_each_key(v);
	map->items = ojson_xcalloc(v->u.object.len, sizeof(oci_kv));
	for (size_t i = 0; i < v->u.object.len; i++) {
		ojson_path kp = {p, v->u.object.keys[i], 0};
		if (!keep[i])
			continue;
		if (!YAJL_IS_STRING(v->u.object.values[i])) {
			ret = ojson_fail(c, &kp, "expected a string");
			break;
		}
		map->items[map->len].key = ojson_xstrdup(v->u.object.keys[i]);
		map->items[map->len].value = ojson_xstrdup(v->u.object.values[i]->u.string);
		map->len++;
	}
	free(keep);
	return ret;
}

static int parse_struct_array(ojson_ctx *c, yajl_val v, const ojson_path *p, const ojson_field *f,
			      char *base)
{
	bool keyed = f->kind == OJ_KEYED;
	size_t n, *len = (size_t *)(base + f->len_offset);
	char **items = (char **)(base + f->offset);
	bool *keep = NULL;
	int ret = 0;

	if (keyed ? !YAJL_IS_OBJECT(v) : !YAJL_IS_ARRAY(v))
		return ojson_fail(c, p, keyed ? "expected an object" : "expected an array");
	n = keyed ? v->u.object.len : v->u.array.len;
	/* The count is set before the elements are filled so that freeing
	 * after a failure half way releases what was parsed. */
	*items = ojson_xcalloc(n, f->size);
	*len = 0;
	if (keyed)
		keep = last_of_each_key(v);
	for (size_t i = 0; i < n && ret == 0; i++) {
		ojson_path ip = {p, keyed ? v->u.object.keys[i] : NULL, i};
		yajl_val ev = keyed ? v->u.object.values[i] : v->u.array.values[i];
		char *elem = *items + *len * f->size;

		if (keyed && !keep[i])
			continue;
		if (!YAJL_IS_OBJECT(ev)) {
			ret = ojson_fail(c, &ip, "expected an object");
			break;
		}
		(*len)++;
		if (keyed)
			*(char **)(elem + f->key_offset) = ojson_xstrdup(v->u.object.keys[i]);
		ret = ojson_parse_object(c, ev, &ip, f->sub, elem);
	}
	free(keep);
	return ret;
}

static int parse_field(ojson_ctx *c, yajl_val v, const ojson_path *p, const ojson_field *f,
		       char *base)
{
	char *dst = base + f->offset;
	uint64_t umax = f->max ? f->max : UINT64_MAX;
	int64_t imin = f->min, imax = (int64_t)f->max;
	uint64_t u;
	int64_t i;
	int ret;

	if (f->kind == OJ_INT && imin == 0 && imax == 0) {
		imin = INT32_MIN;
		imax = INT32_MAX;
	} else if (imin == 0 && imax == 0) {
		imin = INT64_MIN;
		imax = INT64_MAX;
	}

	switch (f->kind) {
	case OJ_STR:
		return ojson_get_string(c, v, p, (char **)dst);
	case OJ_STRV:
		return parse_strv(c, v, p, f->nonempty, (char ***)dst);
	case OJ_BOOL:
	case OJ_OPT_BOOL:
		if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
			return ojson_fail(c, p, "expected a boolean");
		if (f->kind == OJ_BOOL)
			*(bool *)dst = YAJL_IS_TRUE(v);
		else
			*(oci_opt_bool *)dst = (oci_opt_bool){true, YAJL_IS_TRUE(v)};
		return 0;
	case OJ_U32:
		umax = UINT32_MAX;
		/* fall through */
	case OJ_U64:
	case OJ_OPT_U64:
		ret = ojson_get_uint(c, v, p, umax, &u);
		if (ret < 0)
			return ret;
		if (f->kind == OJ_U32)
			*(uint32_t *)dst = (uint32_t)u;
		else if (f->kind == OJ_U64)
			*(uint64_t *)dst = u;
		else
			*(oci_opt_uint64 *)dst = (oci_opt_uint64){true, u};
		return 0;
	case OJ_I64:
	case OJ_INT:
	case OJ_OPT_I64:
		ret = ojson_get_int(c, v, p, imin, imax, &i);
		if (ret < 0)
			return ret;
		if (f->kind == OJ_INT)
			*(int *)dst = (int)i;
		else if (f->kind == OJ_I64)
			*(int64_t *)dst = i;
		else
			*(oci_opt_int64 *)dst = (oci_opt_int64){true, i};
		return 0;
	case OJ_U32_ARRAY:
		return parse_u32_array(c, v, p, (uint32_t **)dst, (size_t *)(base + f->len_offset));
	case OJ_MAP:
		return parse_map(c, v, p, (oci_map *)dst);
	case OJ_INLINE:
		if (!YAJL_IS_OBJECT(v))
			return ojson_fail(c, p, "expected an object");
		return ojson_parse_object(c, v, p, f->sub, dst);
	case OJ_OBJECT:
		if (!YAJL_IS_OBJECT(v))
			return ojson_fail(c, p, "expected an object");
		*(void **)dst = ojson_xmalloc0(f->size);
		return ojson_parse_object(c, v, p, f->sub, *(void **)dst);
	case OJ_ARRAY:
	case OJ_KEYED:
		return parse_struct_array(c, v, p, f, base);
	case OJ_CUSTOM:
		return f->parse(c, v, p, dst);
	}
	return ojson_fail(c, p, "internal error: unknown field kind %d", (int)f->kind);
}

int ojson_parse_object(ojson_ctx *c, yajl_val obj, const ojson_path *p, const ojson_field *fields,
		       void *base)
{
	if (!YAJL_IS_OBJECT(obj))
		return ojson_fail(c, p, "expected an object");
	for (const ojson_field *f = fields; f->key; f++) {
		ojson_path fp = {p, f->key, 0};
		yajl_val v = ojson_get(obj, f->key);
		int ret;

		if (v == NULL) {
			if (f->required)
				return ojson_fail(c, &fp, "is required");
			continue;
		}
		ret = parse_field(c, v, &fp, f, base);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void ojson_free_object(const ojson_field *fields, void *base)
{
	for (const ojson_field *f = fields; f->key; f++) {
		char *dst = (char *)base + f->offset;
		switch (f->kind) {
		case OJ_STR:
		case OJ_U32_ARRAY:
			free(*(void **)dst);
			*(void **)dst = NULL;
			break;
		case OJ_STRV:
			ojson_strv_free(*(char ***)dst);
			*(char ***)dst = NULL;
			break;
		case OJ_MAP:
			oci_map_clear((oci_map *)dst);
			break;
		case OJ_INLINE:
			ojson_free_object(f->sub, dst);
			break;
		case OJ_OBJECT:
			if (*(void **)dst) {
				ojson_free_object(f->sub, *(void **)dst);
				free(*(void **)dst);
				*(void **)dst = NULL;
			}
			break;
		case OJ_ARRAY:
		case OJ_KEYED: {
			char *items = *(char **)dst;
			size_t *len = (size_t *)((char *)base + f->len_offset);
			for (size_t i = 0; items && i < *len; i++) {
				ojson_free_object(f->sub, items + i * f->size);
				if (f->kind == OJ_KEYED)
					free(*(char **)(items + i * f->size + f->key_offset));
			}
			free(items);
			*(char **)dst = NULL;
			*len = 0;
			break;
		}
		case OJ_CUSTOM:
			if (f->free)
				f->free(dst);
			break;
		default:
			break;
		}
	}
}

/* ---- string maps (declared in oci-state.h, used by config and state) ---- */

void oci_map_clear(oci_map *map)
{
	if (map == NULL)
		return;
	for (size_t i = 0; i < map->len; i++) {
		free(map->items[i].key);
		free(map->items[i].value);
	}
	free(map->items);
	map->items = NULL;
	map->len = 0;
}

int oci_map_copy(oci_map *dst, const oci_map *src)
{
	oci_map copy = {0};

	if (src->len > 0) {
		copy.items = ojson_xcalloc(src->len, sizeof(oci_kv));
		for (size_t i = 0; i < src->len; i++) {
			copy.items[i].key = ojson_xstrdup(src->items[i].key);
			copy.items[i].value = ojson_xstrdup(src->items[i].value);
		}
		copy.len = src->len;
	}
	oci_map_clear(dst);
	*dst = copy;
	return 0;
}

/* ---- writing ---- */

yajl_gen ojson_gen_new(const char *indent)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	if (g == NULL)
		abort();
	if (indent) {
		yajl_gen_config(g, yajl_gen_beautify, 1);
		yajl_gen_config(g, yajl_gen_indent_string, indent);
	}
	return g;
}

void ojson_gen_string(yajl_gen g, const char *s)
{
	if (s == NULL)
		s = "";
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

void ojson_gen_key(yajl_gen g, const char *key)
{
	ojson_gen_string(g, key);
}

void ojson_gen_kv_string(yajl_gen g, const char *key, const char *value)
{
	ojson_gen_key(g, key);
	ojson_gen_string(g, value);
}

void ojson_gen_kv_int(yajl_gen g, const char *key, long long value)
{
	ojson_gen_key(g, key);
	yajl_gen_integer(g, value);
}

void ojson_gen_kv_uint(yajl_gen g, const char *key, uint64_t value)
{
	/* yajl_gen_integer takes a long long; values above INT64_MAX (an
	 * unlimited rlimit, say) go out as text. */
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, value);
	ojson_gen_key(g, key);
	yajl_gen_number(g, buf, n);
}

void ojson_gen_kv_bool(yajl_gen g, const char *key, bool value)
{
	ojson_gen_key(g, key);
	yajl_gen_bool(g, value);
}

void ojson_gen_strv(yajl_gen g, const char *key, const char *const *strv)
{
	ojson_gen_key(g, key);
	yajl_gen_array_open(g);
	for (size_t i = 0; strv && strv[i]; i++)
		ojson_gen_string(g, strv[i]);
	yajl_gen_array_close(g);
}

void ojson_gen_map(yajl_gen g, const char *key, const oci_map *map)
{
	ojson_gen_key(g, key);
	yajl_gen_map_open(g);
	for (size_t i = 0; i < map->len; i++)
		ojson_gen_kv_string(g, map->items[i].key, map->items[i].value);
	yajl_gen_map_close(g);
}

int ojson_gen_finish(yajl_gen g, char **out, size_t *len)
{
	const unsigned char *buf;
	size_t n;
	char *s;

	if (yajl_gen_get_buf(g, &buf, &n) != yajl_gen_status_ok) {
		yajl_gen_free(g);
		return -EINVAL;
	}
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	s = ojson_xmalloc0(n + 1);
	memcpy(s, buf, n);
	yajl_gen_free(g);
	*out = s;
	if (len)
		*len = n;
	return 0;
}
