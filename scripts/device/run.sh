#!/usr/bin/env bash
# Run on the GPU machine from the repo root with .device/ carried (see scripts/device/README.md).
set -u
OUT=${OUT:-/tmp/gpux-device-out}; export OUT; mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version,compute_cap --format=csv,noheader,nounits \
  > "$OUT/nvidia-smi-query.csv" 2> "$OUT/nvidia-smi-query.err"; echo $? > "$OUT/nvidia-smi-query.rc"
nvidia-smi -L > "$OUT/nvidia-smi-L.txt" 2>&1
PY=$(command -v python3 || command -v python); echo "$PY" > "$OUT/python.txt"
"$PY" -c "import torch; print(torch.__version__, torch.cuda.is_available())" >> "$OUT/python.txt" 2>&1
NODE=$(command -v node || true)
if [ -z "$NODE" ]; then xz -dc .device/node.xz > /tmp/gpux-node && chmod +x /tmp/gpux-node && NODE=/tmp/gpux-node; fi
"$NODE" --version > "$OUT/node.txt" 2>&1
GPUX_PYTHON="$PY" timeout 300 "$NODE" .device/gpu-check.mjs > "$OUT/gpu-check.log" 2>&1; echo "rc=$?" >> "$OUT/gpu-check.log"
cat "$OUT/nvidia-smi-query.csv" "$OUT/python.txt"; tail -30 "$OUT/gpu-check.log"
