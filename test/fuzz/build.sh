#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Build the libFuzzer harnesses (clang -fsanitize=fuzzer,address,undefined)
# against the sources of src/ directly: build.sh [OUTDIR] (default: build/
# next to this script). FUZZ_HARNESSES picks some (default: all seven). Needs
# clang with its sanitizer and libFuzzer runtimes (Debian: clang and
# libclang-rt-14-dev) and libfabric's headers (libfabric-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../src" && pwd)
common=$(cd "$here/../common" && pwd)
out=${1:-$here/build}
mkdir -p "$out/obj"
CC=${FUZZ_CC:-clang}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cflags="-g -O1 -std=c11 -D_GNU_SOURCE -I$src -I$here -I$common $san"
objs=""
# The code under test: instrumented for coverage (fuzzer-no-link) and sanitizers.
# The core's sources as src/Makefile.am lists them for libofl (one list to keep).
core=$(sed -n '/^libofl_la_SOURCES/,/^$/p' "$src/Makefile.am" | grep -o '[a-z0-9_/]*\.c' | sed 's/\.c$//')
[ -n "$core" ] || { echo "no sources found in $src/Makefile.am"; exit 1; }
for f in $core; do
    o="$out/obj/$(echo "$f" | tr / _).o"
    if [ ! -f "$o" ] || [ "$src/$f.c" -nt "$o" ] || [ -n "$(find "$src" -name '*.h' -newer "$o")" ]; then
        $CC $cflags -fsanitize=fuzzer-no-link -c -o "$o" "$src/$f.c"
    fi
    objs="$objs $o"
done
for h in ${FUZZ_HARNESSES:-attach mailbox get board ofi policy rules}; do
    $CC $cflags -fsanitize=fuzzer -o "$out/fuzz_$h" "$here/fuzz_$h.c" $objs \
        -lrt -lpthread -ldl -lm
done
