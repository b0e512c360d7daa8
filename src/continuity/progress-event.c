/* The progress events (progress-event.h) and the small JSON writer they
 * and tern-migrate's messages use. */
#include "progress-event.h"
#include "utils.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tern_mig_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void tern_mig_progress_init(tern_mig_progress *p, const char *side, bool json)
{
	p->json = json;
	p->side = side;
	p->t0_ns = tern_mig_now_ns();
}

/* ---- JSON writer ---- */

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", f);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

void tern_jw_begin(tern_jw *w)
{
	w->buf = NULL;
	w->len = 0;
	w->f = open_memstream(&w->buf, &w->len);
	if (w->f == NULL)
		abort();
	w->first = true;
	fputc('{', w->f);
}

static void key(tern_jw *w, const char *k)
{
	if (!w->first)
		fputc(',', w->f);
	w->first = false;
	put_string(w->f, k);
	fputc(':', w->f);
}

void tern_jw_str(tern_jw *w, const char *k, const char *value)
{
	key(w, k);
	put_string(w->f, value ? value : "");
}

void tern_jw_u64(tern_jw *w, const char *k, uint64_t value)
{
	key(w, k);
	fprintf(w->f, "%llu", (unsigned long long)value);
}

void tern_jw_bool(tern_jw *w, const char *k, bool value)
{
	key(w, k);
	fputs(value ? "true" : "false", w->f);
}

void tern_jw_strv(tern_jw *w, const char *k, char *const *values, size_t n)
{
	key(w, k);
	fputc('[', w->f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', w->f);
		put_string(w->f, values[i]);
	}
	fputc(']', w->f);
}

void tern_jw_null(tern_jw *w, const char *k)
{
	key(w, k);
	fputs("null", w->f);
}

char *tern_jw_end(tern_jw *w)
{
	fputc('}', w->f);
	fclose(w->f);
	w->f = NULL;
	return w->buf;
}

void tern_mig_event(tern_mig_progress *p, const char *event, tern_jw *w, const char *fmt, ...)
{
	uint64_t ms = (tern_mig_now_ns() - p->t0_ns) / 1000000;
	tern_jw ev;

	if (p->json) {
		cleanup_free char *rest = w ? tern_jw_end(w) : NULL;
		tern_jw_begin(&ev);
		tern_jw_str(&ev, "event", event);
		tern_jw_str(&ev, "side", p->side);
		tern_jw_u64(&ev, "t_ms", ms);
		cleanup_free char *head = tern_jw_end(&ev);
		/* splice the event's own fields after the common ones */
		head[strlen(head) - 1] = '\0';
		if (rest && strcmp(rest, "{}") != 0)
			printf("%s,%s\n", head, rest + 1);
		else
			printf("%s}\n", head);
		fflush(stdout);
		return;
	}
	if (w)
		free(tern_jw_end(w));
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s [%4llu.%03llus] ", p->side, (unsigned long long)(ms / 1000),
		(unsigned long long)(ms % 1000));
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
