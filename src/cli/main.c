/* tern: an OCI container runtime with runc's command line. */
#include "config.h"

#include "cli.h"
#include "inherited-fds.h"
#include "log.h"
#include "state.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/mount.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

static int cmd_migrate_stub(tern_global_opts *g, int argc, char **argv);

const tern_command tern_commands[] = {
    {"create", tern_cmd_create, "create a container"},
    {"start", tern_cmd_start, "start a created container"},
    {"run", tern_cmd_run, "create and start a container, wait for it"},
    {"exec", tern_cmd_exec, "run a new process inside a container"},
    {"kill", tern_cmd_kill, "send a signal to a container's init process"},
    {"delete", tern_cmd_delete, "delete a container and everything it holds"},
    {"state", tern_cmd_state, "print a container's state as JSON"},
    {"pause", tern_cmd_pause, "freeze every process of a container"},
    {"resume", tern_cmd_resume, "thaw a paused container"},
    {"ps", tern_cmd_ps, "list the processes of a container"},
    {"events", tern_cmd_events, "print a container's resource stats and OOM events"},
    {"update", tern_cmd_update, "change a container's resource limits"},
    {"list", tern_cmd_list, "list the containers"},
    {"spec", tern_cmd_spec, "write a default config.json"},
    {"checkpoint", tern_cmd_checkpoint, "checkpoint a running container with CRIU"},
    {"restore", tern_cmd_restore, "restore a container from a CRIU checkpoint"},
    {"snapshot", tern_cmd_snapshot, "record a running container's state under a name"},
    {"rollback", tern_cmd_rollback, "put a running container back to a snapshot"},
    {"clone", tern_cmd_clone, "start a new container from a snapshot"},
    {"features", tern_cmd_features, "print the features this tern supports"},
    {"migrate", cmd_migrate_stub, "move a running container to another node"},
    {"migrate-receive", cmd_migrate_stub, "receive one migrating container on this node"},
    {"help", NULL, "show this help, or a command's with `help COMMAND`"},
    {NULL, NULL, NULL},
};

static const char usage[] =
    "Usage: tern [global options] COMMAND [options] [arguments]\n"
    "\n"
    "tern is an OCI container runtime.\n"
    "\n"
    "Global options:\n"
    "  --root DIR            state directory (default " TERN_DEFAULT_ROOT
    ", or $XDG_RUNTIME_DIR/tern\n"
    "                        when not root)\n"
    "  --log FILE            log file\n"
    "  --log-format FORMAT   text or json\n"
    "  --debug               debug logging\n"
    "  --systemd-cgroup      cgroups through systemd: cgroupsPath is slice:prefix:name\n"
    "  --criu PATH           the criu binary\n"
    "  --rootless VALUE      true, false or auto (default): rootless cgroup handling\n"
    "  -v, --version         print the version\n"
    "  -h, --help            this help\n"
    "\n"
    "Commands:\n";

/* ---- CVE-2019-5736: never enter a container as the host's binary ----
 *
 * A process inside the container can open /proc/PID/exe of a runtime
 * process it can see (the exec child or the init before they exec, or the
 * runtime run again through an image's "#!/proc/self/exe"), and once that
 * process is gone, reopen the file for writing and replace the host's tern.
 * So the commands that enter a container first re-execute tern from where
 * nobody can write it:
 *   - a read-only overlay of tern's own directory, attached to no mount
 *     tree (fsopen/fsmount; overlayfs wants a second layer when it has no
 *     upper one: an empty detached tmpfs). /proc/PID/exe is then a file on
 *     that overlay, and any open of it for writing fails (EROFS) however it
 *     is reached. It costs a third of a millisecond, and the binary's
 *     pages stay the page cache's (the approach of runc 1.2);
 *   - where that cannot be made (no overlayfs, a path overlayfs cannot
 *     take, no privilege to mount), a sealed memfd copy of itself, which
 *     nobody can write to (F_SEAL_WRITE), grow or shrink, and which vanishes
 *     with the last process running it (a copy of the whole binary each
 *     time).
 * A tern that already runs from a read-only mount or a sealed memfd is
 * protected as it is. */

#define SELF_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)
/* Set across the re-exec only, to stop a loop if the seals cannot be read
 * back; removed again before anything else runs. */
#define SELF_SEALED_ENV "_TERN_SEALED_REEXEC"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

static bool self_is_sealed(int self)
{
	int seals = fcntl(self, F_GET_SEALS);
	return seals >= 0 && (seals & SELF_SEALS) == SELF_SEALS;
}

static int copy_to_memfd(int self)
{
	cleanup_close int memfd = -1;
	struct stat st;
	off_t done = 0;

	/* MFD_EXEC: kernels with vm.memfd_noexec would otherwise refuse to
	 * run it; older kernels do not know the flag (EINVAL). */
	memfd = memfd_create("tern", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (memfd < 0 && errno == EINVAL)
		memfd = memfd_create("tern", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (memfd < 0)
		return -errno;
	if (fstat(self, &st) < 0)
		return -errno;
	while (done < st.st_size) {
		ssize_t n = sendfile(memfd, self, NULL, (size_t)(st.st_size - done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += n;
	}
	if (fcntl(memfd, F_ADD_SEALS, SELF_SEALS) < 0)
		return -errno;
	return steal_fd(&memfd);
}

static bool self_is_readonly(int self)
{
	struct statvfs sv;
	return fstatvfs(self, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* A detached mount of `type` (with `lowerdir`, for an overlay): its fd. */
static int detached_mount(const char *type, const char *lowerdir, unsigned attrs)
{
	cleanup_close int fsfd = (int)syscall(SYS_fsopen, type, FSOPEN_CLOEXEC);

	if (fsfd < 0)
		return -errno;
	if (lowerdir && syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, "lowerdir", lowerdir, 0) < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	int mnt = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC, attrs);
	return mnt < 0 ? -errno : mnt;
}

/* exec tern from a read-only overlay of its directory (see above);
 * returns only if that cannot be done. */
static void exec_from_readonly_overlay(char **argv)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0)
		return;
	path[n] = '\0';
	char *slash = strrchr(path, '/');
	/* (overlayfs splits lowerdir at ':' and takes ',' and '\' as syntax) */
	if (path[0] != '/' || slash == NULL || strpbrk(path, ":,\\"))
		return;
	*slash = '\0';
	cleanup_close int empty = detached_mount("tmpfs", NULL, MOUNT_ATTR_RDONLY);
	if (empty < 0)
		return;
	cleanup_free char *lower =
	    tern_strdup_printf("%s:/proc/self/fd/%d", *path ? path : "/", empty);
	cleanup_close int overlay = detached_mount(
	    "overlay", lower, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (overlay < 0)
		return;
	setenv(SELF_SEALED_ENV, "1", 1);
	syscall(SYS_execveat, overlay, slash + 1, argv, environ, 0);
	unsetenv(SELF_SEALED_ENV);
}

static int reexec_sealed(char **argv, tern_error **err)
{
	cleanup_close int self = -1, memfd = -1;
	bool retried = getenv(SELF_SEALED_ENV) != NULL;

	unsetenv(SELF_SEALED_ENV);
	self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return tern_error_make(err, errno, "open /proc/self/exe");
	if (self_is_sealed(self) || self_is_readonly(self))
		return 0;
	if (retried)
		return tern_error_make(err, EPERM,
				       "re-executed from a read-only or sealed copy, but "
				       "/proc/self/exe is neither");
	exec_from_readonly_overlay(argv);
	memfd = copy_to_memfd(self);
	if (memfd < 0)
		return tern_error_make(err, -memfd,
				       "copy tern into a sealed memfd (protection against "
				       "CVE-2019-5736)");
	setenv(SELF_SEALED_ENV, "1", 1);
	syscall(SYS_execveat, memfd, "", argv, environ, AT_EMPTY_PATH);
	unsetenv(SELF_SEALED_ENV);
	return tern_error_make(err, errno, "re-execute tern from its sealed copy");
}

static bool enters_container(const char *command)
{
	return strcmp(command, "create") == 0 || strcmp(command, "run") == 0 ||
	       strcmp(command, "exec") == 0;
}

static void print_usage(FILE *out)
{
	fputs(usage, out);
	for (const tern_command *c = tern_commands; c->name; c++)
		fprintf(out, "  %-16s %s\n", c->name, c->summary);
}

static void print_version(void)
{
	const struct scmp_version *v = seccomp_version();

	printf("tern version %s\n", PACKAGE_VERSION);
	printf("spec: %s\n", TERN_OCI_VERSION);
	printf("features: +SECCOMP +CAP +SELINUX +YAJL +CRIU\n");
	if (v)
		printf("libseccomp: %u.%u.%u\n", v->major, v->minor, v->micro);
}

/* `tern migrate` and `tern migrate-receive` live in tern-migrate, which
 * links OpenSSL (tern itself must not: mapping libcrypto slows every
 * start). Found as $TERN_MIGRATE_BIN, else next to the real tern binary,
 * else in the configured libexec directory. */
static int exec_migrate(char **argv)
{
	const char *env = getenv("TERN_MIGRATE_BIN");
	char self[PATH_MAX];
	ssize_t n;
	cleanup_free char *beside = NULL;
	const char *tried[3] = {0};
	int ntried = 0;

	if (env && *env) {
		argv[0] = (char *)env;
		execv(env, argv);
		fprintf(stderr, "tern: $TERN_MIGRATE_BIN `%s`: %s\n", env, strerror(errno));
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			beside = tern_strdup_printf("%s/tern-migrate", self);
			tried[ntried++] = beside;
		}
	}
	tried[ntried++] = TERN_PKGLIBEXECDIR "/tern-migrate";
	for (int i = 0; i < ntried; i++) {
		if (access(tried[i], X_OK) < 0)
			continue;
		argv[0] = (char *)tried[i];
		execv(tried[i], argv);
		fprintf(stderr, "tern: execute `%s`: %s\n", tried[i], strerror(errno));
		return 1;
	}
	fprintf(stderr,
		"tern: %s: tern-migrate, which runs the migration commands, is not installed: "
		"looked for $TERN_MIGRATE_BIN, %s%s" TERN_PKGLIBEXECDIR "/tern-migrate\n",
		argv[1] ? argv[1] : "migrate", beside ? beside : "", beside ? " and " : "");
	return 127;
}

static bool is_migrate(const char *command)
{
	/* rootfs-fold: internal to delete (snapshot-warm.c), and tern-migrate's
	 * because it needs the rootfs sync */
	return strcmp(command, "migrate") == 0 || strcmp(command, "migrate-receive") == 0 ||
	       strcmp(command, "rootfs-fold") == 0;
}

/* In the command table only for --help and `tern help migrate`: main
 * execs tern-migrate before a command runs. */
static int cmd_migrate_stub(tern_global_opts *g, int argc, char **argv)
{
	(void)g;
	(void)argc;
	(void)argv;
	return 1;
}

int main(int argc, char **argv)
{
	tern_global_opts g = {.rt = {.root = NULL, .rootless = TERN_ROOTLESS_AUTO},
			      .log_format = "text"};
	cleanup_free char *default_root = NULL;
	const tern_command *cmd;
	int action = 0, ret;

	tern_stdio_fill_closed();
	optind = tern_cli_parse_globals(argc, argv, &g, &action);
	if (optind < 0) {
		print_usage(stderr);
		return 1;
	}
	if (action == 'v') {
		print_version();
		return 0;
	}
	if (action == 'h') {
		print_usage(stdout);
		return 0;
	}
	/* the same arguments, global options included, before anything else */
	if (optind < argc && is_migrate(argv[optind]))
		return exec_migrate(argv);
	if (optind + 1 < argc && strcmp(argv[optind], "help") == 0 &&
	    is_migrate(argv[optind + 1])) {
		char *help_argv[] = {argv[0], argv[optind + 1], "--help", NULL};
		return exec_migrate(help_argv);
	}
	if (g.rt.root == NULL) {
		default_root = tern_state_default_root();
		g.rt.root = default_root;
	}
	ret = tern_log_init(g.log, g.log_format, g.debug);
	if (ret < 0) {
		fprintf(stderr, "tern: --log `%s` / --log-format `%s`: %s\n", g.log ? g.log : "",
			g.log_format, strerror(-ret));
		return 1;
	}
	if (optind >= argc) {
		print_usage(stderr);
		return 1;
	}
	if (strcmp(argv[optind], "help") == 0) {
		const tern_command *about =
		    optind + 1 < argc ? tern_command_find(argv[optind + 1]) : NULL;
		if (about && about->run) {
			char *help_argv[] = {argv[optind + 1], "--help", NULL};
			return about->run(&g, 2, help_argv);
		}
		print_usage(stdout);
		return 0;
	}
	cmd = tern_command_find(argv[optind]);
	if (cmd == NULL) {
		tern_log(TERN_LOG_ERROR, "unknown command `%s`", argv[optind]);
		return 1;
	}
	if (enters_container(argv[optind])) {
		cleanup_error tern_error *e = NULL;
		if (reexec_sealed(argv, &e) < 0) {
			tern_error_report(e);
			return 1;
		}
	}
	/* the command parses its own options from its name on */
	return cmd->run(&g, argc - optind, argv + optind);
}
