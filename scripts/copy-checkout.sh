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
# --ignore-failed-read: a tracked file deleted in the working tree is
# simply not copied
git ls-files -z | tar -c --null -T - --ignore-failed-read 2>/dev/null | tar -x -C "$dest"
