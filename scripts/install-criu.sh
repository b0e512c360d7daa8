#!/bin/bash
# Make a working criu available to tern. Idempotent.
#
# If the system's criu passes `criu check`, it is used as is. Otherwise
# (bookworm's criu 3.17 fails on kernels >= 6.13: "Unexpected rt vDSO area
# bounds") criu 4.2.1 is fetched from Debian unstable into a private prefix
# (default /opt/tern-criu), with apt given a private state directory that
# lists only sid: the system's own apt sources are never touched. The sid
# binary needs sid's glibc, so it runs through the prefix's own loader from
# a wrapper script, PREFIX/bin/criu, which is where tern looks for it.
#
# The last line printed is the path of the criu to use.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PREFIX=${TERN_CRIU_PREFIX:-/opt/tern-criu}
WANT=4.2.1
WRAPPER=$PREFIX/bin/criu

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

if [ -x "$WRAPPER" ] && works "$WRAPPER"; then
	log "using $WRAPPER ($("$WRAPPER" --version | head -1))"
	echo "$WRAPPER"
	exit 0
fi
if command -v criu >/dev/null && works "$(command -v criu)"; then
	log "the system's criu passes \`criu check\`: using it"
	command -v criu
	exit 0
fi

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
rm -rf "$PREFIX/root"
mv "$PREFIX/root.new" "$PREFIX/root"
ROOT=$PREFIX/root
LOADER=$ROOT/usr/lib64/ld-linux-x86-64.so.2
[ -e "$LOADER" ] || LOADER=$ROOT/lib64/ld-linux-x86-64.so.2
mkdir -p "$PREFIX/bin"
cat >"$WRAPPER.new" <<WRAP
#!/bin/sh
# criu $ver from Debian sid, run through its own glibc (installed by
# tern's scripts/install-criu.sh).
exec "$LOADER" --library-path "$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu" "$ROOT/usr/sbin/criu" "\$@"
WRAP
chmod 755 "$WRAPPER.new"
mv "$WRAPPER.new" "$WRAPPER"
if ! works "$WRAPPER"; then
	log "$WRAPPER does not pass \`criu check\`:"
	"$WRAPPER" check >&2 || true
	exit 1
fi
log "installed $WRAPPER ($("$WRAPPER" --version | head -1))"
echo "$WRAPPER"
