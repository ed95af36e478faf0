#!/usr/bin/env bash
# Runs anerun bench and an already-built llama-bench back to back on the same model, alternating,
# so both see the same machine state. Nothing here builds llama.cpp.
#
#   bench/compare_llama.sh BUNDLE.aneb MODEL-F16.gguf /path/to/llama-bench [ROUNDS] [THREADS] [PROMPTS] [GEN]
#
# MODEL-F16.gguf holds the checkpoint BUNDLE was packed from, written by
# `go run ./bench/mkgguf CKPT MODEL-F16.gguf` (llama-quantize makes Q8_0, Q4_0 or Q4_K_M from it).
# ROUNDS (default 5) alternating rounds; THREADS (default 2); PROMPTS a comma-separated list of
# prompt lengths (default 128); GEN generated tokens (default 64). Each round runs, for every
# prompt length, `anerun bench --prompt-tokens P --gen-tokens GEN --repetitions 1 --json` and
# `llama-bench -p P -n GEN -r 1`; decode is taken after the first prompt length only (llama-bench's
# tg runs from an empty context, anerun's after the prompt). It prints every run, then per metric
# the median, the range, the spread ((max-min)/median) and best/median, and the anerun/llama.cpp
# ratio of the medians. Extra anerun flags (e.g. --mlock, --cpus 0) go in $ANERUN_FLAGS, extra
# llama-bench flags (e.g. --cpu-mask 0x1 --cpu-strict 1, its way to pin) in $LLAMA_FLAGS.
# $ALT_ANERUN_FLAGS and $ALT_LLAMA_FLAGS, when set, add a second variant of that engine to every
# round ("anerun-alt", "llama-alt"), run right after the first: an A/B of a flag (--cpus against
# none) in the same rounds, each variant with its own ratio to the other engine's same variant.
# DEPTH=D adds decode after D tokens to every round: `anerun bench --prompt-tokens D --gen-tokens
# GEN` against `llama-bench -p 0 -n GEN -d D` (metric tgGEN@dD). REREAD=1 first drops both files
# from the page cache and reads them back (`dd iflag=nocache count=0`, then `cat`): how the page
# cache holds a file changes decode speed, and a file just written may sit in small folios
# (docs/performance.md, "Measuring well").
# On a shared machine, WAIT_LOAD=L makes every round first wait (up to WAIT_MAX seconds, default
# 600) until the 1-minute load average is below L and no other task has been runnable for 5
# seconds (procs_running in /proc/stat, sampled every half second).
set -euo pipefail
bundle=$1 gguf=$2 llama=$3 rounds=${4:-5} threads=${5:-2} prompts=${6:-128} gen=${7:-64}
here=$(cd "$(dirname "$0")/.." && pwd)
anerun=${ANERUN:-$here/bin/anerun}
[ -x "$anerun" ] || (cd "$here" && go build -o bin/ ./cmd/anerun)
export LD_LIBRARY_PATH="$(dirname "$llama")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
IFS=, read -r -a plist <<<"$prompts"
first=${plist[0]}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; threads $threads; prompts $prompts; gen $gen; rounds $rounds"
echo "anerun flags: ${ANERUN_FLAGS:-none}; llama-bench flags: ${LLAMA_FLAGS:-none}${DEPTH:+; decode also after $DEPTH tokens}"
if [ -n "${REREAD:-}" ]; then
  for f in "$bundle" "$gguf"; do
    dd if="$f" iflag=nocache count=0 status=none
    cat "$f" >/dev/null
  done
  echo "re-read $bundle and $gguf through the page cache"
fi
variants=("")
if [ -n "${ALT_ANERUN_FLAGS:-}${ALT_LLAMA_FLAGS:-}" ]; then
  variants+=("-alt")
  echo "alt: anerun flags: ${ALT_ANERUN_FLAGS:-none}; llama-bench flags: ${ALT_LLAMA_FLAGS:-none}"
fi

# field KEY JSON: one number from anerun's one-line JSON.
field() { sed -E "s/.*\"$1\":([0-9.eE+-]+).*/\1/" <<<"$2"; }
# llama COLUMN P G CSV: the avg_ts of llama-bench's row for n_prompt P, n_gen G.
llama_col() { awk -F, -v want="$1" -v p="$2" -v g="$3" '
  NR==1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); h[$i] = i }; next }
  { gsub(/"/, ""); if ($h["n_prompt"] == p && $h["n_gen"] == g) print $h[want] }' <<<"$4" | tail -1; }

# quiet: with $WAIT_LOAD, wait until the 1-minute load average is below it (or $WAIT_MAX s).
quiet() {
  [ -n "${WAIT_LOAD:-}" ] || return 0
  local start=$SECONDS idle=0
  while [ $((SECONDS - start)) -lt "${WAIT_MAX:-600}" ]; do
    # procs_running counts this awk itself.
    if awk -v l="$WAIT_LOAD" '{ exit !($1 < l) }' /proc/loadavg && awk '/^procs_running/ { exit !($2 <= 1) }' /proc/stat; then
      idle=$((idle + 1))
      [ "$idle" -ge 10 ] && return 0
    else
      idle=0
    fi
    sleep 0.5
  done
}

for r in $(seq "$rounds"); do
  quiet
  line="round $r (load $(cut -d' ' -f1 /proc/loadavg)):"
  for p in "${plist[@]}"; do
    g=1 n=0
    [ "$p" = "$first" ] && g=$gen n=$gen
    for v in "${variants[@]}"; do
      aflags=${ANERUN_FLAGS:-} lflags=${LLAMA_FLAGS:-}
      [ -n "$v" ] && aflags=${ALT_ANERUN_FLAGS:-} lflags=${ALT_LLAMA_FLAGS:-}
      # shellcheck disable=SC2086
      j=$("$anerun" bench "$bundle" --prompt-tokens "$p" --gen-tokens "$g" --threads "$threads" --repetitions 1 --json $aflags)
      ap=$(field prefill_tokens_per_s "$j")
      echo "$ap" >>"$out/anerun$v-pp$p"
      line+=" anerun$v pp$p $ap"
      if [ "$p" = "$first" ]; then
        ad=$(field decode_tokens_per_s "$j")
        echo "$ad" >>"$out/anerun$v-tg$gen"
        line+=" tg$gen $ad"
      fi
      # shellcheck disable=SC2086
      csv=$("$llama" -m "$gguf" -p "$p" -n "$n" -t "$threads" -r 1 -o csv $lflags 2>/dev/null)
      lp=$(llama_col avg_ts "$p" 0 "$csv")
      echo "$lp" >>"$out/llama$v-pp$p"
      line+=" | llama.cpp$v pp$p $lp"
      if [ "$p" = "$first" ]; then
        lt=$(llama_col avg_ts 0 "$gen" "$csv")
        echo "$lt" >>"$out/llama$v-tg$gen"
        line+=" tg$gen $lt"
      fi
      line+=" ;"
    done
  done
  if [ -n "${DEPTH:-}" ]; then
    for v in "${variants[@]}"; do
      aflags=${ANERUN_FLAGS:-} lflags=${LLAMA_FLAGS:-}
      [ -n "$v" ] && aflags=${ALT_ANERUN_FLAGS:-} lflags=${ALT_LLAMA_FLAGS:-}
      # shellcheck disable=SC2086
      j=$("$anerun" bench "$bundle" --prompt-tokens "$DEPTH" --gen-tokens "$gen" --threads "$threads" --repetitions 1 --json $aflags)
      ad=$(field decode_tokens_per_s "$j")
      echo "$ad" >>"$out/anerun$v-tg$gen@d$DEPTH"
      # shellcheck disable=SC2086
      csv=$("$llama" -m "$gguf" -p 0 -n "$gen" -d "$DEPTH" -t "$threads" -r 1 -o csv $lflags 2>/dev/null)
      lt=$(llama_col avg_ts 0 "$gen" "$csv")
      echo "$lt" >>"$out/llama$v-tg$gen@d$DEPTH"
      line+=" anerun$v tg$gen@d$DEPTH $ad | llama.cpp$v $lt ;"
    done
  fi
  echo "$line"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# stats FILE: median min max spread best/median.
stats() { sort -g "$1" | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%s %s %s %.3f %.3f", m, v[1], v[NR], (v[NR] - v[1]) / m, v[NR] / m }'; }
printf '%-12s %-11s %10s %21s %7s %10s\n' metric engine median range spread best/med
for metric in "tg$gen" ${DEPTH:+"tg$gen@d$DEPTH"} $(printf 'pp%s ' "${plist[@]}"); do
  for v in "${variants[@]}"; do
    for engine in anerun$v llama$v; do
      read -r m lo hi sp bm <<<"$(stats "$out/$engine-$metric")"
      printf '%-12s %-11s %10.2f %10.2f-%-10.2f %6.1f%% %10.3f\n' "$metric" "$engine" "$m" "$lo" "$hi" "$(awk -v s="$sp" 'BEGIN{print s*100}')" "$bm"
    done
    read -r am _ <<<"$(stats "$out/anerun$v-$metric")"
    read -r lm _ <<<"$(stats "$out/llama$v-$metric")"
    printf '%-12s ratio of medians anerun%s/llama.cpp%s: %.3f\n' "$metric" "$v" "$v" "$(awk -v a="$am" -v l="$lm" 'BEGIN{print a/l}')"
  done
done
