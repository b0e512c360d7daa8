#include "error.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int store(tern_error **err, int errnum, char *msg)
{
	if (err == NULL) {
		free(msg);
	} else {
		tern_error_free(*err);
		*err = calloc(1, sizeof(**err));
		if (*err == NULL) {
			free(msg);
			return errnum ? -errnum : -EINVAL;
		}
		(*err)->errnum = errnum;
		(*err)->msg = msg;
	}
	return errnum ? -errnum : -EINVAL;
}

int tern_error_make(tern_error **err, int errnum, const char *fmt, ...)
{
	va_list ap;
	char *base = NULL, *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&base, fmt, ap) < 0)
		base = NULL;
	va_end(ap);
	if (base == NULL)
		return store(err, errnum, NULL);
	if (errnum != 0) {
		if (asprintf(&msg, "%s: %s", base, strerror(errnum)) < 0)
			msg = NULL;
		free(base);
	} else {
		msg = base;
	}
	return store(err, errnum, msg);
}

int tern_error_make_quiet(tern_error **err, int errnum, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	return store(err, errnum, msg);
}

int tern_error_make_literal(tern_error **err, int errnum, const char *msg)
{
	return store(err, errnum, msg ? strdup(msg) : NULL);
}

int tern_error_wrap(tern_error **err, const char *fmt, ...)
{
	va_list ap;
	char *ctx = NULL, *msg = NULL;
	int errnum;

	if (err == NULL)
		return -EINVAL;
	va_start(ap, fmt);
	if (vasprintf(&ctx, fmt, ap) < 0)
		ctx = NULL;
	va_end(ap);
	if (*err == NULL)
		return store(err, 0, ctx);
	errnum = (*err)->errnum;
	if (ctx != NULL && asprintf(&msg, "%s: %s", ctx, (*err)->msg ? (*err)->msg : "") >= 0) {
		free((*err)->msg);
		(*err)->msg = msg;
	}
	free(ctx);
	return errnum ? -errnum : -EINVAL;
}

void tern_error_free(tern_error *err)
{
	if (err == NULL)
		return;
	free(err->msg);
	free(err);
}

void tern_error_freep(tern_error **err)
{
	tern_error_free(*err);
	*err = NULL;
}

int tern_error_report(tern_error *err)
{
	const char *msg = err && err->msg ? err->msg : "unknown error";

	tern_log_error_message(msg);
	return 1;
}
