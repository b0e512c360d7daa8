# Shared by seccomp.bats and seccomp-compat32.bats.

# SIGSYS is 31: a process killed by seccomp exits 128+31.
SIGSYS_STATUS=159

# seccomp JSON: linux.seccomp = JSON.
seccomp() {
	update_config ".linux.seccomp = $1"
}

# rule NAMES ACTION [EXTRA-JSON]: one syscalls[] entry, NAMES comma-separated.
rule() {
	local names
	names=$(printf '%s' "$1" | jq -R -c 'split(",")')
	jq -n -c --argjson n "$names" --arg a "$2" "{names: \$n, action: \$a} + (${3:-{\}})"
}
