#!/usr/bin/env bats
# The man pages against the binary: a command that `tern --help` lists has a
# page, and every long flag its --help prints is on that page, so a new
# command or flag without documentation fails here. Each page must also
# render without a warning. Needs no root and no container.

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
TERN_BIN=${TERN_BIN:-$REPO/tern}
MAN_DIR=$REPO/man

setup() {
	case ${TERN_BIN##*/} in
	runc* | crun*) skip "tern's own man pages" ;;
	esac
}

# commands: the commands `tern --help` lists, one a line.
commands() {
	"$TERN_BIN" --help | sed -n '/^Commands:/,$s/^  \([a-z][-a-z]*\) .*/\1/p'
}

# page_of COMMAND: the page that documents it.
page_of() {
	case $1 in
	migrate | migrate-receive) echo "$MAN_DIR/tern-migrate.1" ;;
	help) echo "$MAN_DIR/tern.1" ;;
	*) echo "$MAN_DIR/tern-$1.1" ;;
	esac
}

# page_text PAGE: the page's source with \- as - and no font changes, so
# that a flag reads as --help prints it.
page_text() {
	sed 's/\\-/-/g; s/\\f[BIRP]//g; s/\\f(..//g' "$1"
}

# has_word TEXT WORD: WORD is in TEXT, not as a part of a longer flag
# (--memory is not found in --memory-swap). In bash itself: the machine may
# be busy, and a grep per flag adds up.
has_word() {
	local re="(^|[^-a-zA-Z0-9])$2([^-a-zA-Z0-9]|\$)"
	[[ $1 =~ $re ]]
}

# long_flags HELP-TEXT: the long flags of the option lines of a --help text.
long_flags() {
	sed -n 's/^ \{1,\}\(-[-a-zA-Z0-9]*\(, -[-a-zA-Z0-9]*\)*\).*/\1/p' <<<"$1" |
		grep -o -- '--[a-zA-Z0-9][-a-zA-Z0-9]*' | sort -u
}

@test "man pages: tern --help lists the commands of the brief" {
	local c
	run commands
	[ "$status" -eq 0 ]
	for c in create start run exec kill delete state list ps pause resume events update \
		checkpoint restore features spec snapshot rollback clone migrate migrate-receive; do
		has_word "$output" "$c" || {
			echo "tern --help does not list $c"
			return 1
		}
	done
}

@test "man pages: every command tern --help lists has its page" {
	local c missing=
	for c in $(commands); do
		[ -f "$(page_of "$c")" ] || missing="$missing $c"
	done
	[ -z "$missing" ] || {
		echo "no man page for:$missing"
		return 1
	}
}

@test "man pages: every long flag of every command's --help is on its page" {
	local c f page help text missing=
	for c in $(commands); do
		[ "$c" = help ] && continue
		page=$(page_of "$c")
		[ -f "$page" ] || {
			missing="$missing $c(no page)"
			continue
		}
		help=$("$TERN_BIN" "$c" --help) || {
			echo "tern $c --help failed"
			return 1
		}
		text=$(page_text "$page")
		for f in $(long_flags "$help"); do
			has_word "$text" "$f" || missing="$missing $c:$f"
		done
	done
	[ -z "$missing" ] || {
		echo "missing from the man pages:$missing"
		return 1
	}
}

@test "man pages: the global options of tern --help are in tern.1" {
	local f text missing=
	text=$(page_text "$MAN_DIR/tern.1")
	for f in $(long_flags "$("$TERN_BIN" --help)"); do
		has_word "$text" "$f" || missing="$missing $f"
	done
	[ -z "$missing" ] || {
		echo "missing from tern.1:$missing"
		return 1
	}
}

@test "man pages: each page has NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, SEE ALSO" {
	local c page s text re missing=
	for c in $(commands); do
		[ "$c" = help ] && continue
		page=$(page_of "$c")
		text=$(<"$page") || return 1
		for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO"; do
			re=$'(^|\n)\\.SH "?'"$s"
			[[ $text =~ $re ]] || missing="$missing $(basename "$page"):$s"
		done
	done
	[ -z "$missing" ] || {
		echo "sections missing:$missing"
		return 1
	}
}

@test "man pages: every page renders without a warning" {
	local page out bad=
	command -v groff >/dev/null || skip "no groff (Debian: groff-base)"
	# what man -l runs (tbl, the man macros), with every warning on
	for page in "$MAN_DIR"/*.1 "$MAN_DIR"/*.7; do
		out=$(groff -t -man -Tutf8 -ww -z "$page" 2>&1)
		[ -z "$out" ] || bad="$bad$(basename "$page"): $out"$'\n'
	done
	[ -z "$bad" ] || {
		echo "$bad"
		return 1
	}
}

@test "man pages: Makefile.am installs every page in man/" {
	local page makefile missing=
	makefile=$(<"$REPO/Makefile.am")
	for page in "$MAN_DIR"/*.[0-9]; do
		[[ $makefile == *"man/${page##*/}"* ]] || missing="$missing ${page##*/}"
	done
	[ -z "$missing" ] || {
		echo "not in dist_man_MANS:$missing"
		return 1
	}
}
