#!/bin/bash
# The shape of src/: every #include "x.h" points down a layer or stays in
# its own, and no files call each other back (no circle of includes).
#
# The layers, lowest first, are the folders of src/ (src/README.md says
# what each owns). A file's module is its name without .c or .h (state.c and
# state.h are one module); module A uses B when a file of A includes B's
# header. Fails, naming each offending line, on:
#   - an include of a header of a higher layer;
#   - an include of a header found nowhere (src/*/, libocispec/);
#   - a circle of modules, whatever their layers (coreutils' tsort finds it);
#   - a source file of src/ that is in no layer folder.
# Run by `make check`; also by hand: scripts/check-layers.sh [TOP]
set -uo pipefail

TOP=${1:-$(cd "$(dirname "$0")/.." && pwd)}
LAYERS=(base linux cgroups rootfs lifecycle criu continuity cli)
cd "$TOP" || exit 2

declare -A RANK HOME
for i in "${!LAYERS[@]}"; do
	RANK[${LAYERS[$i]}]=$i
	[ -d "src/${LAYERS[$i]}" ] || { echo "check-layers: no folder src/${LAYERS[$i]}" >&2; exit 2; }
done
fail=0
for f in src/*.[ch]; do
	[ -e "$f" ] || continue
	echo "check-layers: $f is in no layer (src/LAYER/)"
	fail=1
done
for d in src/*/; do
	d=${d%/}
	[ -n "${RANK[${d#src/}]:-}" ] || { echo "check-layers: src/${d#src/}/ is not a layer of this script"; fail=1; }
done
# where each header lives: its layer
for h in src/*/*.h; do
	name=${h##*/}
	layer=${h#src/}
	HOME[$name]=${layer%%/*}
done
for h in libocispec/*.h; do
	HOME[${h##*/}]=libocispec
done

INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)"'
pairs=$(mktemp)
trap 'rm -f "$pairs"' EXIT
for f in src/*/*.[ch]; do
	layer=${f#src/}
	layer=${layer%%/*}
	base=${f##*/}
	mod=${base%.[ch]}
	while IFS=: read -r line inc; do
		[[ "$inc" =~ $INCLUDE_RE ]] || continue
		hdr=${BASH_REMATCH[1]}
		[ "$hdr" = config.h ] && continue # configure's, in the build tree
		home=${HOME[$hdr]:-}
		if [ -z "$home" ]; then
			echo "$f:$line: includes \"$hdr\", which is in no layer"
			fail=1
			continue
		fi
		[ "$home" = libocispec ] && continue # below every layer
		if [ "${RANK[$home]}" -gt "${RANK[$layer]}" ]; then
			echo "$f:$line: $layer includes \"$hdr\" of $home, a higher layer"
			fail=1
		fi
		target=${hdr%.h}
		[ "$target" = "$mod" ] || echo "$mod $target" >>"$pairs"
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done
loops=$(sort -u "$pairs" | tsort 2>&1 >/dev/null)
if [ -n "$loops" ]; then
	echo "check-layers: modules that include each other (a circle):"
	echo "$loops" | sed 's/^tsort: //'
	fail=1
fi
if [ "$fail" -ne 0 ]; then
	echo "check-layers: FAILED (layers, lowest first: ${LAYERS[*]})"
	exit 1
fi
echo "check-layers: ok: $(sort -u "$pairs" | wc -l) module uses, all down or level, no circle"
