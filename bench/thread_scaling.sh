#!/usr/bin/env bash
# Thread scaling of anerun against llama.cpp on one machine, with the machine's read bandwidth
# as the yardstick for decode. Built to run where there is no Go toolchain: it needs only
# prebuilt binaries (nothing here builds llama.cpp).
#
#   bench/thread_scaling.sh BUNDLE.aneb MODEL-F16.gguf /path/to/llama-bench THREADS [ROUNDS] [PROMPT] [GEN]
#
# MODEL-F16.gguf is written from BUNDLE's checkpoint by `go run ./bench/mkgguf CKPT MODEL-F16.gguf`.
# THREADS is a comma-separated list (e.g. 1,2,4,8,16); ROUNDS alternating rounds per thread
# count (default 5); PROMPT and GEN as for bench/compare_llama.sh (default 128 and 64).
# Binaries (build them on a machine with Go, of the same architecture, and carry them over):
#   ANERUN        anerun          (default bin/anerun)       go build -o bin/ ./cmd/anerun
#   KERNELS_TEST  kernels' tests  (default bin/kernels.test) go test -c -o bin/kernels.test ./runtime/kernels
# For every thread count it runs bench/compare_llama.sh (alternating anerun bench and
# llama-bench; medians, ranges, spreads), then BenchmarkReadBandwidth (a read-only pass over
# 1 GiB in huge pages, split over that many threads; median of 5), and prints per thread count
# decode tokens/s, the bytes each decode step reads (the bundle's size, nearly all weights)
# times that rate, and that as a share of the read bandwidth, for both engines.
set -euo pipefail
bundle=$1 gguf=$2 llama=$3 threads=$4 rounds=${5:-5} prompt=${6:-128} gen=${7:-64}
here=$(cd "$(dirname "$0")/.." && pwd)
export ANERUN=${ANERUN:-$here/bin/anerun}
ktest=${KERNELS_TEST:-$here/bin/kernels.test}
for f in "$ANERUN" "$ktest" "$llama"; do
  [ -x "$f" ] || { echo "thread_scaling.sh: $f is not an executable (see the header for how to build it)" >&2; exit 2; }
done
bytes=$(stat -c %s "$bundle")
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bundle $bundle ($bytes bytes read per decode step, about); gguf $gguf"
"$ANERUN" doctor | sed -n '/^cpu:/,/^ane:/p' | sed '$d'
IFS=, read -r -a tlist <<<"$threads"
summary=()
for t in "${tlist[@]}"; do
  echo
  echo "=== $t threads"
  out=$("$here/bench/compare_llama.sh" "$bundle" "$gguf" "$llama" "$rounds" "$t" "$prompt" "$gen")
  echo "$out"
  ad=$(awk -v m="tg$gen" '$1 == m && $2 == "anerun" { print $3 }' <<<"$out")
  ld=$(awk -v m="tg$gen" '$1 == m && $2 == "llama" { print $3 }' <<<"$out")
  ap=$(awk -v m="pp$prompt" '$1 == m && $2 == "anerun" { print $3 }' <<<"$out")
  lp=$(awk -v m="pp$prompt" '$1 == m && $2 == "llama" { print $3 }' <<<"$out")
  # Read bandwidth on t threads: MB/s of 5 runs, median.
  bw=$(KERNELS_BENCH_THREADS=$t "$ktest" -test.run '^$' -test.bench "ReadBandwidth/threads=$t\$" -test.benchtime 10x -test.count 5 |
    awk '/MB\/s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") print $i }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] / 1000 }')
  echo "read bandwidth, $t threads: $bw GB/s (median of 5)"
  summary+=("$(awk -v t="$t" -v ad="$ad" -v ld="$ld" -v ap="$ap" -v lp="$lp" -v bw="$bw" -v b="$bytes" 'BEGIN {
    printf "%7d %9.2f %9.2f %9.2f %9.2f %9.1f %7.2f %7.2f %9.3f", t, ap, lp, ad, ld, bw, ad*b/1e9/bw, ld*b/1e9/bw, ad/ld }')")
done
echo
echo "summary (medians; share = decode tokens/s x $bytes bytes / read bandwidth)"
printf '%7s %9s %9s %9s %9s %9s %7s %7s %9s\n' threads "ane-pp$prompt" "lla-pp$prompt" "ane-tg$gen" "lla-tg$gen" "read-GB/s" ane-shr lla-shr tg-ratio
printf '%s\n' "${summary[@]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
