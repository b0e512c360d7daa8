#!/bin/sh
# Fuzz the config and state parsers with libFuzzer (clang) for N seconds
# (default 60), starting from the default spec and the unit-test inputs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
work=${TMPDIR:-/tmp}/tern-fuzz
mkdir -p "$work/corpus"
clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
	-iquote "$top/libocispec" "$here/fuzz-config.c" "$top"/libocispec/oci-*.c \
	$(pkg-config --cflags --libs yajl) -o "$work/fuzz-config"
(cd "$work/corpus" && rm -f config.json && "$top/tern" spec >/dev/null 2>&1 || true)
exec "$work/fuzz-config" -max_total_time="$secs" -max_len=65536 "$work/corpus"
