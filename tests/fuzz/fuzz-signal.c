/* `tern kill ID SIGNAL`: the signal parser (a name with or without SIG, in
 * any case, RTMIN+N / RTMAX-N, or a number). Only parses: nothing is sent.
 * A result is -1 or a real signal number. */
#include "utils.h"

#include "fuzz-util.h"

#include <signal.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	int sig = tern_parse_signal(s);

	if (sig != -1 && (sig < 1 || sig > SIGRTMAX))
		abort();
	free(s);
	return 0;
}
