#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI 5 launches processes through PRRTE, whose PMIx server hands every MPI
# process the entries of PMIx's own parameter file that look like Open MPI's
# (PMIx's pmdl/ompi plugin: anything beginning with an Open MPI framework name,
# "mca" among them) as OMPI_MCA_ variables. Debian 13's pmix-mca-params.conf sets
# mca_base_component_path to PMIx's plugin directory, so every process launched by
# mpirun gets OMPI_MCA_mca_base_component_path=<PMIx's plugin directory> and looks
# for Open MPI components there only: no installed component is ever found.
#
#   pmix-params.sh check DIR      say whether that is the case for components in DIR
#   pmix-params.sh install DIR    ... and if so, take that line out of mpirun's way
#   pmix-params.sh uninstall DIR  undo what install did
#
# The line is only taken out when its value is PMIx's default plugin directory
# (where PMIx looks anyway), so PMIx itself loads what it loaded before. When a
# package owns the file (Debian 13: libpmix2t64) and dpkg-divert is there, install
# diverts the package's file to FILE.distrib (dpkg-divert --local --rename) and puts
# a copy of it in its place with the line commented out: a reinstall, an upgrade or
# a purge and reinstall of the package writes the package's version to FILE.distrib
# and leaves the copy alone. uninstall removes the copy and the diversion, which
# puts the package's file back as the package has it (dpkg --verify clean).
# Elsewhere (no dpkg, a file no package owns, a file someone else diverted) the
# line is commented out in place, and uninstall puts it back. A file an earlier
# version of this script edited in place is restored before it is diverted.
# Set OFL_PMIX_PARAMS to the file's path to name it; by default the file is found
# next to the libpmix that libmpi loads. Exit status 0 unless install could not
# fix a file that needs it. install and uninstall say in one line per file what
# they changed.
set -u
action=${1:-check}
compdir=${2:-}
marker="# coll/offload: commented out by its make install (see its README):"

ompi_info_bin=${OMPI_INFO:-$(command -v ompi_info 2>/dev/null)}
[ -n "$ompi_info_bin" ] || exit 0
major=$("$ompi_info_bin" --version 2>/dev/null | sed -n 's/^Open MPI v\{0,1\}\([0-9][0-9]*\)\..*/\1/p' | head -1)
[ -n "$major" ] && [ "$major" -ge 5 ] || exit 0

# PMIx's parameter files: beside the lib directory of the libpmix libmpi uses (share/ on
# Debian, <prefix>/etc upstream).
files=${OFL_PMIX_PARAMS:-}
if [ -z "$files" ]; then
    libdir=$("$ompi_info_bin" --path libdir 2>/dev/null | sed -n 's/.*Libdir: *//p')
    libmpi=$(ls "$libdir"/libmpi.so* 2>/dev/null | head -1)
    libpmix=""
    [ -n "$libmpi" ] && libpmix=$(ldd "$libmpi" 2>/dev/null | sed -n 's/.*libpmix[^ ]* => \([^ ]*\).*/\1/p' | head -1)
    if [ -n "$libpmix" ]; then
        pdir=$(dirname "$(readlink -f "$libpmix")")
        for f in "$pdir"/../share/pmix-mca-params.conf "$pdir"/../etc/pmix-mca-params.conf \
                 /etc/pmix-mca-params.conf; do
            [ -f "$f" ] && files="$files $f"
        done
    fi
fi

# The awk programs (variables marker, line), for rewrite or awk itself: comment out
# the first copy of line after a marker line; turn a marker line and the commented
# copy after it back into the original line.
# shellcheck disable=SC2016  # awk's $0, not the shell's
comment_out='$0 == line && !done { print marker; print "#" $0; done = 1; next } { print }'
# shellcheck disable=SC2016
restore='skip { sub(/^#/, ""); print; skip = 0; next } $0 == marker { skip = 1; next } { print }'

# rewrite FILE AWK-PROGRAM: FILE through the program, in place (same inode, owner
# and mode).
rewrite() {
    tmp=$(mktemp) || return 1
    awk -v marker="$marker" -v line="$line" "$2" "$1" > "$tmp" && cat "$tmp" > "$1"
    rc=$?
    rm -f "$tmp"
    return $rc
}

# owner FILE: the package dpkg says FILE belongs to (empty: none, or no dpkg)
owner() {
    command -v dpkg-divert >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1 || return 0
    dpkg-query -S "$1" 2>/dev/null | grep -v '^[^:]*diversion [^:]*: /' | sed -n 's|^\(.*\): /.*|\1|p' \
        | head -1 | sed 's/:[^:,]*$//'
}

# diversion FILE: "ours" when FILE is locally diverted to FILE.distrib, "none" when
# FILE is not diverted (or there is no dpkg-divert), else "other"
diversion() {
    command -v dpkg-divert >/dev/null 2>&1 || { echo none; return; }
    _by=$(dpkg-divert --listpackage "$1" 2>/dev/null)
    if [ -z "$_by" ]; then
        echo none
    elif [ "$_by" = LOCAL ] && [ "$(dpkg-divert --truename "$1" 2>/dev/null)" = "$1.distrib" ]; then
        echo ours
    else
        echo other
    fi
}

# undivert FILE PACKAGE: remove our copy and the diversion, which renames
# FILE.distrib (the package's file) back to FILE
undivert() {
    rm -f "$1" && dpkg-divert --local --rename --divert "$1.distrib" --remove "$1" >/dev/null \
        && echo "coll/offload: removed our copy of $1 and its diversion; ${2:-its package}'s own file is back in place"
}

status=0
line=""
for f in $files; do
    f=$(readlink -f "$f")
    div=$(diversion "$f")
    pkg=$(owner "$f")
    if [ "$action" = uninstall ]; then
        if [ "$div" = ours ] && { [ ! -e "$f" ] || grep -qF "$marker" "$f"; }; then
            undivert "$f" "$pkg" || status=1
        elif [ -f "$f" ] && grep -qF "$marker" "$f"; then
            rewrite "$f" "$restore" \
                && echo "coll/offload: restored mca_base_component_path in $f"
        fi
        continue
    fi
    # The file as its package has it: FILE.distrib when diverted by an earlier
    # install, else FILE (with a line an older install commented out restored).
    orig=$f
    if [ "$action" = install ] && [ "$div" = ours ]; then
        # (no FILE.distrib: the package is gone; the copy waits for its return)
        [ -f "$f.distrib" ] || continue
        orig=$f.distrib
    fi
    [ -f "$orig" ] || continue
    restored=""
    if [ "$action" = install ] && grep -qF "$marker" "$orig"; then
        restored=$(mktemp) || { status=1; continue; }
        awk -v marker="$marker" "$restore" "$orig" > "$restored"
        orig=$restored
    fi
    line=$(grep -E '^[[:space:]]*mca_base_component_path[[:space:]]*=' "$orig" | tail -1)
    value=$(echo "$line" | sed 's/^[^=]*=[[:space:]]*//; s/[[:space:]]*$//')
    if [ -z "$line" ] || case ":$value:" in *":$compdir:"*) true ;; *) false ;; esac; then
        # nothing to take out (any more): undo a diversion of ours
        [ "$div" = ours ] && [ "$action" = install ] && { undivert "$f" "$pkg" || status=1; }
        [ -n "$restored" ] && rm -f "$restored"
        continue
    fi
    default=$(readlink -f "$(dirname "$f")/../lib/pmix" 2>/dev/null)
    fixable=0
    [ -n "$default" ] && [ "$(readlink -f "$value" 2>/dev/null)" = "$default" ] && fixable=1
    if [ "$action" = check ]; then
        echo "coll/offload: $f sets mca_base_component_path = $value; PMIx passes it to every"
        echo "  process mpirun starts, so Open MPI would never look in $compdir."
        if [ "$fixable" -eq 1 ] && [ -n "$pkg" ] && [ "$div" = none ]; then
            echo "  make install diverts that file (package $pkg) to"
            echo "  $f.distrib and puts a copy with that line commented out in its"
            echo "  place (it names PMIx's default plugin directory, so PMIx is unaffected);"
            echo "  make uninstall undoes it."
        elif [ "$fixable" -eq 1 ]; then
            echo "  make install comments that line out (it names PMIx's default plugin directory,"
            echo "  so PMIx is unaffected); make uninstall puts it back."
        else
            echo "  make install cannot safely change it: see docs/building.md (Open MPI 5)."
        fi
        continue
    fi
    if [ "$fixable" -eq 0 ]; then
        [ -n "$restored" ] && rm -f "$restored"
        echo "coll/offload: WARNING: $f sets mca_base_component_path = $value, which PMIx hands"
        echo "  to every process mpirun starts: Open MPI will not find coll/offload in $compdir."
        echo "  Run with OMPI_MCA_mca_base_component_path=$compdir (keep Open MPI's own"
        echo "  directory in it if it has components) and PMIX_MCA_mca_base_component_path=$value"
        status=1
        continue
    fi
    if [ ! -w "$(dirname "$f")" ] || { [ -e "$f" ] && [ ! -w "$f" ]; }; then
        [ -n "$restored" ] && rm -f "$restored"
        echo "coll/offload: cannot write $f (run make install as root); until its"
        echo "  mca_base_component_path line is commented out, mpirun does not find coll/offload"
        status=1
        continue
    fi
    if [ -z "$pkg" ] || [ "$div" = other ]; then
        # in place: no package to divert from (or someone else's diversion)
        why="no package owns it"
        [ "$div" = other ] && why="diverted by $(dpkg-divert --listpackage "$f")"
        if [ -n "$restored" ]; then
            rm -f "$restored"
            echo "coll/offload: 'mca_base_component_path = $value' stays commented out in $f" \
                "($why: edited in place); make uninstall puts it back"
            continue
        fi
        rewrite "$f" "$comment_out" || { status=1; continue; }
        echo "coll/offload: commented out 'mca_base_component_path = $value' in $f ($why:" \
            "edited in place); make uninstall puts it back"
        continue
    fi
    # Our copy, made beside the file (same mode), then moved into place once the
    # package's file is diverted.
    copy=$(mktemp "$(dirname "$f")/.pmix-mca-params.XXXXXX") || { status=1; continue; }
    if [ -f "$f" ]; then cp -p "$f" "$copy"; else cp -p "$orig" "$copy"; fi
    awk -v marker="$marker" -v line="$line" "$comment_out" "$orig" > "$copy" \
        || { rm -f "$copy" ${restored:+"$restored"}; status=1; continue; }
    if [ "$div" = ours ]; then
        [ -n "$restored" ] && rm -f "$restored"
        if cmp -s "$copy" "$f"; then
            rm -f "$copy"
            echo "coll/offload: $f stays diverted to $f.distrib (package $pkg) with our copy" \
                "without mca_base_component_path in place; make uninstall undoes it"
        else
            mv -f "$copy" "$f" || { status=1; continue; }
            echo "coll/offload: $f stays diverted to $f.distrib (package $pkg); our copy" \
                "without mca_base_component_path rewritten from it; make uninstall undoes it"
        fi
        continue
    fi
    what=""
    if [ -n "$restored" ]; then
        # an older install's in-place edit: the package's content first
        rm -f "$restored"
        rewrite "$f" "$restore" || { rm -f "$copy"; status=1; continue; }
        what=", the line an earlier make install had commented out there restored"
    fi
    if ! dpkg-divert --local --rename --divert "$f.distrib" --add "$f" >/dev/null; then
        rm -f "$copy"
        echo "coll/offload: dpkg-divert could not divert $f; mpirun does not find coll/offload"
        status=1
        continue
    fi
    mv -f "$copy" "$f" || { status=1; continue; }
    echo "coll/offload: diverted $f (package $pkg) to $f.distrib$what; our copy without" \
        "mca_base_component_path in place; make uninstall undoes it"
done
exit $status
