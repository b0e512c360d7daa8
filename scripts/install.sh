#!/bin/bash
# Install tern from this checkout on a fresh Debian 12 machine, as root, and
# run a demo container so you see output from inside it. Idempotent: running
# it twice rebuilds, reinstalls and reruns the demo.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: run as root (sudo ./scripts/install.sh)" >&2
	exit 1
fi

echo "== installing build and runtime dependencies"
apt-get update -q
apt-get install -y -q --no-install-recommends \
	build-essential autoconf automake libtool pkg-config \
	libyajl-dev libseccomp-dev libcap-dev libselinux1-dev libsystemd-dev libprotobuf-c-dev libssl-dev \
	criu busybox-static jq bash-completion man-db </dev/null
./scripts/install-criu.sh # a criu that works on this kernel (see the script)

echo "== building"
./autogen.sh
./configure
make -j"$(nproc)"
# stripped: create/run/exec start the installed binary twice (the second
# time from a read-only overlay), so its size is paid at every start. It also
# installs the man pages (man tern, man tern-COMMAND) and the bash
# completion, which bash-completion loads in the next shell.
make install-strip

TERN=$(command -v tern || echo /usr/local/bin/tern)
echo "== installed $TERN: $("$TERN" --version | head -1)"
# tern migrate and migrate-receive run tern-migrate (the one binary that
# links OpenSSL), installed in $(libexecdir)/tern
"$TERN" migrate --help >/dev/null
PREFIX=$(sed -n 's/^prefix = //p' Makefile)
echo "== man pages: $(find "$PREFIX/share/man" -name 'tern*' | wc -l) in $PREFIX/share/man (man tern, man tern-run ...)"
echo "== bash completion: $PREFIX/share/bash-completion/completions/tern"

echo "== building the demo bundle in /var/lib/tern/demo"
DEMO=/var/lib/tern/demo
# A leftover demo container from an earlier run would make `run` fail with
# "already exists".
"$TERN" delete --force tern-demo >/dev/null 2>&1 || true
rm -rf "$DEMO"
mkdir -p "$DEMO/rootfs"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$DEMO/rootfs/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ "$applet" = busybox ] || ln -s busybox "$DEMO/rootfs/bin/$applet"
done
echo 'root:x:0:0:root:/:/bin/sh' >"$DEMO/rootfs/etc/passwd"
echo 'root:x:0:' >"$DEMO/rootfs/etc/group"
(cd "$DEMO" && "$TERN" spec)
jq '.process.terminal = false
	| .hostname = "tern-demo"
	| .process.args = ["/bin/sh", "-c",
		"echo \"hello from inside tern: $(hostname)\"; echo \"pid inside: $$\"; echo uid_map:; cat /proc/self/uid_map; echo namespaces:; ls -l /proc/self/ns | sed -n \"s/.* \\([a-z_]*\\) -> \\(.*\\)/  \\1 \\2/p\""]' \
	"$DEMO/config.json" >"$DEMO/config.json.new"
mv "$DEMO/config.json.new" "$DEMO/config.json"

echo "== tern run -b $DEMO tern-demo"
"$TERN" run -b "$DEMO" tern-demo
