#!/bin/sh
# Install what coll/offload needs on Debian 12 (when missing), build it, and
# install mca_coll_offload.so into the system Open MPI's component directory.
# Idempotent; run as root (or with sudo available).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# (gcc's sanitizer runtimes come with build-essential; clang's (libclang-rt-14-dev) and
# llvm-symbolizer (llvm), which writes TSan's stacks, are only recommended by clang)
pkgs="build-essential autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin \
libfabric-dev libhwloc-dev python3-matplotlib iproute2 util-linux clang libclang-rt-14-dev \
llvm"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    ./autogen.sh
fi
if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    ./configure -q
fi
make -j"$(nproc)" -s
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO make -s install
echo "setup: installed $(ompi_info --path pkglibdir | sed -n 's/.*Pkglibdir: *//p')/mca_coll_offload.so"
