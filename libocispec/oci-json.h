/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libocispec internal helpers over yajl's tree API.
 *
 * Reading: the JSON text is parsed with yajl_tree_parse, then walked with
 * field tables (ojson_field): each table row names a JSON key, the kind of
 * value expected there and where it goes in the C structure. One generic
 * walker checks every type and range and builds the error message with the
 * full JSON path ("config.json: mounts[2].destination: expected a string");
 * a second walker frees whatever the first one allocated, even when parsing
 * stopped half way. So a structure in oci-config.h is described once.
 *
 * Writing: thin wrappers over yajl_gen.
 *
 * Nothing here is exported beyond libocispec.
 */
#pragma once

#include "oci-config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

/* A JSON path, kept as a chain of stack frames: each level of the walk
 * adds one link, and the text is only formatted when an error needs it.
 * key != NULL: ".key"; key == NULL and up != NULL: "[index]"; the root has
 * up == NULL and key == NULL (or a key that starts the path, e.g.
 * "process"). */
typedef struct ojson_path {
	const struct ojson_path *up;
	const char *key;
	size_t index;
} ojson_path;

typedef struct {
	const char *name; /* the file name shown at the start of every message */
	char *err;	  /* the first error, malloc'd */
} ojson_ctx;

typedef enum {
	OJ_STR = 1,   /* char * */
	OJ_STRV,      /* char ** NULL-terminated */
	OJ_BOOL,      /* bool */
	OJ_OPT_BOOL,  /* oci_opt_bool */
	OJ_U32,	      /* uint32_t */
	OJ_U64,	      /* uint64_t, bounded by .max */
	OJ_I64,	      /* int64_t, bounded by .min/.max */
	OJ_INT,	      /* int, bounded by .min/.max */
	OJ_OPT_U64,   /* oci_opt_uint64, bounded by .max */
	OJ_OPT_I64,   /* oci_opt_int64, bounded by .min/.max */
	OJ_U32_ARRAY, /* uint32_t * plus size_t count at .len_offset */
	OJ_MAP,	      /* oci_map: an object whose values are strings */
	OJ_INLINE,    /* an object whose fields (.sub) are stored relative to .offset */
	OJ_OBJECT,    /* a pointer to a heap object of .size bytes described by .sub */
	OJ_ARRAY,     /* an array of objects: pointer plus size_t count at .len_offset */
	OJ_KEYED,     /* an object of objects, stored like OJ_ARRAY; each key goes
			 to the char * at .key_offset inside the element */
	OJ_CUSTOM,    /* .parse does the work, .free (optional) releases it */
} ojson_kind;

typedef struct ojson_field {
	const char *key; /* NULL ends a table */
	ojson_kind kind;
	size_t offset;
	size_t len_offset;
	size_t size;
	size_t key_offset;
	const struct ojson_field *sub;
	/* Integer bounds. For unsigned kinds .max == 0 means "any uint64";
	 * for signed kinds .min == .max == 0 means "any int64" (OJ_INT: any int). */
	int64_t min;
	uint64_t max;
	bool nonempty; /* OJ_STRV: an empty array is an error too */
	bool required; /* absent (or null) is an error */
	int (*parse)(ojson_ctx *c, yajl_val v, const ojson_path *p, void *field);
	void (*free)(void *field);
} ojson_field;

/* Table rows. T is the C structure, m its member; array members have a
 * companion m##_len count. */
#define OJF(k, kd, T, m) .key = (k), .kind = (kd), .offset = offsetof(T, m)
#define OJF_STR(k, T, m)                                                                           \
	{                                                                                          \
		OJF(k, OJ_STR, T, m)                                                               \
	}
#define OJF_STRV(k, T, m)                                                                          \
	{                                                                                          \
		OJF(k, OJ_STRV, T, m)                                                              \
	}
#define OJF_BOOL(k, T, m)                                                                          \
	{                                                                                          \
		OJF(k, OJ_BOOL, T, m)                                                              \
	}
#define OJF_OBOOL(k, T, m)                                                                         \
	{                                                                                          \
		OJF(k, OJ_OPT_BOOL, T, m)                                                          \
	}
#define OJF_U32(k, T, m)                                                                           \
	{                                                                                          \
		OJF(k, OJ_U32, T, m)                                                               \
	}
#define OJF_U64(k, T, m)                                                                           \
	{                                                                                          \
		OJF(k, OJ_U64, T, m)                                                               \
	}
#define OJF_I64(k, T, m)                                                                           \
	{                                                                                          \
		OJF(k, OJ_I64, T, m)                                                               \
	}
#define OJF_OU64(k, T, m, mx)                                                                      \
	{                                                                                          \
		OJF(k, OJ_OPT_U64, T, m), .max = (mx)                                              \
	}
#define OJF_OI64(k, T, m, mn, mx)                                                                  \
	{                                                                                          \
		OJF(k, OJ_OPT_I64, T, m), .min = (mn), .max = (uint64_t)(mx)                       \
	}
#define OJF_MAP(k, T, m)                                                                           \
	{                                                                                          \
		OJF(k, OJ_MAP, T, m)                                                               \
	}
#define OJF_INLINE(k, T, m, s)                                                                     \
	{                                                                                          \
		OJF(k, OJ_INLINE, T, m), .sub = (s)                                                \
	}
/* A JSON object whose members are stored directly in the enclosing
 * structure (its sub-table rows use the enclosing structure's offsets). */
#define OJF_FLAT(k, s)                                                                             \
	{                                                                                          \
		.key = (k), .kind = OJ_INLINE, .offset = 0, .sub = (s)                             \
	}
#define OJF_OBJECT(k, T, m, E, s)                                                                  \
	{                                                                                          \
		OJF(k, OJ_OBJECT, T, m), .size = sizeof(E), .sub = (s)                             \
	}
#define OJF_ARRAY(k, T, m, E, s)                                                                   \
	{                                                                                          \
		OJF(k, OJ_ARRAY, T, m), .len_offset = offsetof(T, m##_len), .size = sizeof(E),     \
					.sub = (s)                                                 \
	}
#define OJF_KEYED(k, T, m, E, s, km)                                                               \
	{                                                                                          \
		OJF(k, OJ_KEYED, T, m), .len_offset = offsetof(T, m##_len), .size = sizeof(E),     \
					.sub = (s), .key_offset = offsetof(E, km)                  \
	}
#define OJF_END                                                                                    \
	{                                                                                          \
		NULL                                                                               \
	}

/* Record an error "NAME: PATH: message" (only the first one is kept).
 * Returns -EINVAL. */
int ojson_fail(ojson_ctx *c, const ojson_path *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The path as text ("process.rlimits[0].hard"), malloc'd. */
char *ojson_path_string(const ojson_path *p);

/* Parse text into a tree. Rejects NUL bytes, "\u0000" escapes (a C string
 * would silently end there) and nesting deeper than yajl_tree_free's
 * recursion can safely take. On failure *err gets "NAME: invalid JSON: ...". */
int ojson_parse_tree(const char *data, size_t len, const char *name, yajl_val *out, char **err);

/* Read a whole file (O_CLOEXEC). -errno with "open PATH: strerror". */
int ojson_read_file(const char *path, char **data, size_t *len, char **err);
/* The same, also from a pipe or FIFO (`exec -p <(...)`, as runc reads
 * it): read until the writer closes it, like runc, within the same size
 * limit. */
int ojson_read_file_or_pipe(const char *path, char **data, size_t *len, char **err);

/* The value of `key` in an object; NULL when absent or JSON null. When a
 * key is repeated the last one wins, as in Go's encoding/json (what runc
 * reads config.json with). */
yajl_val ojson_get(yajl_val obj, const char *key);

/* Walk `obj` (which must be a JSON object) with a field table into `base`. */
int ojson_parse_object(ojson_ctx *c, yajl_val obj, const ojson_path *p, const ojson_field *fields,
		       void *base);
/* Free everything a table describes inside `base` (not `base` itself). */
void ojson_free_object(const ojson_field *fields, void *base);

/* Single values, for custom parsers. */
int ojson_get_string(ojson_ctx *c, yajl_val v, const ojson_path *p, char **out);
int ojson_get_uint(ojson_ctx *c, yajl_val v, const ojson_path *p, uint64_t max, uint64_t *out);
int ojson_get_int(ojson_ctx *c, yajl_val v, const ojson_path *p, int64_t min, int64_t max,
		  int64_t *out);

void ojson_strv_free(char **strv);

/* Allocation that aborts on out-of-memory, as the rest of tern does. */
void *ojson_xmalloc0(size_t size);
void *ojson_xcalloc(size_t n, size_t size);
char *ojson_xstrdup(const char *s);
char *ojson_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writing. `indent` NULL gives compact output. */
yajl_gen ojson_gen_new(const char *indent);
void ojson_gen_key(yajl_gen g, const char *key);
void ojson_gen_string(yajl_gen g, const char *s); /* NULL is written as "" */
void ojson_gen_kv_string(yajl_gen g, const char *key, const char *value);
void ojson_gen_kv_int(yajl_gen g, const char *key, long long value);
void ojson_gen_kv_uint(yajl_gen g, const char *key, uint64_t value);
void ojson_gen_kv_bool(yajl_gen g, const char *key, bool value);
void ojson_gen_strv(yajl_gen g, const char *key, const char *const *strv);
void ojson_gen_map(yajl_gen g, const char *key, const oci_map *map);
/* Take the text out and free the generator. yajl ends beautified output
 * with a newline; runc's outputs do not, so it is removed. */
int ojson_gen_finish(yajl_gen g, char **out, size_t *len);
