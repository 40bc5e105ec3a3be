#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# The test suite against the other Open MPI of Debian's two releases (as root), in a
# root made by debootstrap: on a Debian 12 machine (Open MPI 4.1), Open MPI 5.0 in a
# Debian 13 (trixie) root; on a Debian 13 machine (Open MPI 5.0), Open MPI 4.1 in a
# Debian 12 (bookworm) root. The Debian 13 root also holds an Open MPI source tree
# (apt-get source) for the few headers its devel package omits; Debian 12's has them
# all. This tree is built there and its unit and single-node MPI tests and MPICH's
# collective tests run there; in the Debian 13 root also, after the checks that a
# plain mpirun selects the component, that make install's diversion of PMIx's
# parameter file survives apt-get install --reinstall libpmix2t64 and that make
# uninstall leaves the package's file as it was. The multi-host tests (network
# namespaces) run on the machine's own Open MPI only.
# Last line: "N passed, M failed, K skipped".
#
# Environment: OTHER_RELEASE (trixie or bookworm; default: trixie when this machine's
# Open MPI is 4.x, else bookworm), OTHER_ROOT (default /var/cache/coll-offload/RELEASE;
# kept between runs, made when missing), DEBIAN_MIRROR (default
# http://deb.debian.org/debian), OTHER_SUITE (run.sh's suite: node, the default, all
# of it; quick for a shorter pass). OMPI5_ROOT and OMPI5_SUITE, their names when this
# was contrib/run-tests-ompi5.sh, are read too.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/contrib/tally.sh"
release=${OTHER_RELEASE:-}
if [ -z "$release" ]; then
    case $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\{0,1\}\([0-9]*\)\..*/\1/p' | head -1) in
        4) release=trixie ;;
        5) release=bookworm ;;
        *) case $(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}") in
               bookworm) release=trixie ;;
               *) release=bookworm ;;
           esac ;;
    esac
fi
case $release in
    trixie) tag=ompi5; ver=5.0; major=5; what="Open MPI 5.0 (Debian 13)"
        root=${OTHER_ROOT:-${OMPI5_ROOT:-/var/cache/coll-offload/trixie}} ;;
    bookworm) tag=ompi4; ver=4.1; major=4; what="Open MPI 4.1 (Debian 12)"
        root=${OTHER_ROOT:-/var/cache/coll-offload/bookworm} ;;
    *) echo "other-ompi: OTHER_RELEASE=$release: neither trixie nor bookworm"
       echo "0 passed, 1 failed"; exit 1 ;;
esac
suite=${OTHER_SUITE:-${OMPI5_SUITE:-node}}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs="libopenmpi-dev,openmpi-bin,build-essential,autoconf,automake,libtool"
pkgs="$pkgs,pkg-config,libfabric-dev,libhwloc-dev,dpkg-dev,xz-utils,procps"
[ "$release" = trixie ] && pkgs="$pkgs,libpmix-dev"

fail() {
    echo "$tag: $*"
    echo "0 passed, 1 failed"
    exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot)"

if [ ! -x "$root/usr/bin/mpicc" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
    } >/dev/null 2>&1 || fail "cannot install debootstrap"
    echo "$tag: making a $release root for $what in $root (a few minutes)"
    rm -rf "$root"
    mkdir -p "$root"
    debootstrap --variant=minbase --include="$pkgs" "$release" "$root" "$mirror" \
        > /tmp/ofl-debootstrap.log 2>&1 || { tail -5 /tmp/ofl-debootstrap.log; fail "debootstrap"; }
fi

mounts=""
cleanup() {
    for m in $mounts; do
        umount -l "$root/$m" 2>/dev/null
    done
}
trap cleanup EXIT INT TERM
for m in proc sys dev dev/shm dev/pts; do
    if ! mountpoint -q "$root/$m"; then
        mount --bind "/$m" "$root/$m" || fail "cannot bind-mount /$m"
        mounts="$m $mounts"
    fi
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null

# Debian 13: an Open MPI source tree of the installed version, for
# --with-ompi-extra-headers (Debian 12's libopenmpi-dev has every header).
extra=""
if [ "$release" = trixie ]; then
    if ! ls -d "$root"/build/ompi-src/openmpi-5* >/dev/null 2>&1; then
        echo "deb-src $mirror trixie main" > "$root/etc/apt/sources.list.d/coll-offload-src.list"
        chroot "$root" sh -c 'apt-get update -qq && mkdir -p /build/ompi-src && cd /build/ompi-src \
            && apt-get source -qq openmpi' > /tmp/ofl-ompi-src.log 2>&1 \
            || { tail -5 /tmp/ofl-ompi-src.log; fail "apt-get source openmpi"; }
    fi
    src=$(cd "$root" && ls -d build/ompi-src/openmpi-5* | head -1)
    extra="--with-ompi-extra-headers=/$src"
fi

# This tree as git tracks it (plus local changes), built from scratch there and
# installed as a user installs it (make install into Open MPI's component
# directory), after undoing what an earlier run's install changed, so that the
# runs below find the component the way a user's mpirun does, with nothing set.
rm -rf "$root/build/coll-offload" "$root/build/inst"
mkdir -p "$root/build/coll-offload"
(cd "$top" && git ls-files -z | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$root/build/coll-offload" \
    || fail "cannot copy the tree"
chroot "$root" sh /build/coll-offload/contrib/pmix-params.sh uninstall "" >/dev/null 2>&1
pkglibdir=$(chroot "$root" ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
rm -f "$root$pkglibdir/mca_coll_offload.so"
echo "$tag: $(chroot "$root" ompi_info --version 2>/dev/null | head -1) in $root${extra:+, headers from /$src}"
chroot "$root" sh -c "cd /build/coll-offload && ./autogen.sh >/dev/null 2>&1 \
    && ./configure -q $extra \
    && make -j\$(nproc) -s && make -s install" > /tmp/ofl-$tag-build.log 2>&1 \
    || { tail -20 /tmp/ofl-$tag-build.log; fail "build against $what"; }
grep -a "^coll/offload:" /tmp/ofl-$tag-build.log | sed "s/^/$tag: /"

echo "== unit tests (Open MPI $major root)"
# (the tree is copied over the last run's: its logs must not be read as this one's)
rm -f "$root/build/coll-offload/test/unit/test-suite.log" \
    "$root"/build/coll-offload/test/unit/test_*.log "$root"/build/coll-offload/test/unit/test_*.trs
chroot "$root" sh -c "cd /build/coll-offload && make -s check" > /tmp/ofl-$tag-unit.log 2>&1
unit_status=$?
tally_unit "$root/build/coll-offload/test/unit/test-suite.log" /tmp/ofl-$tag-unit.log \
    "$unit_status"

echo "== selection by a plain mpirun (Open MPI $major root)"
# mpirun as a user types it, by priority and by an explicit list: the component
# must be found and used without any environment variable.
printf '%s\n' '#include <mpi.h>' '#include <stdio.h>' \
    'int main(int argc, char **argv)' '{' '    int x = 1, y = 0, size;' \
    '    MPI_Init(&argc, &argv);' '    MPI_Comm_size(MPI_COMM_WORLD, &size);' \
    '    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);' \
    '    printf("sum %d of %d\\n", y, size);' '    MPI_Finalize();' '    return 0;' '}' \
    > "$root/build/select.c"
# selected [HOW]: does mpirun -np 2 (with HOW) use coll/offload and sum right? Its
# output in $sel_out.
selected() {
    # shellcheck disable=SC2086  # $1 is meant to be split
    sel_out=$(chroot "$root" env -u OMPI_MCA_mca_base_component_path OMPI_ALLOW_RUN_AS_ROOT=1 \
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 mpirun --oversubscribe -np 2 ${1:-} \
        --mca coll_offload_verbose 1 /build/select 2>&1)
    echo "$sel_out" | grep -q "software NIC ready" && echo "$sel_out" | grep -q "^sum 2 of 2"
}
sel_pass=0
sel_fail=0
chroot "$root" mpicc -o /build/select /build/select.c >/dev/null 2>&1 || sel_fail=1
for how in "" "--mca coll offload,tuned,libnbc,basic,inter,self"; do
    if selected "$how"; then
        echo "[ ok ]   mpirun -np 2 ${how:-(by priority)}: coll/offload selected, right sum"
        sel_pass=$((sel_pass + 1))
    else
        echo "[FAIL]   mpirun -np 2 ${how:-(by priority)}: coll/offload not used"
        echo "$sel_out" | head -5 | sed 's/^/         /'
        sel_fail=$((sel_fail + 1))
    fi
done
tally_add "$sel_pass passed, $sel_fail failed"

if [ "$release" = trixie ]; then
    echo "== PMIx's parameter file across package operations (Open MPI $major root)"
    # make install diverted libpmix2t64's pmix-mca-params.conf to FILE.distrib and put
    # a copy without mca_base_component_path in its place. A reinstall of the package
    # must leave that so (mpirun still finds the component); make uninstall must
    # leave the package's file as the package has it and no diversion; make install
    # again puts things back for the parts below.
    pm_pass=0
    pm_fail=0
    pm_skip=0
    # pm ok|FAIL|skip WHAT [DETAIL]: one check's result
    pm() {
        case $1 in
            ok) echo "[ ok ]   $2"; pm_pass=$((pm_pass + 1)) ;;
            skip) echo "[skip]   $2"; pm_skip=$((pm_skip + 1)) ;;
            *) echo "[FAIL]   $2"; pm_fail=$((pm_fail + 1)) ;;
        esac
        [ -z "${3:-}" ] || echo "$3" | tail -8 | sed 's/^/         /'
    }
    pf=$(chroot "$root" dpkg -L libpmix2t64 2>/dev/null | grep '/pmix-mca-params\.conf$' | head -1)
    active='^[[:space:]]*mca_base_component_path[[:space:]]*='
    # ours: PF diverted by us, our copy in place (the line commented out with the
    # marker), the package's file with the line at PF.distrib
    ours() {
        [ "$(chroot "$root" dpkg-divert --listpackage "$pf" 2>/dev/null)" = LOCAL ] \
            && [ "$(chroot "$root" dpkg-divert --truename "$pf" 2>/dev/null)" = "$pf.distrib" ] \
            && grep -q '^# coll/offload: ' "$root$pf" && ! grep -Eq "$active" "$root$pf" \
            && grep -Eq "$active" "$root$pf.distrib"
    }
    divlist() {
        echo "dpkg-divert --list: $(chroot "$root" dpkg-divert --list "$pf" 2>&1 | grep . || echo "(no diversion of $pf)")"
    }
    if [ -z "$pf" ]; then
        pm FAIL "libpmix2t64 has no pmix-mca-params.conf (dpkg -L)"
    else
        if ours; then
            pm ok "make install: $pf diverted to .distrib, our copy in place"
        else
            pm FAIL "make install: $pf not diverted to .distrib with our copy in place" "$(divlist)"
        fi
        divlist | sed 's/^/         /'
        # (a .deb debootstrap left in apt's cache needs no download; otherwise, after
        # an apt-get update, one from the mirror)
        reinst() {
            chroot "$root" env DEBIAN_FRONTEND=noninteractive \
                apt-get install --reinstall -y -q libpmix2t64 > /tmp/ofl-$tag-reinstall.log 2>&1
        }
        if reinst || { chroot "$root" apt-get update -qq >> /tmp/ofl-$tag-reinstall.log 2>&1 && reinst; }; then
            grep -aE '^(Get:|Unpacking|Setting up)' /tmp/ofl-$tag-reinstall.log | sed 's/^/         /'
            if ours; then
                pm ok "apt-get install --reinstall libpmix2t64: the package's file went to .distrib, our copy stayed"
            else
                pm FAIL "apt-get install --reinstall libpmix2t64: our copy or the diversion is gone" "$(divlist)"
            fi
            if selected ""; then
                pm ok "mpirun -np 2 after the reinstall: coll/offload selected, right sum"
            else
                pm FAIL "mpirun -np 2 after the reinstall: coll/offload not used" "$sel_out"
            fi
        else
            why=$(grep -a . /tmp/ofl-$tag-reinstall.log | tail -1)
            pm skip "apt-get install --reinstall libpmix2t64: apt could not ($why)"
            pm skip "mpirun -np 2 after the reinstall: no reinstall"
        fi
        out=$(chroot "$root" sh -c "cd /build/coll-offload && make -s uninstall" 2>&1)
        echo "$out" | grep -a "^coll/offload:" | sed "s/^/$tag: /"
        verify=$(chroot "$root" dpkg --verify libpmix2t64 2>&1)
        echo "         dpkg --verify libpmix2t64: ${verify:-(nothing)}"
        if [ -n "$out" ] && ! echo "$verify" | grep -qF "$pf" && ! grep -q '^# coll/offload: ' "$root$pf" \
            && grep -Eq "$active" "$root$pf"; then
            pm ok "make uninstall: dpkg --verify libpmix2t64 says nothing of $pf, the package's line is back"
        else
            pm FAIL "make uninstall: $pf is not the package's" "$out
dpkg --verify: $verify"
        fi
        if [ -z "$(chroot "$root" dpkg-divert --listpackage "$pf" 2>/dev/null)" ] && [ ! -e "$root$pf.distrib" ]; then
            pm ok "make uninstall: no diversion of $pf left"
        else
            pm FAIL "make uninstall: the diversion of $pf is still there" "$(divlist)"
        fi
        divlist | sed 's/^/         /'
        out=$(chroot "$root" sh -c "cd /build/coll-offload && make -s install" 2>&1)
        echo "$out" | grep -a "^coll/offload:" | sed "s/^/$tag: /"
        if ours; then
            pm ok "make install again: $pf diverted, our copy in place"
        else
            pm FAIL "make install again: $pf not diverted with our copy in place" "$out"
        fi
    fi
    tally_add "$pm_pass passed, $pm_fail failed, $pm_skip skipped"
fi

echo "== MPI tests (Open MPI $major root)"
tally_part chroot "$root" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    EXPECT_OFFLOAD=1 COLL_SELECTION="--mca op ^avx" SUITE="$suite" \
    bash /build/coll-offload/test/mpi/run.sh /build/coll-offload/test/mpi

echo "== MPICH collective tests (Open MPI $ver)"
# (In a chroot, Open MPI 5's tcp BTL prints "Unable to find reachable pairing" on every
# run, which MPICH's pass rule, "No Errors" and nothing else, counts as a failure of
# both selections; these runs are on one node and need no tcp.)
tally_part chroot "$root" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    COMMON_ARGS="--mca op ^avx --mca btl ^tcp" bash /build/coll-offload/test/mpich/run.sh
tally_end
