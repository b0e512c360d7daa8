#!/bin/bash
# Make a valgrind that can run tern available to scripts/test-valgrind.sh.
# Idempotent.
#
# bookworm's valgrind 3.19 does not know openat2 (tern resolves every path
# in the rootfs with it: the container's init fails with ENOSYS under it)
# nor the new mount API (fsopen, fsmount, open_tree, move_mount), and it
# reads the NULL type of a bind mount as a bad pointer. 3.27 knows them all.
# If the system's valgrind is 3.27 or newer it is used as is; otherwise
# valgrind is fetched from Debian unstable into a private prefix (default
# /opt/tern-valgrind), with apt given a private state directory that lists
# only sid: the system's own apt sources are never touched. Its launcher
# and tools run on bookworm's glibc (the tools are static; the preloaded
# libraries need glibc 2.34); a wrapper, PREFIX/bin/valgrind, tells the
# launcher where its tools are.
#
# The last line printed is the path of the valgrind to use.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PREFIX=${TERN_VALGRIND_PREFIX:-/opt/tern-valgrind}
WRAPPER=$PREFIX/bin/valgrind

log() { echo "install-valgrind: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "run as root"
	exit 1
fi

# new_enough VALGRIND: its version is 3.27 or newer
new_enough() {
	local v
	v=$("$1" --version 2>/dev/null | sed -n 's/^valgrind-\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
	[ -n "$v" ] || return 1
	set -- $v
	[ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 27 ]; }
}

if [ -x "$WRAPPER" ] && new_enough "$WRAPPER"; then
	log "using $WRAPPER ($("$WRAPPER" --version))"
	echo "$WRAPPER"
	exit 0
fi
if command -v valgrind >/dev/null && new_enough "$(command -v valgrind)"; then
	log "the system's valgrind is new enough: using it"
	command -v valgrind
	exit 0
fi

log "the system's valgrind is older than 3.27: installing valgrind from Debian sid into $PREFIX"
. "$(dirname "$0")/sid-apt.sh"
sid_apt_setup "$PREFIX"
# only the valgrind package: its libc6 and libc6-dbg dependencies are for
# sid's own programs, and bookworm's glibc serves the launcher and tern
rm -f "$APTDIR"/debs/*.deb
(cd "$APTDIR/debs" && apt-get "${APTOPTS[@]}" download valgrind </dev/null >&2)
rm -rf "$PREFIX/root.new"
mkdir -p "$PREFIX/root.new"
dpkg-deb -x "$APTDIR"/debs/valgrind_*.deb "$PREFIX/root.new"
rm -rf "$PREFIX/root"
mv "$PREFIX/root.new" "$PREFIX/root"
ROOT=$PREFIX/root
mkdir -p "$PREFIX/bin"
cat >"$WRAPPER.new" <<WRAP
#!/bin/sh
# valgrind from Debian sid (installed by tern's scripts/install-valgrind.sh)
VALGRIND_LIB=$ROOT/usr/libexec/valgrind
export VALGRIND_LIB
exec "$ROOT/usr/bin/valgrind.bin" "\$@"
WRAP
chmod 755 "$WRAPPER.new"
mv "$WRAPPER.new" "$WRAPPER"
if ! new_enough "$WRAPPER" || ! "$WRAPPER" -q --tool=memcheck --error-exitcode=1 /bin/true; then
	log "$WRAPPER does not run:"
	"$WRAPPER" --tool=memcheck /bin/true >&2 || true
	exit 1
fi
log "installed $WRAPPER ($("$WRAPPER" --version))"
echo "$WRAPPER"
