#!/usr/bin/env bash
# Runs the whole GPU side of validate/ on this machine's GPU and leaves every output in one folder,
# with the log, so a session with a lent GPU machine can copy the folder back and commit it.
#   validate/run_gpu_harness.sh BUILD_DIR OUT_DIR GPU_SHORT_NAME PEAK_BF16_TFLOPS [quick]
# BUILD_DIR: a CUDA build (trainsim-validate, kernels_gpu_test, validate_gpu_test built).
# 'quick' runs the smoke-test variants (a few shapes): their files are never committed.
set -uo pipefail
build=$1 out=$2 gpu=$3 peak=$4 mode=${5:-full}
mkdir -p "$out"
log="$out/harness-$gpu.log"
exec > >(tee -a "$log") 2>&1
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
status=0
run() { "$@" || { echo "FAILED ($?): $*"; status=1; }; }

step "machine"
run nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
step "kernels against their CPU references"
for t in kernels_gpu_test validate_gpu_test; do
  if [ -x "$build/tests/$t" ]; then run "$build/tests/$t" --gtest_brief=1
  else echo "$t not built: skipped (trainsim-validate still checks each kernel before timing it)"; fi
done
# trainsim-validate needs cuBLASLt, the CUDA runtime and NCCL of the toolkit it was built with: find
# them for it alone (PyTorch, run below, brings its own and breaks on another cuDNN on the path).
libs=""
for l in libcublasLt.so.13 libcudart.so.13 libnccl.so.2; do
  f=$(ldconfig -p | awk -v l=$l '$1==l {print $NF; exit}')
  [ -z "$f" ] && f=$(find /usr/local /opt /usr/lib -name "$l" 2>/dev/null | head -1)
  [ -n "$f" ] && libs="$libs:$(dirname "$f")"
done
V() { LD_LIBRARY_PATH="${libs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$build/validate/gpu/trainsim-validate" "$@"; }
quick=()
[ "$mode" = quick ] && quick=(--quick) && gpu="$gpu-quick"
step "kernel calibration"
run V kernels "${quick[@]}" --out "$out/$gpu-measured.json"
step "layers: measured vs predicted"
for m in bert-large gpt-1.7b gpt-7.5b gpt-18b; do
  run V layer --model "$m" --calibration "$out/$gpu-measured.json"
done > >(tee "$out/$gpu-layer.txt")
step "fused attention (PyTorch SDPA)"
aq=()
[ "$mode" = quick ] && aq=(--quick)
PYTHONUNBUFFERED=1 run python3 "$(dirname "$0")/measure_attention.py" "${aq[@]}" --peak-tflops "$peak" \
  --out "$out/$gpu-attention-measured.json"
step "PyTorch's own memory-bound kernels and transformer layers"
[ "$mode" = quick ] || PYTHONUNBUFFERED=1 run python3 "$(dirname "$0")/measure_torch_ops.py" \
  --out "$out/$gpu-torch-ops-measured.json"
step "FP8 GEMMs (PyTorch _scaled_mm; skipped before Ada/Hopper)"
[ "$mode" = quick ] || PYTHONUNBUFFERED=1 run python3 "$(dirname "$0")/measure_fp8_gemm.py" \
  --shapes-from "$out/$gpu-measured.json" --out "$out/$gpu-fp8-measured.json" \
  --fast-accum-out "$out/$gpu-fp8-fast-accum-measured.json" --side-out "$out/$gpu-fp8-side.json"
step "NCCL (all visible GPUs)"
run V nccl --max-bytes 268435456 --out "$out/$gpu-nccl-measured.json"
step "done, status $status"
exit $status
