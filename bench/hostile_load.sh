#!/usr/bin/env bash
# Hostile requests under load: anerun serve with CLIENTS streaming clients that drop a quarter of
# their streams at a random token, first alone, then with one hostile constrained request a
# second beside them (bench/loadgen -hostile-every: schema DAGs, a forced tool with DAG
# parameters, an anyOf of 19,000 consts, strings beside a const, stop strings with
# json_object). Each run gets a fresh server. It prints both runs' loadgen lines and checks what
# must hold: no 5xx and no failed stream in either run, the ordinary streams' time to first
# token p99 with hostile requests within 2x of the run without, and the server's resident
# memory at most within MAX_RSS_MIB (default 4096).
#
#   bench/hostile_load.sh BUNDLE.aneb [SECONDS] [CLIENTS] [THREADS] [TOKENS]
#
# Defaults: 60 s per run, 64 clients (and --parallel 64), 0 threads (anerun's choice), 32
# tokens per stream. ANERUN and LOADGEN name prebuilt binaries (default: built here). Exits 1
# when a check fails.
set -euo pipefail
bundle=$1 seconds=${2:-60} clients=${3:-64} threads=${4:-0} tokens=${5:-32}
here=$(cd "$(dirname "$0")/.." && pwd)
anerun=${ANERUN:-}
loadgen=${LOADGEN:-}
build=$(mktemp -d)
if [ -z "$anerun" ]; then
  anerun=$build/anerun
  (cd "$here" && go build -o "$anerun" ./cmd/anerun)
fi
if [ -z "$loadgen" ]; then
  loadgen=$build/loadgen
  (cd "$here" && go build -o "$loadgen" ./bench/loadgen)
fi
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$build"; }
trap cleanup EXIT
port=18500

# run NAME ARGS...: a fresh server, a warm-up request, then loadgen with ARGS; prints its line.
run() {
  local name=$1
  shift
  port=$((port + 1))
  local url="http://127.0.0.1:$port/v1"
  "$anerun" serve "$bundle" --port "$port" --parallel "$clients" --queue $((4 * clients)) --threads "$threads" \
    --backend cpu --ctx 2048 --log-format json 2>"$build/$name.log" &
  pid=$!
  for _ in $(seq 240); do # until the port accepts (at most 120 s)
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.5
  done
  "$loadgen" -url "$url" -clients 1 -requests 1 -max-tokens 4 >/dev/null
  # loadgen exits 1 when something failed; its line says what.
  "$loadgen" -url "$url" -clients "$clients" -requests 100000000 -duration "${seconds}s" -max-tokens "$tokens" \
    -disconnect 0.25 -pid "$pid" -json "$@" || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
  if grep -q '"level":"ERROR"' "$build/$name.log"; then
    echo "$name: the server logged errors:" >&2
    grep '"level":"ERROR"' "$build/$name.log" | head -5 | cut -c1-400 >&2
  fi
}

field() { sed -nE "s/.*\"$1\":([0-9.]+).*/\1/p" <<<"$2"; }

echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $clients clients, ${seconds} s per run, $tokens tokens, threads $threads"
base=$(run baseline)
echo "without hostile requests: $base"
hostile=$(run hostile -hostile-every 1s)
echo "with hostile requests:    $hostile"

status=0
check() { # check WHAT CONDITION
  if awk "BEGIN { exit !($2) }"; then echo "ok    $1"; else echo "FAIL  $1"; status=1; fi
}
b99=$(field ttft_ms_p99 "$base") h99=$(field ttft_ms_p99 "$hostile")
check "no 5xx (baseline $(field status_5xx "$base"), hostile $(field status_5xx "$hostile"))" \
  "$(field status_5xx "$base") == 0 && $(field status_5xx "$hostile") == 0"
check "no failed stream (baseline $(field failed "$base"), hostile $(field failed "$hostile"))" \
  "$(field failed "$base") == 0 && $(field failed "$hostile") == 0"
check "hostile requests answered: $(field hostile_2xx "$hostile") 2xx, $(field hostile_4xx "$hostile") 4xx of $(field hostile_sent "$hostile")" \
  "$(field hostile_sent "$hostile") > 0 && $(field hostile_2xx "$hostile") + $(field hostile_4xx "$hostile") == $(field hostile_sent "$hostile")"
check "ttft p99 $h99 ms with hostile requests, $b99 ms without (at most 2x)" "$h99 <= 2 * $b99"
max_rss=${MAX_RSS_MIB:-4096}
check "rss at most $(field rss_max_mib "$base") / $(field rss_max_mib "$hostile") MiB (within $max_rss)" \
  "$(field rss_max_mib "$base") <= $max_rss && $(field rss_max_mib "$hostile") <= $max_rss"
exit $status
