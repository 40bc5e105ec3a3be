#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
# A cluster of N hosts on this machine, made of Linux network namespaces, for
# running Open MPI jobs across "nodes" (root only).
#
#   contrib/cluster.sh up N         make hosts ofl-h0 .. ofl-h<N-1>
#   contrib/cluster.sh mpirun ARGS  run mpirun on ofl-h0 over every host
#                                   (a hostfile with `slots` per host, the rsh
#                                   agent below, tcp restricted to the cluster)
#   contrib/cluster.sh exec I CMD   run CMD on host I
#   contrib/cluster.sh loss PCT     drop PCT% of the packets every host sends (an
#                                   eBPF tc filter, contrib/loss.bpf.c; needs clang)
#   contrib/cluster.sh dropped      packets the loss filters dropped so far
#   contrib/cluster.sh down         remove everything (safe to repeat)
#
# `up` also writes $OFL_CLUSTER_DIR/mpirun, a launcher for tools that take the
# path of an mpirun (bench/compare.py --mpirun).
#
# Each host is a network namespace with one veth into a bridge that lives in a
# namespace of its own (ofl-br); addresses are 198.51.100.10+I/24, a range
# reserved for documentation, routed nowhere. Commands run on a host through
# `unshare --uts --mount`, with the host's name and a hosts file bind-mounted
# over /etc/hosts, so Open MPI sees separate nodes (its locality comes from the
# host name) while the file system, /dev/shm included, stays shared.
#
# Environment: OFL_CLUSTER_DIR (state, default /tmp/ofl-cluster),
# OFL_CLUSTER_SLOTS (slots per host in the hostfile, default 2).
set -eu

dir=${OFL_CLUSTER_DIR:-/tmp/ofl-cluster}
net=198.51.100
prefix=ofl-h

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

host_count() {
    [ -f "$dir/size" ] || die "no cluster is up (contrib/cluster.sh up N)"
    cat "$dir/size"
}

# Each argument single-quoted for sh.
quote() {
    out=
    for a in "$@"; do
        out="$out '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
    done
    printf '%s' "$out"
}

# Run the shell command line $2 on host $1.
on_host() {
    exec ip netns exec "$prefix$1" unshare --uts --mount sh -c \
        "hostname $prefix$1 && mount --bind '$dir/hosts' /etc/hosts && exec $2"
}

up() {
    n=$1
    case "$n" in
        ''|*[!0-9]*) die "up: N must be a number" ;;
    esac
    [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "up: N must be 1..32"
    [ "$(id -u)" = 0 ] || die "up: needs root (network namespaces)"
    command -v ip >/dev/null || die "up: the ip command (iproute2) is missing"
    down >/dev/null 2>&1 || true
    mkdir -p "$dir"
    echo "$n" > "$dir/size"
    ip netns add ofl-br
    ip -n ofl-br link set lo up
    ip -n ofl-br link add br0 type bridge
    ip -n ofl-br link set br0 up
    {
        echo "127.0.0.1 localhost"
    } > "$dir/hosts"
    : > "$dir/hostfile"
    i=0
    while [ "$i" -lt "$n" ]; do
        ns=$prefix$i
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip link add "ofl-v$i" type veth peer name "ofl-p$i"
        ip link set "ofl-v$i" netns "$ns"
        ip link set "ofl-p$i" netns ofl-br
        ip -n ofl-br link set "ofl-p$i" master br0
        ip -n ofl-br link set "ofl-p$i" up
        ip -n "$ns" link set "ofl-v$i" name eth0
        ip -n "$ns" addr add "$net.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        echo "$net.$((10 + i)) $ns" >> "$dir/hosts"
        echo "$ns slots=${OFL_CLUSTER_SLOTS:-2}" >> "$dir/hostfile"
        i=$((i + 1))
    done
    # mpirun's remote launcher: drop ssh-style options, run the command on the
    # named host.
    cat > "$dir/rsh" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do
    case "\$1" in
        -*) shift ;;
        *) break ;;
    esac
done
h=\${1#$prefix}
shift
exec "$dir/cluster.sh" exec "\$h" "\$*"
EOF
    chmod +x "$dir/rsh"
    # A launcher for tools that take an mpirun path (bench/compare.py --mpirun).
    printf '#!/bin/sh\nexec "%s/cluster.sh" mpirun "$@"\n' "$dir" > "$dir/mpirun"
    chmod +x "$dir/mpirun"
    cp "$0" "$dir/cluster.sh"
    cp "$(cd "$(dirname "$0")" && pwd)/loss.bpf.c" "$dir/" 2>/dev/null || true
    chmod +x "$dir/cluster.sh"
    # Everyone can reach everyone before a job depends on it (when ping exists).
    if command -v ping >/dev/null 2>&1; then
        i=0
        while [ "$i" -lt "$n" ]; do
            ip netns exec "${prefix}0" ping -c 1 -W 2 "$net.$((10 + i))" >/dev/null \
                || die "up: host $i does not answer on $net.$((10 + i))"
            i=$((i + 1))
        done
    fi
    echo "cluster.sh: $n hosts up ($net.10 .. $net.$((9 + n))), state in $dir"
}

down() {
    i=0
    while [ "$i" -lt 32 ]; do
        if ip netns pids "$prefix$i" >/dev/null 2>&1; then
            for pid in $(ip netns pids "$prefix$i" 2>/dev/null); do
                kill -9 "$pid" 2>/dev/null || true
            done
            ip netns del "$prefix$i" 2>/dev/null || true
        fi
        i=$((i + 1))
    done
    ip netns del ofl-br 2>/dev/null || true
    rm -rf "$dir"
    echo "cluster.sh: down"
}

loss() {
    pct=$1
    case "$pct" in
        ''|*[!0-9]*) die "loss: PCT must be a whole number" ;;
    esac
    n=$(host_count)
    command -v clang >/dev/null || die "loss: clang is needed to build the filter"
    src=$(cd "$(dirname "$0")" && pwd)/loss.bpf.c
    [ -f "$src" ] || src="$dir/loss.bpf.c"
    clang -O2 -target bpf -I/usr/include/"$(uname -m)"-linux-gnu -DLOSS_PCT="$pct" \
        -c "$src" -o "$dir/loss.o" || die "loss: cannot build the filter"
    i=0
    while [ "$i" -lt "$n" ]; do
        ip netns exec "$prefix$i" tc qdisc replace dev eth0 clsact
        ip netns exec "$prefix$i" tc filter replace dev eth0 egress pref 1 handle 1 \
            bpf da obj "$dir/loss.o" sec tc
        i=$((i + 1))
    done
    echo "cluster.sh: every host drops about $pct% of what it sends"
}

dropped() {
    n=$(host_count)
    total=0
    i=0
    while [ "$i" -lt "$n" ]; do
        d=$(ip netns exec "$prefix$i" tc -s qdisc show dev eth0 2>/dev/null \
            | awk '/clsact/ { c = 1; next } c && /dropped/ { sub(/.*dropped /, ""); \
                   sub(/,.*/, ""); print; exit }')
        total=$((total + ${d:-0}))
        i=$((i + 1))
    done
    echo "$total"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    up)
        up "${1:-}"
        ;;
    down)
        down
        ;;
    loss)
        loss "${1:-}"
        ;;
    dropped)
        dropped
        ;;
    exec)
        [ $# -ge 2 ] || die "exec: usage: exec I CMD"
        h=$1
        shift
        if [ $# -eq 1 ]; then
            on_host "$h" "$1"          # one shell command line (the rsh agent's case)
        else
            on_host "$h" "$(quote "$@")"
        fi
        ;;
    mpirun)
        n=$(host_count)
        # The hosts share this machine's cores: more ranks than cores, though
        # each host's slots say otherwise, so waits must yield.
        on_host 0 "$(quote mpirun --hostfile "$dir/hostfile" \
            --mca plm_rsh_agent "$dir/rsh" --mca mpi_yield_when_idle 1 \
            --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
            "$@")"
        ;;
    *)
        sed -n '4,22p' "$0" | sed 's/^# \{0,1\}//'
        [ -z "$cmd" ] || exit 2
        ;;
esac
