#!/bin/bash
# Make a working criu available to tern. Idempotent.
#
# If the system's criu passes `criu check`, it is used as is. Otherwise
# (bookworm's criu 3.17 fails on kernels >= 6.13: "Unexpected rt vDSO area
# bounds") criu 4.2.1 is fetched from Debian unstable into a private prefix
# (default /opt/tern-criu), with apt given a private state directory that
# lists only sid: the system's own apt sources are never touched.
#
# The sid binary needs sid's glibc. It is not started through the prefix's
# loader from a wrapper script (a file capability does not apply to a
# program started that way, and /proc/self/exe would be the loader):
# PREFIX/libexec/criu is a copy of it whose ELF interpreter and RPATH are
# rewritten (patchelf) to the prefix's ld-linux and library directories,
# and PREFIX/bin/criu, where tern looks for it, is a symlink to that copy.
#
# The copy carries the file capability cap_checkpoint_restore+ep and
# nothing else, so that users without root can checkpoint and restore
# their own processes (criu's --unprivileged mode, which tern asks for
# when it runs as non-root; kernel >= 5.9). For root nothing changes. The
# prefix is root's alone (owned by root, writable by no one else): whoever
# could replace that binary or a library it loads would run code with the
# capability. An install of the old shape (a wrapper script) is upgraded in
# place; the switch is a rename, so a criu started meanwhile runs whole.
#
# The last line printed is the path of the criu to use.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PREFIX=${TERN_CRIU_PREFIX:-/opt/tern-criu}
WANT=4.2.1
CAP=cap_checkpoint_restore=ep
BIN=$PREFIX/bin/criu
EXE=$PREFIX/libexec/criu
ROOT=$PREFIX/root

log() { echo "install-criu: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "run as root"
	exit 1
fi

# CRIU locks the network with iptables-restore while it dumps.
if ! command -v iptables-restore >/dev/null; then
	log "installing iptables (CRIU's network locking needs iptables-restore)"
	apt-get install -y -q --no-install-recommends iptables </dev/null >&2
fi

works() {
	"$1" check >/dev/null 2>&1
}

# The capabilities of file $1 as getcap prints them ("cap_x=ep"), or "".
file_caps() {
	getcap "$1" 2>/dev/null | sed -n 's/^[^ ]* //p'
}

# Is $PREFIX/bin/criu the capable patched binary, working?
installed_ok() {
	[ -L "$BIN" ] && [ "$(readlink -f "$BIN")" = "$EXE" ] && [ -f "$EXE" ] &&
		[ "$(file_caps "$EXE")" = "$CAP" ] && works "$BIN"
}

# Nothing that the capable binary is, or loads, may be writable by anyone
# but root: make the prefix's files root's, then check the whole path.
# (chown strips a file capability: this runs before setcap.)
lock_down() {
	local d
	find "$PREFIX" -path "$PREFIX/apt" -prune -o \( ! -user 0 -o ! -group 0 \) \
		-exec chown -h root:root {} +
	find "$PREFIX" -path "$PREFIX/apt" -prune -o ! -type l -perm /022 -exec chmod go-w {} +
	d=$PREFIX
	while [ "$d" != / ]; do
		if [ "$(stat -c %u "$d")" != 0 ] || [ -n "$(find "$d" -maxdepth 0 -perm /022)" ]; then
			log "$d is not root's alone (owner $(stat -c %U "$d"), mode $(stat -c %a "$d")): whoever can write it could replace the capable criu; choose another TERN_CRIU_PREFIX"
			exit 1
		fi
		d=$(dirname "$d")
	done
}

if installed_ok; then
	log "using $BIN ($("$BIN" --version | head -1); $(file_caps "$EXE"))"
	echo "$BIN"
	exit 0
fi
if [ ! -d "$PREFIX" ] && command -v criu >/dev/null && works "$(command -v criu)"; then
	log "the system's criu passes \`criu check\`: using it"
	log "(for rootless checkpoints it needs: setcap $CAP $(readlink -f "$(command -v criu)"))"
	command -v criu
	exit 0
fi

command -v patchelf >/dev/null || {
	log "installing patchelf (to point criu at the prefix's loader and libraries)"
	apt-get install -y -q --no-install-recommends patchelf </dev/null >&2
}
command -v setcap >/dev/null || {
	log "installing libcap2-bin (setcap, getcap)"
	apt-get install -y -q --no-install-recommends libcap2-bin </dev/null >&2
}

ver=
if [ -x "$ROOT/usr/sbin/criu" ] && [ -e "$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ]; then
	# an install of the old shape: its unpacked packages are reused
	ver=$(sed -n 's/^# criu \([^ ]*\) from Debian sid.*/\1/p' "$BIN" 2>/dev/null || true)
	log "upgrading the criu in $ROOT in place (${ver:-version unknown})"
else
	log "the system's criu does not pass \`criu check\` on this kernel: installing criu $WANT from Debian sid into $PREFIX"
	. "$(dirname "$0")/sid-apt.sh"
	sid_apt_setup "$PREFIX"
	ver=$(apt-cache "${APTOPTS[@]}" policy criu | sed -n 's/^  Candidate: //p')
	case $ver in
	$WANT*) ;;
	*) log "Debian sid offers criu \`$ver\`, not $WANT; installing it anyway" ;;
	esac
	# criu's dependency closure, without recommends; keep real packages only.
	mapfile -t pkgs < <(apt-cache "${APTOPTS[@]}" depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances criu |
		grep -v '^ ' | grep -v '^<' | sort -u)
	log "downloading ${#pkgs[@]} packages"
	(cd "$APTDIR/debs" && apt-get "${APTOPTS[@]}" download "${pkgs[@]}" </dev/null >&2)
	rm -rf "$PREFIX/root.new"
	mkdir -p "$PREFIX/root.new"
	for deb in "$APTDIR"/debs/*.deb; do
		dpkg-deb -x "$deb" "$PREFIX/root.new"
	done
	rm -rf "$PREFIX/root.old"
	[ ! -e "$ROOT" ] || mv "$ROOT" "$PREFIX/root.old"
	mv "$PREFIX/root.new" "$ROOT"
	rm -rf "$PREFIX/root.old"
fi

LIBS=$ROOT/usr/lib/x86_64-linux-gnu
LOADER=$LIBS/ld-linux-x86-64.so.2
[ -e "$LOADER" ] || LOADER=$ROOT/usr/lib64/ld-linux-x86-64.so.2
mkdir -p "$PREFIX/bin" "$PREFIX/libexec"
lock_down
rm -f "$EXE.new"
cp "$ROOT/usr/sbin/criu" "$EXE.new"
# RPATH, not RUNPATH (--force-rpath): it also serves the libraries criu's
# libraries load. Absolute paths: a capable program runs in secure mode,
# where the loader ignores LD_LIBRARY_PATH and $ORIGIN.
patchelf --set-interpreter "$LOADER" --force-rpath --set-rpath "$LIBS:$ROOT/lib/x86_64-linux-gnu" "$EXE.new"
chown root:root "$EXE.new"
chmod 755 "$EXE.new"
setcap "$CAP" "$EXE.new"
if [ "$(file_caps "$EXE.new")" != "$CAP" ]; then
	log "setcap did not leave exactly $CAP on $EXE.new (getcap: \`$(file_caps "$EXE.new")\`): does this file system keep security.capability?"
	rm -f "$EXE.new"
	exit 1
fi
if ! works "$EXE.new"; then
	log "$EXE.new does not pass \`criu check\`:"
	"$EXE.new" check >&2 || true
	rm -f "$EXE.new"
	exit 1
fi
mv -T "$EXE.new" "$EXE"
# PREFIX/bin/criu (a wrapper script in the old shape) becomes a symlink
# to it in one rename
rm -f "$BIN.new"
ln -s ../libexec/criu "$BIN.new"
mv -T "$BIN.new" "$BIN"
if ! installed_ok; then
	log "$BIN is not the capable criu after the install:"
	ls -l "$BIN" "$EXE" >&2
	"$BIN" check >&2 || true
	exit 1
fi
log "installed $BIN -> $EXE (criu ${ver:-$("$BIN" --version | sed -n 's/^Version: //p')}; $(file_caps "$EXE"))"
echo "$BIN"
