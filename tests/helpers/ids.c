/* ids: print real/effective/saved uid and the capability sets and
 * no_new_privs flag from /proc/self/status, one line:
 *   ruid=1000 euid=0 suid=0 CapPrm=... CapEff=... NoNewPrivs=0
 * Installed setuid root in the tests that check what a setuid exec gains
 * (and does not gain) in a container. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	uid_t r, e, s;
	char line[256], prm[256] = "?", eff[256] = "?", nnp[256] = "?";
	FILE *f = fopen("/proc/self/status", "re");

	if (getresuid(&r, &e, &s) < 0 || f == NULL) {
		perror("ids");
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "CapPrm:\t", 8) == 0)
			snprintf(prm, sizeof(prm), "%s", line + 8);
		else if (strncmp(line, "CapEff:\t", 8) == 0)
			snprintf(eff, sizeof(eff), "%s", line + 8);
		else if (strncmp(line, "NoNewPrivs:\t", 12) == 0)
			snprintf(nnp, sizeof(nnp), "%s", line + 12);
	}
	fclose(f);
	printf("ruid=%u euid=%u suid=%u CapPrm=%s CapEff=%s NoNewPrivs=%s\n", r, e, s, prm, eff,
	       nnp);
	return 0;
}
