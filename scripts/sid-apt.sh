# Sourced by install-criu.sh and install-valgrind.sh: a private apt for
# Debian sid under a prefix, so that one package (and nothing else) can be
# fetched from sid without touching this machine's apt sources.
#
# sid_apt_setup PREFIX: makes PREFIX/apt (sources, lists, cache, debs),
# sets APTDIR and APTOPTS (pass "${APTOPTS[@]}" to apt-get and apt-cache)
# and updates the package lists.
sid_apt_setup() {
	APTDIR=$1/apt
	mkdir -p "$APTDIR/sources" "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/debs"
	cat >"$APTDIR/sources/sid.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	APTOPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$APTDIR/sources"
		-o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache"
		-o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Architecture=amd64
		-o APT::Architectures::=amd64)
	apt-get "${APTOPTS[@]}" update -q </dev/null >&2
}
