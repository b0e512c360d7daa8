/* Error chains, logging and the small utilities of src/base/utils.c. */
#include "tap.h"

#include "error.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_error_chain(void)
{
	tern_error *err = NULL;
	int ret = tern_error_make(&err, ENOENT, "open `%s`", "/x/config.json");

	is_int(ret, -ENOENT, "make returns -errno");
	is_int(err->errnum, ENOENT, "errno is kept");
	is_str(err->msg, "open `/x/config.json`: No such file or directory",
	       "strerror text appended");
	ret = tern_error_wrap(&err, "container `%s`", "c1");
	is_int(ret, -ENOENT, "wrap keeps the errno");
	is_str(err->msg, "container `c1`: open `/x/config.json`: No such file or directory",
	       "context is prefixed");
	tern_error_free(err);

	err = NULL;
	ret = tern_error_make(&err, 0, "plain %d", 3);
	is_int(ret, -EINVAL, "errno 0 gives -EINVAL");
	is_str(err->msg, "plain 3", "no strerror without errno");
	/* a second make replaces the first */
	tern_error_make(&err, EPERM, "again");
	is_str(err->msg, "again: Operation not permitted", "make replaces an old error");
	tern_error_free(err);

	err = NULL;
	ret = tern_error_wrap(&err, "only context");
	is_str(err ? err->msg : NULL, "only context", "wrap without an error creates one");
	tern_error_free(err);

	is_int(tern_error_make(NULL, EBUSY, "ignored"), -EBUSY, "NULL err pointer is allowed");
}

static void test_json_log(void)
{
	char path[] = "/tmp/tern-test-log-XXXXXX";
	int fd = mkstemp(path);
	char *data = NULL;

	close(fd);
	ok(tern_log_init(path, "json", false) == 0, "json log opens");
	/* stderr goes to /dev/null for this test */
	int saved = dup(2);
	int devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	tern_log(TERN_LOG_WARNING, "a \"quoted\" warning\n");
	tern_log(TERN_LOG_DEBUG, "debug is off");
	dup2(saved, 2);
	close(devnull);
	close(saved);
	ok(tern_read_file(path, &data, NULL, 0, NULL) == 0, "log file readable");
	const char *want = "{\"level\":\"warning\",\"msg\":\"a \\\"quoted\\\" warning\\n\"";
	ok(data && strncmp(data, want, strlen(want)) == 0, "json line has level and escaped msg");
	ok(data && strstr(data, "\"time\":\"") != NULL, "json line has time");
	ok(data && strstr(data, "debug is off") == NULL, "debug suppressed without --debug");
	ok(data && strchr(data, '\n') == data + strlen(data) - 1, "exactly one line");
	free(data);
	unlink(path);
	is_int(tern_log_init(NULL, "yaml", false), -EINVAL, "unknown log format rejected");
}

static void test_signals(void)
{
	is_int(tern_parse_signal("KILL"), 9, "KILL");
	is_int(tern_parse_signal("SIGKILL"), 9, "SIGKILL");
	is_int(tern_parse_signal("sigterm"), 15, "lower case sigterm");
	is_int(tern_parse_signal("15"), 15, "number");
	is_int(tern_parse_signal("0"), 0, "0: the liveness probe");
	is_int(tern_parse_signal("SIG0"), -1, "SIG0 (runc refuses it too)");
	is_int(tern_parse_signal("USR1"), 10, "USR1");
	is_int(tern_parse_signal("RTMIN+1"), 35, "RTMIN+1");
	is_int(tern_parse_signal("RTMAX-2"), SIGRTMAX - 2, "RTMAX-2");
	is_int(tern_parse_signal("RTMIN+9223372036854775807"), -1,
	       "RTMIN+N beyond the real-time signals (no overflow)");
	is_int(tern_parse_signal("RTMAX-9223372036854775807"), -1, "RTMAX-N below RTMIN");
	is_int(tern_parse_signal("RTMIN+"), -1, "RTMIN+ without N");
	is_int(tern_parse_signal("RTMIN+ 2"), -1, "RTMIN+N: N is digits only");
	is_int(tern_parse_signal("SIGFOO"), -1, "unknown name");
	is_int(tern_parse_signal("999"), -1, "out of range");
	is_int(tern_parse_signal(""), -1, "empty");
}

static void test_paths(void)
{
	char *p;
	p = tern_absolute_path("/a//b/./c/../d/");
	is_str(p, "/a/b/d", "absolute path is cleaned");
	free(p);
	p = tern_absolute_path("/../..");
	is_str(p, "/", "cannot go above /");
	free(p);
	char cwd[4096];
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		cwd[0] = '\0';
	p = tern_absolute_path("x/y");
	char *want = tern_strdup_printf("%s/x/y", strcmp(cwd, "/") == 0 ? "" : cwd);
	is_str(p, want, "relative path joined to cwd");
	free(p);
	free(want);
}

static void test_cpu_lists(void)
{
	ok(tern_valid_cpu_list("0-3,5,7-8"), "cpu list with ranges");
	ok(tern_valid_cpu_list(""), "empty cpu list means unset");
	ok(tern_valid_cpu_list("1"), "single cpu");
	ok(!tern_valid_cpu_list("abc"), "letters rejected");
	ok(!tern_valid_cpu_list("3-1"), "descending range rejected");
	ok(!tern_valid_cpu_list("0,"), "trailing comma rejected");
	ok(!tern_valid_cpu_list("-1"), "negative rejected");
}

static void test_start_time(void)
{
	ok(tern_process_start_time(getpid()) > 0, "own start time is known");
	is_int(tern_process_start_time(0x3fffffff), 0, "missing process has start time 0");
}

int main(void)
{
	test_error_chain();
	test_json_log();
	test_signals();
	test_paths();
	test_start_time();
	test_cpu_lists();
	return done_testing();
}
