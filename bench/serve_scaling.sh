#!/usr/bin/env bash
# Serving throughput under concurrent streams: anerun serve (continuous batching) against
# llama-server on the same model, alternating, on the same machine. Nothing here builds
# llama.cpp.
#
#   bench/serve_scaling.sh BUNDLE.aneb MODEL.gguf /path/to/llama-server [ROUNDS] [THREADS] [STREAMS] [TOKENS]
#
# MODEL.gguf is written from BUNDLE's checkpoint by `go run ./bench/mkgguf CKPT MODEL.gguf`.
# STREAMS is a comma-separated list of concurrent client counts (default 1,4,8,16); each count
# sends 2x that many requests of TOKENS generated tokens (default 64, ignore_eos, greedy, a
# prompt of about 40 tokens each). anerun serves with --parallel = the largest count and
# llama-server with --parallel 8 (-np), both with THREADS threads (default 2) and a context big
# enough for every slot. ANERUN and LOADGEN name prebuilt binaries (for a machine without Go;
# default: built here). Per count and server it prints each round's total tokens/s and time to
# first token p50/p99 (bench/loadgen), then the medians over the rounds.
set -euo pipefail
bundle=$1 gguf=$2 server=$3 rounds=${4:-3} threads=${5:-2} streams=${6:-1,4,8,16} tokens=${7:-64}
here=$(cd "$(dirname "$0")/.." && pwd)
anerun=${ANERUN:-$here/bin/anerun}
[ -x "$anerun" ] || (cd "$here" && go build -o bin/ ./cmd/anerun)
loadgen=${LOADGEN:-}
if [ -z "$loadgen" ]; then
  loadgen=$(mktemp -d)/loadgen
  (cd "$here" && go build -o "$loadgen" ./bench/loadgen)
fi
export LD_LIBRARY_PATH="$(dirname "$server")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
IFS=, read -r -a counts <<<"$streams"
maxc=0
for c in "${counts[@]}"; do [ "$c" -gt "$maxc" ] && maxc=$c; done
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT
port=18400

# wait_up URL: until GET URL/models answers (at most 120 s).
wait_up() {
  for _ in $(seq 240); do
    curl -sf "$1/models" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "server at $1 did not come up" >&2
  return 1
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; threads $threads; streams $streams; tokens $tokens; rounds $rounds"
for r in $(seq "$rounds"); do
  for srv in anerun llama; do
    port=$((port + 1))
    url="http://127.0.0.1:$port/v1"
    if [ "$srv" = anerun ]; then
      "$anerun" serve "$bundle" --port "$port" --parallel "$maxc" --threads "$threads" --backend cpu \
        --ctx 512 --log-format json 2>"$out/anerun.log" &
    else
      "$server" -m "$gguf" --port "$port" -np 8 -t "$threads" -tb "$threads" -c $((512 * 8)) \
        --no-webui >"$out/llama.log" 2>&1 &
    fi
    pids+=($!)
    pid=$!
    wait_up "$url"
    "$loadgen" -url "$url" -clients 1 -requests 1 -max-tokens 4 >/dev/null # warm up
    for c in "${counts[@]}"; do
      # loadgen exits 1 when a request failed; its JSON line (with "failed") still says how many.
      j=$("$loadgen" -url "$url" -clients "$c" -requests $((2 * c)) -max-tokens "$tokens" -pid "$pid" -json) || true
      tps=$(sed -E 's/.*"tokens_per_s":([0-9.]+).*/\1/' <<<"$j")
      p50=$(sed -E 's/.*"ttft_ms_p50":([0-9.]+).*/\1/' <<<"$j")
      p99=$(sed -E 's/.*"ttft_ms_p99":([0-9.]+).*/\1/' <<<"$j")
      echo "$tps" >>"$out/$srv-c$c-tps"
      echo "$p50" >>"$out/$srv-c$c-p50"
      echo "$p99" >>"$out/$srv-c$c-p99"
      echo "round $r $srv streams $c: $tps tokens/s, ttft p50 $p50 ms p99 $p99 ms (load $(cut -d' ' -f1 /proc/loadavg)) $j"
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf "%-8s %-8s %12s %14s %14s\n" server streams "tokens/s" "ttft p50 ms" "ttft p99 ms"
for c in "${counts[@]}"; do
  for srv in anerun llama; do
    printf "%-8s %-8s %12s %14s %14s\n" "$srv" "$c" "$(median "$out/$srv-c$c-tps")" "$(median "$out/$srv-c$c-p50")" "$(median "$out/$srv-c$c-p99")"
  done
done
