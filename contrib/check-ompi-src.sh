#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Redoes, from scratch, the two checks of coll/offload against a real Open MPI
# source tree, the installed Open MPI's own (Debian 12: 4.1.4 from
# `apt-get source openmpi`), on this machine as root:
#
#   src   `configure --with-ompi-src=DIR`: the source tree is configured the way
#         Debian configured the installed library (debian/rules), the component is
#         built against it alone (proved from the compiler's dependency files: no
#         header comes from the installed devel headers) and loaded into the
#         installed runtime to run t_coll (np 2 and 4) and t_nb with --expect-offload.
#   tree  contrib/ompi-tree.sh places the component into a second copy of the
#         source tree as ompi/mca/coll/offload; Open MPI's autogen.pl and configure
#         take it in and make builds mca_coll_offload.so (only the component: it
#         needs no Open MPI library built), which then runs t_coll (np 4).
#
# Usage: contrib/check-ompi-src.sh [src|tree|all]     (default: all)
# Environment: WORK (default /var/cache/coll-offload/ompi-src-check; everything is
# made there, never in this repository), TEST_TIMEOUT (seconds per MPI run, 300),
# FULL=1 (tree: make all of Open MPI, not only ompi/mca/coll/offload).
# Not in CI: a run takes 30-60 minutes, almost all of it Open MPI's autogen.pl and
# configure (twice each). Last line: "N passed, M failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/var/cache/coll-offload/ompi-src-check}
what=${1:-all}
tmo=${TEST_TIMEOUT:-300}
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
installed_inc=/usr/lib/$ma/openmpi/include
syscomp=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p')
# t_nb expects every call offloaded: the policies test/mpi/run.sh gives it.
nb_policy="--mca coll_offload_reduce_policy tree --mca coll_offload_bcast_policy tree:32k,get"

. "$top/contrib/check-lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "needs root (apt-get source, mpirun as root)"; failed=1; finish; }
# Everything here is CPU-heavy and nothing is urgent: leave the machine to others.
renice -n 19 $$ > /dev/null
command -v ompi_info >/dev/null && [ -n "$syscomp" ] || { bad "no installed Open MPI"; finish; }
mkdir -p "$work"
ver=$(ompi_info --version | sed -n 's/^Open MPI v//p' | head -1)
say "installed Open MPI $ver; work directory $work"

# Debian's configure of the installed library (debian/rules of openmpi 4.1.4-3:
# dh_auto_configure's defaults and extra_flags for amd64) less Java and the usnic
# unit tests, which change no type. The transports matter: UCX's pml registers
# endpoint tags, which size ompi_proc_t (OMPI_PROC_ENDPOINT_TAG_MAX). $1: the tree.
debian_configure() {
    (cd "$1" && ./configure --build="$ma" --prefix=/usr --mandir='${prefix}/share/man' \
        --infodir='${prefix}/share/info' --localstatedir=/var --runstatedir=/run \
        --disable-option-checking --disable-silent-rules --disable-maintainer-mode \
        --disable-dependency-tracking --disable-wrapper-runpath \
        --with-package-string="Debian OpenMPI" --with-verbs --with-libfabric \
        --with-psm --with-psm2 --with-ucx \
        --with-pmix="/usr/lib/$ma/pmix2" --with-libevent=external --with-hwloc=external \
        --enable-mpi-cxx --enable-ipv6 --with-devel-headers --with-slurm --with-sge \
        --without-tm --sysconfdir=/etc/openmpi \
        --libdir="\${prefix}/lib/$ma/openmpi/lib" \
        --includedir="\${prefix}/lib/$ma/openmpi/include" \
        CFLAGS="$(dpkg-buildflags --get CFLAGS) -O3" \
        CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) -O3" \
        FCFLAGS="$(dpkg-buildflags --get FCFLAGS) -O3" \
        CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS)" LDFLAGS="$(dpkg-buildflags --get LDFLAGS)")
}

# opal_config.h of a configured tree against the installed one: the macros that
# differ, less those that say only what this machine has and Debian's build machine
# had not (X11, valgrind, flex, ps), name flags or paths, or belong to Java and the
# usnic unit tests.
config_h_differences() {
    n=0
    for f in "$1/opal/include/opal_config.h" "$installed_inc/openmpi/opal_config.h"; do
        n=$((n + 1))
        grep '^#define' "$f" |
            grep -v -e '_CONFIGURE_FLAGS \|CONFIGURE_CLI\|_DIR \|BUILD_\(DATE\|HOST\|USER\)' \
                -e 'X11\|X_DISPLAY_MISSING\|VALGRIND\|YYTEXT_POINTER\|HAVE_DL_INFO' \
                -e 'ORTE_CLEAN_PS_CMD\|OMPI_WANT_JAVA_BINDINGS\|OPAL_BTL_USNIC_UNIT_TESTS' |
            sort > "$work/opal_config.h.$n"
    done
    diff "$work/opal_config.h.1" "$work/opal_config.h.2" | grep '^[<>]'
}

# A copy of this repository's tracked files (edits included), built and installed
# into its own component directory. $1: name, then configure's arguments.
build_repo_copy() {
    name=$1
    shift
    rm -rf "${work:?}/$name" "$work/$name-inst"
    mkdir -p "$work/$name"
    (cd "$top" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$work/$name"
    run "$name-build" sh -c "cd '$work/$name' && ./autogen.sh && ./configure \
        --with-component-dir='$work/$name-inst' $* && make -j2 V=1 && make install"
}

# One MPI run with the component in $1 (a directory) before the system's.
mpi_run() {
    dir=$1
    np=$2
    shift 2
    label="np $np $*"
    out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OMPI_MCA_mca_base_component_path="$syscomp:$dir" \
        timeout "$tmo" mpirun --oversubscribe -np "$np" --mca op ^avx "$@" 2>&1)
    rc=$?
    echo "$out" | tail -3
    if [ $rc -eq 0 ] && echo "$out" | grep -q ' 0 failed'; then
        ok "$label"
    else
        bad "$label (exit $rc)"
    fi
}

# What Debian's configure of Open MPI finds (its Build-Depends that matter here).
build_deps="libibverbs-dev libfabric-dev libpsm-infinipath1-dev libpsm2-dev libucx-dev"
build_deps="$build_deps libhwloc-dev libevent-dev libpmix-dev gfortran dpkg-dev"
build_deps="$build_deps autoconf automake libtool"

get_source() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade $build_deps > /dev/null ||
        return 1
    [ -f "$work/pristine/ompi/mca/coll/coll.h" ] && return 0
    suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
    if ! grep -rqs "^Types: deb-src\|^deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n%s\n' \
            "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" "$suite" \
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
            > /etc/apt/sources.list.d/coll-offload-src.sources
        apt-get update -qq || return 1
    fi
    rm -rf "$work/dl" && mkdir -p "$work/dl"
    run apt-source sh -c "cd '$work/dl' && apt-get source openmpi" || return 1
    d=$(find "$work/dl" -maxdepth 1 -type d -name 'openmpi-*' | head -1)
    [ -n "$d" ] && mv "$d" "$work/pristine"
}

check_src() {
    a=$work/ompi-src
    rm -rf "$a"
    cp -a "$work/pristine" "$a"
    # Debian's patches touch configure.ac and Makefile.am files: as debian/rules does.
    run ompi-src-autogen sh -c "cd '$a' && ./autogen.pl --force" || { bad "autogen.pl"; return; }
    run ompi-src-configure debian_configure "$a" || { bad "Open MPI configure"; return; }
    diffs=$(config_h_differences "$a")
    if [ -z "$diffs" ]; then
        ok "opal_config.h defines the same as the installed one"
    else
        echo "$diffs"
        bad "opal_config.h differs from the installed one"
    fi
    build_repo_copy with-src "--with-ompi-src='$a'" ||
        { bad "component build --with-ompi-src"; return; }
    deps=$(ls "$work"/with-src/ompi/.deps/*.Plo)
    if grep -q "$installed_inc" $deps; then
        bad "a component object includes installed headers: $(grep -l "$installed_inc" $deps)"
    elif ! grep -q "$a/ompi/mca/coll/coll.h" $deps; then
        bad "the dependency files do not name $a/ompi/mca/coll/coll.h"
    else
        ok "every Open MPI header the component includes is from $a, none from $installed_inc"
    fi
    bin=$work/with-src/test/mpi
    mpi_run "$work/with-src-inst" 2 "$bin/t_coll" --quick --expect-offload
    mpi_run "$work/with-src-inst" 4 "$bin/t_coll" --quick --expect-offload
    mpi_run "$work/with-src-inst" 4 $nb_policy "$bin/t_nb" --expect-offload
}

check_tree() {
    b=$work/ompi-tree
    rm -rf "$b"
    cp -a "$work/pristine" "$b"
    sh "$top/contrib/ompi-tree.sh" "$b" || { bad "ompi-tree.sh"; return; }
    run ompi-tree-autogen sh -c "cd '$b' && ./autogen.pl --force" || { bad "autogen.pl"; return; }
    grep -q 'ompi / coll / offload' "$work/ompi-tree-autogen.log" ||
        say "note: autogen.pl did not report the coll/offload component"
    run ompi-tree-configure debian_configure "$b" || { bad "Open MPI configure"; return; }
    # FULL=1: all of Open MPI, as upstream would (an hour or more on two busy cores).
    if [ "${FULL:-0}" = 1 ]; then
        run ompi-tree-make sh -c "cd '$b' && make -j2" || { bad "make (all of Open MPI)"; return; }
    else
        run ompi-tree-make sh -c "cd '$b/ompi/mca/coll/offload' && make -j2 V=1" ||
            { bad "make in ompi/mca/coll/offload"; return; }
    fi
    if grep -q ': warning:' "$work/ompi-tree-make.log"; then
        say "compiler warnings in $work/ompi-tree-make.log:"
        grep ': warning:' "$work/ompi-tree-make.log" | grep 'coll/offload\|^ompi/\|^src/' | head
    fi
    so=$b/ompi/mca/coll/offload/.libs/mca_coll_offload.so
    [ -f "$so" ] && ok "Open MPI's build made $so" || { bad "no $so"; return; }
    # The test programs are MPI applications: any build of them does.
    [ -x "$work/with-src/test/mpi/t_coll" ] ||
        build_repo_copy with-src "" || { bad "test programs"; return; }
    mpi_run "$b/ompi/mca/coll/offload/.libs" 4 "$work/with-src/test/mpi/t_coll" --quick \
        --expect-offload
    mpi_run "$b/ompi/mca/coll/offload/.libs" 4 $nb_policy "$work/with-src/test/mpi/t_nb" \
        --expect-offload
}

get_source || { bad "apt-get source openmpi"; finish; }
case $what in
    src) check_src ;;
    tree) check_tree ;;
    all) check_src; check_tree ;;
    *) echo "usage: $0 [src|tree|all]"; exit 2 ;;
esac
finish
