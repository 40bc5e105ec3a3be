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
#   pmix-params.sh install DIR    ... and if so, comment the line out
#   pmix-params.sh uninstall DIR  put a line commented out by install back
#
# The line is only commented out when its value is PMIx's default plugin
# directory (where PMIx looks anyway), so PMIx itself loads what it loaded before.
# Set OFL_PMIX_PARAMS to the file's path to name it; by default the file is found
# next to the libpmix that libmpi loads. Exit status 0 unless install could not
# fix a file that needs it.
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

# rewrite FILE AWK-PROGRAM: FILE through the program (variables marker, line), in place
# (same inode, owner and mode).
rewrite() {
    tmp=$(mktemp) || return 1
    awk -v marker="$marker" -v line="$line" "$2" "$1" > "$tmp" && cat "$tmp" > "$1"
    rc=$?
    rm -f "$tmp"
    return $rc
}

status=0
line=""
for f in $files; do
    f=$(readlink -f "$f")
    if [ "$action" = uninstall ]; then
        if grep -qF "$marker" "$f"; then
            # the marker line and the commented copy after it become the original line
            rewrite "$f" 'skip { sub(/^#/, ""); print; skip = 0; next }
                          $0 == marker { skip = 1; next } { print }' \
                && echo "coll/offload: restored mca_base_component_path in $f"
        fi
        continue
    fi
    line=$(grep -E '^[[:space:]]*mca_base_component_path[[:space:]]*=' "$f" | tail -1)
    [ -n "$line" ] || continue
    value=$(echo "$line" | sed 's/^[^=]*=[[:space:]]*//; s/[[:space:]]*$//')
    case ":$value:" in
        *":$compdir:"*) continue ;;
    esac
    default=$(readlink -f "$(dirname "$f")/../lib/pmix" 2>/dev/null)
    if [ "$action" = check ]; then
        echo "coll/offload: $f sets mca_base_component_path = $value; PMIx passes it to every"
        echo "  process mpirun starts, so Open MPI would never look in $compdir."
        if [ -n "$default" ] && [ "$(readlink -f "$value" 2>/dev/null)" = "$default" ]; then
            echo "  make install comments that line out (it names PMIx's default plugin directory,"
            echo "  so PMIx is unaffected); make uninstall puts it back."
        else
            echo "  make install cannot safely change it: see docs/building.md (Open MPI 5)."
        fi
        continue
    fi
    if [ -n "$default" ] && [ "$(readlink -f "$value" 2>/dev/null)" = "$default" ]; then
        if [ ! -w "$f" ]; then
            echo "coll/offload: cannot write $f (run make install as root); until its"
            echo "  mca_base_component_path line is commented out, mpirun does not find coll/offload"
            status=1
            continue
        fi
        rewrite "$f" '$0 == line && !done { print marker; print "#" $0; done = 1; next }
                      { print }' || { status=1; continue; }
        echo "coll/offload: commented out 'mca_base_component_path = $value' in $f: PMIx handed"
        echo "  it to every process mpirun starts, so Open MPI looked for components only there"
        echo "  (PMIx's default plugin directory is the same, so PMIx is unaffected;"
        echo "  make uninstall puts the line back)"
    else
        echo "coll/offload: WARNING: $f sets mca_base_component_path = $value, which PMIx hands"
        echo "  to every process mpirun starts: Open MPI will not find coll/offload in $compdir."
        echo "  Run with OMPI_MCA_mca_base_component_path=$compdir (keep Open MPI's own"
        echo "  directory in it if it has components) and PMIX_MCA_mca_base_component_path=$value"
        status=1
    fi
done
exit $status
