#!/bin/sh
# Copyright (c) 2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Checks coll/offload against Open MPI 6 (the main or v6.0.x branch) built from
# source, on this machine as root, with nothing installed system-wide:
#
#   tree  contrib/ompi-tree.sh places the component into a copy of the source tree
#         as ompi/mca/coll/offload; Open MPI's autogen.pl, configure and make build
#         and install it with the rest into a private prefix ($WORK/prefix).
#   out   the component built out of tree (`configure --with-ompi-src`) against that
#         configured tree alone (proved from the compiler's dependency files), and its
#         unit tests (make check).
#   mpi   the single-node MPI suite (test/mpi/run.sh) under the prefix's mpirun, with
#         the component Open MPI built in its tree, found as a user's mpirun finds it;
#         then t_coll and t_nb with the out-of-tree build instead.
#   below t_coll's matrix (every op x type the component handles) with coll/xhc and
#         then coll/acoll as the layer below the component: once with the default
#         policies, once with every call handed down (the *_policy fallback), so that
#         whatever the component gives the layer below (ops it wraps where that layer
#         is known wrong) is checked there.
#
# Usage: contrib/check-ompi-main.sh OMPI_SRC [all|tree|out|mpi|below]   (default: all)
#   OMPI_SRC  an Open MPI source tree of main or v6.0.x with its submodules
#             (3rd-party/openpmix, 3rd-party/prrte, 3rd-party/pympistandard,
#             config/oac), e.g. `git clone --recursive https://github.com/open-mpi/ompi`;
#             it is copied, never changed.
# Environment: WORK (default /var/cache/coll-offload/ompi-main-check; everything is
# made there), SUITE (run.sh's suite: node, the default, or quick), TEST_TIMEOUT
# (seconds per MPI run, 600), REUSE=1 (tree: keep a prefix an earlier run installed
# from the same source commit).
# Not in CI (no repository host there, and Open MPI's build takes about 45 minutes on
# two cores). Last line: "N passed, M failed" (the suite's checks, plus one per step).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OMPI_SRC [all|tree|out|mpi|below]" >&2; exit 2; }
src=$(cd "$1" 2>/dev/null && pwd) || { echo "$0: $1: no such directory" >&2; exit 2; }
what=${2:-all}
work=${WORK:-/var/cache/coll-offload/ompi-main-check}
suite=${SUITE:-node}
tmo=${TEST_TIMEOUT:-600}
tree=$work/tree
prefix=$work/prefix

. "$top/contrib/check-lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "needs root (mpirun as root, packages)"; failed=1; finish; }
for f in ompi/mca/coll/coll.h autogen.pl 3rd-party/openpmix/configure.ac \
    3rd-party/prrte/configure.ac config/oac/oac_init.m4; do
    [ -f "$src/$f" ] || { bad "$src is not an Open MPI source tree with its submodules (no $f)"
                          finish; }
done
grep -q MCA_COLL_BASE_VERSION_3_0_0 "$src/ompi/mca/coll/coll.h" ||
    say "note: $src has no coll framework 3.0.0: not Open MPI 6; going on"
renice -n 19 $$ > /dev/null
mkdir -p "$work"
# What Open MPI's build needs beyond the component's own: flex for its lexers,
# Python for the generated bindings, hwloc and libevent from the system.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade flex python3 \
    libhwloc-dev libevent-dev autoconf automake libtool pkg-config > "$work/packages.log" 2>&1 ||
    { bad "installing flex, python3, libhwloc-dev, libevent-dev (log: $work/packages.log)"
      finish; }
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "not a git checkout")
say "Open MPI source $src (commit $commit); work directory $work"

build_tree() {
    if [ "${REUSE:-0}" = 1 ] && [ -x "$prefix/bin/mpirun" ] &&
        [ "$(cat "$work/tree.commit" 2>/dev/null)" = "$commit" ]; then
        say "tree: reusing $prefix (REUSE=1, same commit)"
    else
        rm -rf "$tree" "$prefix" "$work/tree.commit"
        cp -a "$src" "$tree"
        sh "$top/contrib/ompi-tree.sh" "$tree" > "$work/ompi-tree.log" 2>&1 ||
            { bad "contrib/ompi-tree.sh (log: $work/ompi-tree.log)"; return 1; }
        # hwloc and libevent from the system: the tarballs of 3rd-party/ are not
        # needed then. PMIx and PRRTE are the tree's own: Debian's are older than
        # Open MPI 6 accepts.
        run tree-autogen sh -c "cd '$tree' && ./autogen.pl --force --no-3rdparty hwloc,libevent" ||
            { bad "autogen.pl"; return 1; }
        grep -q 'ompi:coll:offload' "$work/tree-autogen.log" ||
            grep -q 'coll.*offload' "$work/tree-autogen.log" ||
            say "note: autogen.pl did not name the coll/offload component"
        # Open MPI 5 and later link their components into the libraries unless told;
        # ours as its own object, so that the out-of-tree build can take its place.
        run tree-configure sh -c "cd '$tree' && ./configure --prefix='$prefix' \
            --with-pmix=internal --with-prrte=internal --with-hwloc=external \
            --with-libevent=external --disable-sphinx --disable-mpi-fortran --disable-oshmem \
            --disable-io-romio --without-ucx --without-ucc --enable-mca-dso=coll-offload" ||
            { bad "Open MPI configure"; return 1; }
        run tree-make sh -c "cd '$tree' && make -j2 && make install" ||
            { bad "Open MPI make / make install (with coll/offload in its tree)"; return 1; }
        echo "$commit" > "$work/tree.commit"
    fi
    so=$(find "$prefix/lib" -name mca_coll_offload.so | head -1)
    if [ -n "$so" ]; then
        ok "Open MPI's own build made and installed $so"
    else
        bad "no mca_coll_offload.so under $prefix/lib"
        return 1
    fi
    if grep ': warning:' "$work/tree-make.log" 2>/dev/null | grep -q 'coll/offload'; then
        say "compiler warnings in coll/offload:"
        grep ': warning:' "$work/tree-make.log" | grep 'coll/offload' | head
    fi
    v=$("$prefix/bin/ompi_info" --version 2>/dev/null | sed -n 's/^Open MPI v//p')
    say "installed Open MPI $v in $prefix"
    "$prefix/bin/ompi_info" | grep -q 'MCA coll: offload' && ok "ompi_info lists coll offload" ||
        bad "ompi_info does not list coll offload"
}

# The repository's tracked files (edits included), configured against the tree.
build_out() {
    [ -f "$tree/opal/include/opal_config.h" ] && [ -x "$prefix/bin/mpicc" ] ||
        { bad "out: no configured tree and prefix (run the tree step first)"; return 1; }
    o=$work/out
    rm -rf "$o" "$work/out-inst"
    mkdir -p "$o"
    (cd "$top" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$o"
    run out-build sh -c "cd '$o' && ./autogen.sh && PATH='$prefix/bin':\$PATH ./configure \
        --with-ompi='$prefix' --with-ompi-src='$tree' --with-component-dir='$work/out-inst' \
        && make -j2 V=1 && make install" || { bad "component build --with-ompi-src"; return 1; }
    deps=$(ls "$o"/ompi/.deps/*.Plo)
    if grep -q '/usr/lib/[^ ]*/openmpi/include' $deps; then
        bad "a component object includes the system's Open MPI headers"
    elif ! grep -q "$tree/ompi/mca/coll/coll.h" $deps; then
        bad "the dependency files do not name $tree/ompi/mca/coll/coll.h"
    else
        ok "out of tree: every Open MPI header the component includes is from $tree"
    fi
    if run out-unit sh -c "cd '$o' && make -j2 check -C test/unit"; then
        ok "unit tests ($(grep -c '^PASS' "$work/out-unit.log") programs)"
    else
        bad "unit tests (log: $work/out-unit.log)"
    fi
}

mpi_suite() {
    o=$work/out
    [ -x "$o/test/mpi/t_coll" ] || { bad "mpi: no test programs (run the out step first)"; return 1; }
    # The prefix's mpirun and the component where Open MPI installed it: nothing set.
    log=$work/mpi-suite.log
    t0=$(date +%s)
    env PATH="$prefix/bin:$PATH" LD_LIBRARY_PATH="$prefix/lib" EXPECT_OFFLOAD=1 \
        COLL_SELECTION="--mca op ^avx" TEST_TIMEOUT="$tmo" SUITE="$suite" \
        bash "$o/test/mpi/run.sh" "$o/test/mpi" > "$log" 2>&1
    rc=$?
    say "mpi suite ($suite): exit $rc after $(($(date +%s) - t0)) s (log: $log)"
    grep '^\[' "$log" | grep -v '^\[ok' | tail -20
    last=$(tail -1 "$log")
    echo "$last"
    p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
    f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
    if [ -z "$p" ]; then
        bad "mpi suite printed no summary"
        return 1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || bad "mpi suite exit $rc"
    # The out-of-tree build in place of the tree's: a directory with every other
    # component of the prefix and this one.
    d=$work/out-path
    rm -rf "$d" && mkdir -p "$d"
    for c in "$prefix"/lib/openmpi/mca_*; do
        case $(basename "$c") in mca_coll_offload.*) ;; *) ln -s "$c" "$d/" ;; esac
    done
    cp "$work"/out-inst/mca_coll_offload.so "$d/"
    for np in 2 4; do
        for t in t_coll t_nb; do
            args="--expect-offload"
            [ "$t" = t_coll ] && args="--quick --expect-offload"
            pol=""
            [ "$t" = t_nb ] && pol="--mca coll_offload_reduce_policy tree
                --mca coll_offload_bcast_policy tree:32k,get"
            # as run.sh runs them: no crowded-node hand-down (t_nb frees active
            # requests, which only an offloaded call completes in order)
            out=$(env PATH="$prefix/bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 \
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_coll_offload_crowded_max=-1 \
                timeout "$tmo" mpirun --oversubscribe \
                -np $np --mca mca_base_component_path "$d" --mca op ^avx $pol \
                "$o/test/mpi/$t" $args 2>&1)
            rc=$?
            echo "$out" | tail -2
            if [ $rc -eq 0 ] && echo "$out" | grep -q ' 0 failed'; then
                ok "out-of-tree build: $t np $np"
            else
                bad "out-of-tree build: $t np $np (exit $rc)"
            fi
        done
    done
}

# xhc and acoll default to priority 0 (unused); here between tuned (30) and the
# component (40), so that they are the layer below it. xhc without XPMEM crashes on
# (all)reduces above its copy-in-copy-out limit (4 KiB): raised to cover t_coll's sizes.
below_args() {
    case $1 in
        xhc) echo "--mca coll_xhc_priority 35 --mca coll_xhc_allreduce_cico_max 4194304
                   --mca coll_xhc_reduce_cico_max 4194304" ;;
        acoll) echo "--mca coll_acoll_priority 35 --mca coll_acoll_comm_size_thresh 2" ;;
    esac
}

below_matrix() {
    o=$work/out
    [ -x "$o/test/mpi/t_coll" ] || { bad "below: no test programs (run the out step first)"; return 1; }
    down="--mca coll_offload_allreduce_policy fallback --mca coll_offload_reduce_policy fallback
          --mca coll_offload_bcast_policy fallback --mca coll_offload_barrier_policy fallback"
    for comp in xhc acoll; do
        for np in 2 4; do
            for how in default down; do
                pol=""
                [ "$how" = down ] && pol=$down
                log=$work/below-$comp-np$np-$how.log
                env PATH="$prefix/bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 \
                    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "$tmo" mpirun --oversubscribe \
                    -np $np --mca coll "offload,$comp,tuned,libnbc,basic,self,inter" \
                    --mca op ^avx $(below_args $comp) $pol "$o/test/mpi/t_coll" --quick \
                    > "$log" 2>&1
                rc=$?
                last=$(grep '^t_coll: ' "$log" | tail -1)
                echo "$comp np $np ($how): ${last:-no summary}"
                if [ $rc -eq 0 ] && echo "$last" | grep -q ' 0 failed'; then
                    ok "t_coll with coll/$comp below, np $np, policies $how"
                else
                    bad "t_coll with coll/$comp below, np $np, policies $how (exit $rc; $log)"
                    grep '^FAIL' "$log" | head -5
                fi
            done
        done
    done
}

case $what in
    tree) build_tree ;;
    out) build_out ;;
    mpi) mpi_suite ;;
    below) below_matrix ;;
    all) build_tree && build_out && mpi_suite; below_matrix ;;
    *) echo "usage: $0 OMPI_SRC [all|tree|out|mpi|below]" >&2; exit 2 ;;
esac
say "Open MPI commit $commit"
finish
