#!/usr/bin/env bash
# Runs anerun bench and an already-built llama-bench back to back on the same model, alternating,
# so both see the same machine state. Nothing here builds llama.cpp.
#
#   bench/compare_llama.sh BUNDLE.aneb MODEL-F16.gguf /path/to/llama-bench [ROUNDS] [THREADS]
#
# Prints each run's prefill (128 tokens) and decode (64 tokens) tokens/s, then the best of each.
set -euo pipefail
bundle=$1 gguf=$2 llama=$3 rounds=${4:-3} threads=${5:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
anerun=${ANERUN:-$here/bin/anerun}
[ -x "$anerun" ] || (cd "$here" && go build -o bin/ ./cmd/anerun)
export LD_LIBRARY_PATH="$(dirname "$llama")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
best() { sort -g | tail -1; }
ap=() ad=() lp=() ld=()
for r in $(seq "$rounds"); do
  j=$("$anerun" bench "$bundle" --prompt-tokens 128 --gen-tokens 64 --threads "$threads" --repetitions 1 --json)
  p=$(echo "$j" | sed -E 's/.*"prefill_tokens_per_s":([0-9.]+).*/\1/')
  d=$(echo "$j" | sed -E 's/.*"decode_tokens_per_s":([0-9.]+).*/\1/')
  ap+=("$p") ad+=("$d")
  out=$("$llama" -m "$gguf" -p 128 -n 64 -t "$threads" -r 1 -o csv 2>/dev/null)
  # CSV columns by header name: n_prompt, n_gen, avg_ts.
  col() { echo "$out" | awk -F, -v want="$1" -v p="$2" -v g="$3" '
    NR==1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    { gsub(/"/, ""); if ($h["n_prompt"] == p && $h["n_gen"] == g) print $h[want] }' | tail -1; }
  lpp=$(col avg_ts 128 0)
  ltg=$(col avg_ts 0 64)
  lp+=("$lpp") ld+=("$ltg")
  echo "round $r: anerun prefill $p decode $d | llama.cpp prefill $lpp decode $ltg"
done
echo "best:    anerun prefill $(printf '%s\n' "${ap[@]}" | best) decode $(printf '%s\n' "${ad[@]}" | best)" \
     "| llama.cpp prefill $(printf '%s\n' "${lp[@]}" | best) decode $(printf '%s\n' "${ld[@]}" | best)"
