/* The progress events of tern migrate, migrate-receive and snapshot: a
 * text line on stderr ("SIDE [   1.234s] what happened"), or with
 * --format json one JSON object a line on stdout ({"event", "side",
 * "t_ms", then the event's own fields}). Apart from migrate.h so that tern
 * itself (tern snapshot), which does not link the migration's TLS, prints
 * the same events. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* how often a transfer or a dump that runs says how far it got */
#define TERN_PROGRESS_MS 250

typedef struct {
	bool json;
	const char *side; /* "source", "target", "snapshot" */
	uint64_t t0_ns;
} tern_mig_progress;

uint64_t tern_mig_now_ns(void);
void tern_mig_progress_init(tern_mig_progress *p, const char *side, bool json);

/* A small JSON object writer (messages and events). */
typedef struct {
	char *buf;
	size_t len;
	FILE *f;
	bool first;
} tern_jw;

void tern_jw_begin(tern_jw *w);
void tern_jw_str(tern_jw *w, const char *key, const char *value);
void tern_jw_u64(tern_jw *w, const char *key, uint64_t value);
void tern_jw_bool(tern_jw *w, const char *key, bool value);
/* `key: [values...]`: a list of strings */
void tern_jw_strv(tern_jw *w, const char *key, char *const *values, size_t n);
/* `key: null`: a figure that cannot be known (said, rather than left out) */
void tern_jw_null(tern_jw *w, const char *key);
/* Ends the object; returns the malloc'd text (the caller frees it). */
char *tern_jw_end(tern_jw *w);

/* Print an event: `w` holds its fields after "event"; `text` is the
 * line for the terminal. Frees w's buffer. */
void tern_mig_event(tern_mig_progress *p, const char *event, tern_jw *w, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
