# Shared by the rootless tests (tests/integration/rootless.bats on this host,
# tests/integration-v2/rootless-v2.bats in the cgroup v2 guest): an
# unprivileged user made for the test file and removed at its end, a bundle
# it owns, and tern run as that user with its own XDG_RUNTIME_DIR.

RL_USER=ternrl-bats

# drop_subids: remove the test user's lines from /etc/subuid and /etc/subgid
# (Debian's useradd adds a range for every new user: the tests decide).
drop_subids() {
	local f
	for f in /etc/subuid /etc/subgid; do
		[ -f "$f" ] || continue
		sed -i "/^$RL_USER:/d" "$f"
	done
}

remove_user() {
	if id "$RL_USER" >/dev/null 2>&1; then
		userdel -r -f "$RL_USER" >/dev/null 2>&1 || userdel -f "$RL_USER" >/dev/null 2>&1
	fi
	drop_subids
}

rl_setup_file() {
	build_base_rootfs
	remove_user
	useradd -m -s /bin/sh "$RL_USER"
	drop_subids
}

rl_teardown_file() {
	remove_user
}

rl_setup() {
	setup_bundle
	RL_UID=$(id -u "$RL_USER")
	RL_GID=$(id -g "$RL_USER")
	# Everything the user touches lives in a directory it owns.
	RL_DIR=$BATS_TEST_TMPDIR/rl
	XDG=$RL_DIR/xdg
	mkdir -p "$RL_DIR/bundle" "$XDG"
	rm -rf "$BUNDLE"
	BUNDLE=$RL_DIR/bundle
	cp -a "$BASE_ROOTFS" "$BUNDLE/rootfs"
	chown -R "$RL_USER:" "$RL_DIR"
	chmod 700 "$XDG"
	make_traversable "$RL_DIR"
	# teardown and check_nothing_left look for the state here
	ROOT=$XDG/tern
	as_user "$TERN_BIN" spec --rootless -b "$BUNDLE" || return 1
	update_config '.process.terminal = false | .process.args = ["/bin/true"]'
	chown "$RL_USER:" "$BUNDLE/config.json"
	export RL_UID RL_GID RL_DIR XDG BUNDLE ROOT
}

rl_teardown() {
	teardown_bundle
	undelegate
	drop_subids
}

# as_user CMD...: CMD as the test user (no capabilities: the kernel drops
# them with the uid), XDG_RUNTIME_DIR set to its own directory.
as_user() {
	in_file setpriv --reuid "$RL_UID" --regid "$RL_GID" --init-groups \
		env HOME="$RL_DIR" USER="$RL_USER" XDG_RUNTIME_DIR="$XDG" "$@"
}

# rtern ARG...: tern as the user, with no --root (the default is tested).
rtern() {
	as_user "$TERN_BIN" "$@"
}

add_subids() {
	echo "$RL_USER:$1:$2" >>/etc/subuid
	echo "$RL_USER:$1:$2" >>/etc/subgid
}

# delegate CONTROLLER...: (v1 and hybrid hosts) a cgroup below our own in each hierarchy, owned by
# the test user (as systemd delegates one on a v2 host; chown is what
# delegation is on v1 too). Sets DELEGATED to the directories.
delegate() {
	local c d
	DELEGATED=
	for c in "$@"; do
		if [ "$c" = unified ]; then
			d=/sys/fs/cgroup/unified$(sed -n 's/^0:://p' /proc/self/cgroup)
		else
			d=$(host_cgroup_dir $$ "$c")
		fi
		d=${d%/}/rldeleg-$$-${BATS_SUITE_TEST_NUMBER:-0}
		mkdir "$d"
		chown -R "$RL_USER:" "$d"
		DELEGATED="$DELEGATED $d"
	done
	export DELEGATED
}

undelegate() {
	local d
	for d in ${DELEGATED:-}; do
		[ -d "$d" ] || continue
		xargs -r kill -9 <"$d/cgroup.procs" 2>/dev/null
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
		rmdir "$d" 2>/dev/null || { sleep 0.2; rmdir "$d"; }
	done
	DELEGATED=
}

# in_delegated CMD...: CMD as the user, started from inside the delegated
# cgroups (the container's default cgroup nests below the caller's own).
in_delegated() {
	in_file sh -c 'for d in $DELEGATED; do echo $$ >"$d/cgroup.procs" || exit 1; done; exec "$@"' sh \
		setpriv --reuid "$RL_UID" --regid "$RL_GID" --init-groups \
		env HOME="$RL_DIR" USER="$RL_USER" XDG_RUNTIME_DIR="$XDG" "$@"
}
