#!/bin/sh
# Set up (contrib/setup.sh), then run the side-by-side latency benchmark:
# offload vs tuned vs sm, np 2 and 4 (np 4 oversubscribed on a 2-core machine, and
# marked so), all four collectives, 4 B .. 1 MiB, ending with the worst cell; then the
# nonblocking overlap benchmark (offload vs libnbc; results/overlap.md).
# Extra arguments go to bench/compare.py (e.g. --np 2,4 --repeat 5).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
/usr/bin/python3 bench/compare.py --bin bench/coll_lat --out results --np 2,4 "$@"
exec /usr/bin/python3 bench/compare.py --overlap --bin bench/coll_lat --out results "$@"
