#!/bin/bash
# copy-checkout.sh DEST: the files git tracks in this checkout, as they are
# in the working tree (committed or not), copied into DEST (made if
# missing). For the builds that must leave the checkout's own build alone:
# the sanitizer and valgrind runs, the fault-injection tern of faults.bats.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: copy-checkout.sh DEST" >&2; exit 2; }
dest=$1
cd "$(dirname "$0")/.."
mkdir -p "$dest"
# A copy has no .git of its own (git would answer for the checkout it sits
# in, with nothing): it copies the list of files it was made from, which
# each copy keeps in .tern-checkout-files. (The fault-injection build of
# faults.bats copies the sanitizer run's copy.)
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
	git ls-files -z >"$dest/.tern-checkout-files"
elif [ -f .tern-checkout-files ]; then
	cp .tern-checkout-files "$dest/.tern-checkout-files"
else
	echo "copy-checkout.sh: $(pwd) is neither a git checkout nor a copy of one" >&2
	exit 1
fi
# --ignore-failed-read: a tracked file deleted in the working tree is
# simply not copied
tar -c --null -T "$dest/.tern-checkout-files" --ignore-failed-read 2>/dev/null | tar -x -C "$dest"
