#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Install what coll/offload needs on Debian 12 or 13 (the packages of that release's
# list that are missing; on Debian 13 also Open MPI's source, for the headers its devel
# package omits), build it, and install mca_coll_offload.so into the system Open MPI's
# component directory. Idempotent; run as root (or with sudo available).
#
# One line per step; the output of apt-get, autogen, configure and make goes to a log
# (/var/log/coll-offload-setup.log as root, else a new file under /tmp) whose last
# lines and path are printed when a step fails (exit status 1).
#
#   sh contrib/setup.sh [--no-install]
#   --no-install  install nothing (no package, no Open MPI source, not the component):
#                 stop if something is missing, else configure and build in this tree
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

install=1
for arg in "$@"; do
    case $arg in
        --no-install) install=0 ;;
        -h|--help) sed -n '4,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup: unknown option $arg (see sh $0 --help)" >&2; exit 2 ;;
    esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if [ "$(id -u)" -eq 0 ] && touch /var/log/coll-offload-setup.log 2>/dev/null; then
    log=/var/log/coll-offload-setup.log
    : > "$log"
else
    log=$(mktemp "${TMPDIR:-/tmp}/coll-offload-setup.XXXXXX")
fi
echo "coll/offload setup, $(date)" >> "$log"

# fail WHAT: the end of the log, its path, exit 1
fail() {
    echo "setup: FAILED: $1; the last lines of $log:"
    tail -n 20 "$log" | sed 's/^/  | /'
    echo "setup: the whole log: $log"
    exit 1
}
# run CMD...: CMD with its output appended to the log
run() {
    echo "+ $*" >> "$log"
    "$@" >> "$log" 2>&1
}

# The release: some package names differ. gcc's sanitizer runtimes come with
# build-essential; clang's are only recommended by clang: on Debian 12 (clang 14) they
# are libclang-rt-14-dev, which Debian 13 (clang 19) does not have; there
# libclang-rt-dev follows the default clang. llvm has llvm-symbolizer, which writes
# TSan's stacks. Open MPI 5 (Debian 13) takes PMIx's flags from pkg-config pmix
# (libpmix-dev). Another system gets Debian 13's list, and is told so.
osr() { (. /etc/os-release 2>/dev/null; eval "echo \"\${$1:-}\""); }
distro=$(osr ID)
version=$(osr VERSION_ID)
codename=$(osr VERSION_CODENAME)
pkgs="build-essential autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin \
libfabric-dev libhwloc-dev python3-matplotlib iproute2 util-linux clang llvm dpkg-dev git"
case "$distro:$version:$codename" in
    debian:12:*|*:*:bookworm)
        release="Debian 12 (bookworm)"
        pkgs="$pkgs libclang-rt-14-dev" ;;
    debian:13:*|*:*:trixie)
        release="Debian 13 (trixie)"
        pkgs="$pkgs libclang-rt-dev libpmix-dev" ;;
    *)
        name=$(osr PRETTY_NAME)
        release="${name:-this system} (neither Debian 12 nor 13: trying Debian 13's packages)"
        pkgs="$pkgs libclang-rt-dev libpmix-dev" ;;
esac

missing=""
n=0
total=0
for p in $pkgs; do
    total=$((total + 1))
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
        n=$((n + 1))
    fi
done
if [ "$n" -eq 0 ]; then
    echo "setup: $release: the $total packages needed are installed (log: $log)"
elif [ "$install" -eq 0 ]; then
    echo "setup: $release: $n of the $total packages needed are missing:$missing (--no-install)"
    exit 1
else
    [ "$n" -eq 1 ] && what=package || what=packages
    echo "setup: $release: installing $n $what (log: $log)"
    echo "missing:$missing" >> "$log"
    run $SUDO apt-get -q update || fail "apt-get update"
    # shellcheck disable=SC2086  # $missing is a list
    run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends \
        $missing || fail "installing$missing"
fi

ompi_ver=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\{0,1\}\([0-9.]*\).*/\1/p' | head -1)
[ -n "$ompi_ver" ] || { echo "ompi_info --version gave no version" >> "$log"; fail "Open MPI's version"; }

# Debian 13's libopenmpi-dev (Open MPI 5.0) omits a few internal headers the
# component needs (opal/mca/threads/pthreads/): an Open MPI source tree of the same
# version supplies them (apt-get source, once, kept under /var/cache/coll-offload).
extra=""
incdir=$(mpicc --showme:incdirs 2>/dev/null | tr ' ' '\n' | grep '/openmpi$' | head -1)
if [ -n "$incdir" ] && [ -d "$incdir/opal/mca/threads" ] \
   && [ ! -f "$incdir/opal/mca/threads/pthreads/threads_pthreads_mutex.h" ]; then
    cache=/var/cache/coll-offload/ompi-src
    src=$cache/openmpi-$ompi_ver
    if [ -d "$src" ]; then
        echo "setup: Open MPI $ompi_ver's missing headers from $src"
    elif [ "$install" -eq 0 ]; then
        echo "setup: Open MPI $ompi_ver's headers are incomplete and $cache/openmpi-$ompi_ver is missing (--no-install)"
        exit 1
    else
        list=/etc/apt/sources.list.d/coll-offload-src.list
        echo "setup: Open MPI $ompi_ver's missing headers from its source (apt-get source openmpi into $cache)"
        cname=${codename:-trixie}
        if [ ! -f "$list" ]; then
            echo "adding $list: deb-src for $cname" >> "$log"
            echo "deb-src http://deb.debian.org/debian $cname main" | $SUDO tee "$list" >/dev/null \
                || fail "writing $list"
        fi
        run $SUDO apt-get -q update || fail "apt-get update (with $list)"
        run $SUDO mkdir -p "$cache" || fail "mkdir $cache"
        (cd "$cache" && run $SUDO apt-get -q source "openmpi=$(dpkg-query -W -f='${Version}' libopenmpi-dev)") \
            || (cd "$cache" && run $SUDO apt-get -q source openmpi) || fail "apt-get source openmpi"
        [ -d "$src" ] || { echo "no $cache/openmpi-$ompi_ver after apt-get source" >> "$log"; fail "Open MPI $ompi_ver's source"; }
    fi
    extra="--with-ompi-extra-headers=$src"
fi

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    echo "setup: configuring for Open MPI $ompi_ver"
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        run ./autogen.sh || fail "autogen.sh"
    fi
    # shellcheck disable=SC2086  # $extra is empty or one option
    run ./configure -q $extra || fail "configure"
else
    echo "setup: configuring for Open MPI $ompi_ver: configured already"
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "setup: building (make -j$jobs)"
run make -j"$jobs" -s || fail "make"

compdir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
if [ "$install" -eq 0 ]; then
    echo "setup: not installing the component into $compdir (--no-install)"
    exit 0
fi
# On Open MPI 5, make install also keeps a line of PMIx's parameter file from hiding
# every installed component from mpirun's processes (on Debian by diverting that
# file: contrib/pmix-params.sh); the line it prints about it is repeated from the log.
echo "setup: installing the component into $compdir"
logged=$(wc -l < "$log")
run $SUDO make -s install || fail "make install"
tail -n +$((logged + 1)) "$log" | grep -a '^coll/offload: ' | sed 's/^/setup: /'
[ -f "$compdir/mca_coll_offload.so" ] || { echo "no $compdir/mca_coll_offload.so" >> "$log"; fail "make install"; }
