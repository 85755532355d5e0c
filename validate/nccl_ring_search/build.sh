#!/bin/bash
# Builds ring_search against NCCL's own graph code at a release (not stored here):
#   validate/nccl_ring_search/build.sh /path/to/nccl-checkout-at-v2.8.3-1 OUT_DIR
# then: python3 dgx_a100_topology.py 0,2,4,6 > c.xml && OUT_DIR/ring_search c.xml
set -euo pipefail
nccl=$1; out=$2; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sed -e 's/${nccl:Major}/2/g' -e 's/${nccl:Minor}/8/g' -e 's/${nccl:Patch}/3/g' -e 's/${nccl:Suffix}//g' \
    -e 's/${nccl:Version}/2803/g' "$nccl/src/nccl.h.in" > "$out/nccl.h"
g++ -O1 -std=c++11 -w -I"$out" -I"$nccl/src/include" -I"$nccl/src/graph" -I/usr/local/cuda/include \
    "$here/ring_search.cc" "$here/link_stubs.cc" "$nccl"/src/graph/{xml,topo,paths,search}.cc \
    "$nccl/src/misc/utils.cc" "$nccl/src/debug.cc" -lpthread -o "$out/ring_search"
