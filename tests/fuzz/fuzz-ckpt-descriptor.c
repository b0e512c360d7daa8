/* tern-checkpoint.txt, tern's own file in a checkpoint directory ("key
 * value" lines: id, external mounts, masked and tmpfs mounts, device binds,
 * stdio, veths, ...), which restore reads from --image-path, and a
 * migration's target from the images its source sent. The file sits in a
 * scratch directory of this process (under $TMPDIR) and is read through the
 * exported readers (tern_ckpt_outside_stdio, tern_ckpt_netns_left_out: the
 * static descriptor_read itself); each "devbind" entry then goes through
 * the device bind check of restore (lstat of /dev/ROOT only), against the
 * default spec. */
#include "checkpoint-devbinds.h"
#include "checkpoint.h"
#include "oci-config.h"
#include "utils.h"

#include "fuzz-util.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static char dir[4096], file[4200];
static oci_config *config;

static void cleanup(void)
{
	unlink(file);
	rmdir(dir);
	oci_config_free(config);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *spec = oci_default_spec_json(false), *msg = NULL;

	fuzz_scratch_dir(dir, sizeof(dir), "ckpt");
	snprintf(file, sizeof(file), "%s/tern-checkpoint.txt", dir);
	if (oci_config_parse_data(spec, strlen(spec), "config.json", &config, &msg) < 0)
		abort();
	free(spec);
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char kinds[3];
	unsigned modes[3];
	char **lines;

	/* a new file each time: ext4 flushes a file truncated and rewritten
	 * on close (auto_da_alloc), which is slow */
	unlink(file);
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || tern_write_all(fd, data, size) < 0)
		abort();
	close(fd);
	tern_ckpt_outside_stdio(dir, kinds, modes);
	tern_ckpt_netns_left_out(dir);

	lines = fuzz_lines(data, size, 64);
	for (size_t i = 0; lines[i]; i++) {
		char *mountpoint = NULL, *source = NULL;
		tern_error *err = NULL;
		if (strncmp(lines[i], "devbind ", 8) != 0)
			continue;
		if (tern_ckpt_devbind_source(lines[i] + 8, config, &mountpoint, &source, &err) ==
		    0) {
			free(mountpoint);
			free(source);
		}
		tern_error_free(err);
	}
	fuzz_strv_free(lines);
	return 0;
}
