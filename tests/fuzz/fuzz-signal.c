/* `tern kill ID SIGNAL`: the signal parser (a name with or without SIG, in
 * any case, RTMIN+N / RTMAX-N, or a number). Only parses: nothing is sent.
 * A result is -1, a real signal number, or 0 (kill(2)'s liveness probe,
 * which only a plain "0" spells). */
#include "utils.h"

#include "fuzz-util.h"

#include <signal.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	int sig = tern_parse_signal(s);

	if (sig != -1 && (sig < 0 || sig > SIGRTMAX))
		abort();
	/* only the number itself means 0: not "SIG0", not a name */
	if (sig == 0 && strspn(s, "0") != strlen(s))
		abort();
	free(s);
	return 0;
}
