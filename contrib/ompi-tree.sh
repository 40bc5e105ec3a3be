#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Places coll/offload into an Open MPI source tree as ompi/mca/coll/offload, the
# way an upstream component lives: copies of src/, ompi/ and opal-glue/, with the
# Makefile.am and configure.m4 of contrib/ompi-tree/ written for Open MPI's build
# system. Afterwards Open MPI's own
#     ./autogen.pl && ./configure ... && make
# builds mca_coll_offload.so with the rest (or, to build only the component after
# configure: make -C ompi/mca/coll/offload).
#
# Usage: contrib/ompi-tree.sh OMPI_SRC_DIR
# A second run brings the copy up to date (edits belong in this repository, not
# there): only files whose content changed are written, and what Open MPI's build
# generated there stays, so that after an edit of sources `make` is enough. When the
# list of files or configure.m4 changed, run autogen.pl and configure again: Open
# MPI's make cannot remake its configure by itself.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

[ $# -eq 1 ] || { echo "usage: $0 OMPI_SRC_DIR" >&2; exit 2; }
ompi=$1
if [ ! -f "$ompi/ompi/mca/coll/coll.h" ] || [ ! -f "$ompi/autogen.pl" ]; then
    echo "$0: $ompi is not an Open MPI source tree (no ompi/mca/coll/coll.h or autogen.pl)" >&2
    exit 1
fi

final=$ompi/ompi/mca/coll/offload
# Made in a scratch directory, then copied over where it differs (below).
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ompi-tree.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
dest=$scratch
mkdir -p "$dest/src" "$dest/ompi" "$dest/opal-glue"

# The core without its stand-alone Makefile.am and the simulated NIC (tests only).
(cd "$top/src" && find . -name '*.[ch]' ! -name 'sim.[ch]') | while read -r f; do
    mkdir -p "$dest/src/$(dirname "$f")"
    cp "$top/src/$f" "$dest/src/$f"
done
cp "$top"/ompi/*.[ch] "$dest/ompi/"
# Not opal-glue/compat/: it stands in for a header Debian's devel package omits,
# which an Open MPI source tree has.
cp "$top"/opal-glue/*.[ch] "$dest/opal-glue/"
cp "$top/contrib/ompi-tree/configure.m4" "$dest/"
# The help file, installed with Open MPI's own (found without the stand-alone
# build's search directory).
cp "$top/ompi/help-coll-offload.txt" "$dest/"

# The words of an automake variable's value (continuation lines joined).
am_words() {
    sed -n "/^$2 *=/,/[^\\]\$/p" "$1" | sed "s/^$2 *=//" | sed 's/\\$//' |
        tr -s ' \t' '\n\n' | grep -v '^$'
}
# A sorted list as a Makefile.am value: one word a line, continued.
am_value() {
    sort -u | sed 's/^/    /; s/$/ \\/' | sed '$ s/ \\$//'
}
# What the stand-alone build compiles, and every header (some are in no list).
core=$( { am_words "$top/src/Makefile.am" libofl_la_SOURCES | sed 's|^|src/|'
          (cd "$dest" && find src -name '*.h'); } | am_value)
component=$( { am_words "$top/ompi/Makefile.am" mca_coll_offload_la_SOURCES |
               sed 's|^\.\./opal-glue/|opal-glue/|; t; s|^|ompi/|'
               (cd "$dest" && find ompi opal-glue -name '*.h'); } | am_value)
[ -n "$core" ] && [ -n "$component" ] || { echo "$0: no source lists" >&2; exit 1; }
awk -v core="$core" -v comp="$component" \
    '{ sub(/@CORE_SOURCES@/, "\\\n" core); sub(/@COMPONENT_SOURCES@/, "\\\n" comp); print }' \
    "$top/contrib/ompi-tree/Makefile.am" > "$dest/Makefile.am"

# Open MPI's autogen.pl lists component owners; the file is optional but keeps
# its report complete.
printf 'owner: other\nstatus: maintenance\n' > "$dest/owner.txt"

# Into place: changed and new files only (an unchanged file keeps its time, so
# Open MPI's make rebuilds what changed and never reruns automake for nothing);
# our files that are gone from the repository are removed.
mkdir -p "$final"
(cd "$dest" && find . -type f) | while read -r f; do
    if ! cmp -s "$dest/$f" "$final/$f"; then
        mkdir -p "$final/$(dirname "$f")"
        cp "$dest/$f" "$final/$f"
    fi
done
(cd "$final" && find src ompi opal-glue -name '*.[ch]' 2>/dev/null) | while read -r f; do
    [ -f "$dest/$f" ] || rm -f "$final/$f"
done
dest=$final

echo "coll/offload placed in $dest; now, in $ompi: ./autogen.pl && ./configure ... && make"
