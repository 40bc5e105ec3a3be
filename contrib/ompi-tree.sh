#!/bin/sh
# Places coll/offload into an Open MPI source tree as ompi/mca/coll/offload, the
# way an upstream component lives: copies of src/, ompi/ and opal-glue/, with the
# Makefile.am and configure.m4 of contrib/ompi-tree/ written for Open MPI's build
# system. Afterwards Open MPI's own
#     ./autogen.pl && ./configure ... && make
# builds mca_coll_offload.so with the rest (or, to build only the component after
# configure: make -C ompi/mca/coll/offload).
#
# Usage: contrib/ompi-tree.sh OMPI_SRC_DIR
# A second run replaces the copy (so edits belong in this repository, not there).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

[ $# -eq 1 ] || { echo "usage: $0 OMPI_SRC_DIR" >&2; exit 2; }
ompi=$1
if [ ! -f "$ompi/ompi/mca/coll/coll.h" ] || [ ! -f "$ompi/autogen.pl" ]; then
    echo "$0: $ompi is not an Open MPI source tree (no ompi/mca/coll/coll.h or autogen.pl)" >&2
    exit 1
fi

dest=$ompi/ompi/mca/coll/offload
rm -rf "$dest"
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
cp "$top/contrib/ompi-tree/Makefile.am" "$top/contrib/ompi-tree/configure.m4" "$dest/"

# Open MPI's autogen.pl lists component owners; the file is optional but keeps
# its report complete.
printf 'owner: other\nstatus: maintenance\n' > "$dest/owner.txt"

echo "coll/offload placed in $dest; now, in $ompi: ./autogen.pl && ./configure ... && make"
