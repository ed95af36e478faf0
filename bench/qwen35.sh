#!/usr/bin/env bash
# Benchmarks of the Qwen3.5-2B shape (configs/qwen3.5-2b.json, SYNTH-1 weights) on the CPU
# backend, 2 threads: prefill and decode of a 128-token prompt, decode after 16 and after 4096
# tokens of context, peak RSS; and Qwen2.5-0.5B in the same run, for scale.
#
#   bench/qwen35.sh [WORKDIR] [REPS]
#
# Needs bin/anepack and bin/anerun (go build -o bin/ ./cmd/...). Writes the checkpoints and
# bundles under WORKDIR (default out/bench-qwen35), about 8 GB at the peak.
set -euo pipefail
dir=${1:-out/bench-qwen35} reps=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/bin}
mkdir -p "$dir"
for m in qwen3.5-2b qwen2.5-0.5b; do
  if [ ! -f "$dir/$m.aneb" ]; then
    "$bin/anepack" synth --config "$here/configs/$m.json" --seed 1 -o "$dir/$m-ckpt" >/dev/null
    "$bin/anepack" "$dir/$m-ckpt" -o "$dir/$m.aneb" --force -q
    rm -rf "$dir/$m-ckpt"
  fi
done
run() { echo "$*"; "$bin/anerun" bench "$@" --threads 2 --json; }
for r in $(seq "$reps"); do
  run "$dir/qwen3.5-2b.aneb" --prompt-tokens 128 --gen-tokens 64 --repetitions 1
  run "$dir/qwen2.5-0.5b.aneb" --prompt-tokens 128 --gen-tokens 64 --repetitions 1
  run "$dir/qwen3.5-2b.aneb" --prompt-tokens 16 --gen-tokens 64 --repetitions 1
done
run "$dir/qwen3.5-2b.aneb" --prompt-tokens 4096 --gen-tokens 64 --repetitions 1
