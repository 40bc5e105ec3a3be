#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Install what coll/offload needs on Debian 12 or 13 (when missing), build it, and
# install mca_coll_offload.so into the system Open MPI's component directory.
# Idempotent; run as root (or with sudo available).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# (gcc's sanitizer runtimes come with build-essential; clang's (libclang-rt-14-dev) and
# llvm-symbolizer (llvm), which writes TSan's stacks, are only recommended by clang)
pkgs="build-essential autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin \
libfabric-dev libhwloc-dev python3-matplotlib iproute2 util-linux clang libclang-rt-dev \
llvm dpkg-dev"
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
# Debian 13's libopenmpi-dev (Open MPI 5.0) omits a few internal headers the
# component needs (opal/mca/threads/pthreads/): an Open MPI source tree of the same
# version supplies them (apt-get source, once, kept under /var/cache/coll-offload).
extra=""
incdir=$(mpicc --showme:incdirs 2>/dev/null | tr ' ' '\n' | grep '/openmpi$' | head -1)
if [ -n "$incdir" ] && [ -d "$incdir/opal/mca/threads" ] \
   && [ ! -f "$incdir/opal/mca/threads/pthreads/threads_pthreads_mutex.h" ]; then
    ver=$(ompi_info --version | sed -n 's/^Open MPI v\{0,1\}\([0-9.]*\).*/\1/p' | head -1)
    cache=/var/cache/coll-offload/ompi-src
    src=$(ls -d "$cache"/openmpi-"$ver" 2>/dev/null | head -1)
    if [ -z "$src" ]; then
        SUDO=""
        [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        . /etc/os-release
        list=/etc/apt/sources.list.d/coll-offload-src.list
        if [ ! -f "$list" ]; then
            echo "setup: adding deb-src for $VERSION_CODENAME ($list), for Open MPI's source"
            echo "deb-src http://deb.debian.org/debian $VERSION_CODENAME main" | $SUDO tee "$list" >/dev/null
        fi
        $SUDO apt-get update -qq
        $SUDO mkdir -p "$cache"
        (cd "$cache" && $SUDO apt-get source -qq "openmpi=$(dpkg-query -W -f='${Version}' libopenmpi-dev)" \
            >/dev/null 2>&1 || $SUDO apt-get source -qq openmpi >/dev/null)
        src=$(ls -d "$cache"/openmpi-"$ver" 2>/dev/null | head -1)
        [ -n "$src" ] || { echo "setup: could not get Open MPI $ver's source"; exit 1; }
    fi
    echo "setup: Open MPI $ver's missing internal headers from $src"
    extra="--with-ompi-extra-headers=$src"
fi
if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    ./configure -q $extra
fi
make -j"$(nproc)" -s
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO make -s install
echo "setup: installed $(ompi_info --path pkglibdir | sed -n 's/.*Pkglibdir: *//p')/mca_coll_offload.so"
