#!/usr/bin/env python3
"""Times Hugging Face `tokenizers` encoding the text that tokenizer/bench_test.go encodes, for the
four real tokenizers of testdata/ (qwen, llama3, gpt2, gemma3), and prints MB/s of UTF-8 input.

The text is every "text" of testdata/tokenizer-public.jsonl: joined with "\\n" for the whole-corpus
numbers (Go: BenchmarkEncode / BenchmarkEncodeGPT2 / ...Gemma3 / ...Llama3), one call per record
for the record numbers (Go: ...Records), encode_batch over the records for the batch numbers
(Go: ...Parallel with -test.cpu N). "cold" clears the BPE word cache before each call where the
installed tokenizers exposes it (Go: ...Cold); the other numbers have a warm cache, as in Go.

Usage, from the repository root (python3 with `tokenizers` 0.23 installed, nothing else):

    for f in qwen llama3 gpt2 gemma3; do
        zstd -d -k -f testdata/$f-tokenizer/tokenizer.json.zst -o /tmp/hf-$f.json
    done
    python3 testdata/gen/bench_hf_tokenizers.py --dir /tmp --seconds 5

It runs itself twice, with RAYON_NUM_THREADS=1 and with all cores (the Rayon pool is sized once
per process), and prints one table. Go's side, on the same machine:

    go test -c -o /tmp/tok.test ./tokenizer/
    (cd tokenizer && /tmp/tok.test -test.run '^$' -test.benchtime 3s -test.cpu 1 \\
        -test.bench 'Encode(|Cold|Records|GPT2|GPT2Cold|GPT2Records|Gemma3|Gemma3Cold|Gemma3Records|Llama3|Llama3Records)$')
    (cd tokenizer && /tmp/tok.test -test.run '^$' -test.benchtime 3s -test.cpu 1,$(nproc) \\
        -test.bench 'Encode(|GPT2|Gemma3)Parallel$')
"""
import argparse
import json
import os
import subprocess
import sys
import time

FAMILIES = ["qwen", "llama3", "gpt2", "gemma3"]
HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.dirname(HERE)


def records():
    with open(os.path.join(TESTDATA, "tokenizer-public.jsonl"), encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def timed(fn, seconds, before=None):
    """Best seconds per call of fn over at least `seconds` (and 5 calls); before() runs untimed."""
    if before is None:
        fn()  # warm-up: HF's word cache, like the Go benchmarks' warm cache
    best, total, n = float("inf"), 0.0, 0
    while total < seconds or n < 5:
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, n = min(best, dt), total + dt, n + 1
    return best


def measure(args):
    from tokenizers import Tokenizer

    texts = records()
    corpus = "\n".join(texts)
    corpus_mb = len(corpus.encode("utf-8")) / 1e6
    records_mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    threads = os.environ.get("RAYON_NUM_THREADS", str(os.cpu_count()))
    rows = []
    for fam in FAMILIES:
        path = os.path.join(args.dir, f"hf-{fam}.json")
        tok = Tokenizer.from_file(path)
        clear = getattr(tok.model, "_clear_cache", None)
        results = {}
        if threads == "1":
            results["corpus"] = corpus_mb / timed(lambda: tok.encode(corpus, add_special_tokens=False), args.seconds)
            results["records"] = records_mb / timed(lambda: [tok.encode(t, add_special_tokens=False) for t in texts], args.seconds)
            if clear is not None:
                results["cold"] = corpus_mb / timed(lambda: tok.encode(corpus, add_special_tokens=False), args.seconds, before=clear)
        results[f"batch x{threads}"] = records_mb / timed(lambda: tok.encode_batch(texts, add_special_tokens=False), args.seconds)
        rows.append({"family": fam, "threads": threads, "mb_per_s": results})
    print(json.dumps(rows))


def main():
    ap = argparse.ArgumentParser(description="Time HF tokenizers on the Go benchmarks' text.")
    ap.add_argument("--dir", required=True, help="folder holding hf-<family>.json (decompressed tokenizer.json files)")
    ap.add_argument("--seconds", type=float, default=5.0, help="time per measurement")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure(args)
        return
    for fam in FAMILIES:
        if not os.path.exists(os.path.join(args.dir, f"hf-{fam}.json")):
            sys.exit(f"{args.dir}/hf-{fam}.json missing: decompress testdata/{fam}-tokenizer/tokenizer.json.zst there (see --help)")
    import tokenizers

    print(f"tokenizers {tokenizers.__version__}, {os.cpu_count()} cores, corpus testdata/tokenizer-public.jsonl")
    table = []
    for threads in ["1", str(os.cpu_count())]:
        env = dict(os.environ, RAYON_NUM_THREADS=threads, TOKENIZERS_PARALLELISM="true")
        out = subprocess.run([sys.executable, __file__, "--dir", args.dir, "--seconds", str(args.seconds), "--child"],
                             env=env, check=True, capture_output=True, text=True).stdout
        table += json.loads(out.strip().splitlines()[-1])
    for row in table:
        cells = ", ".join(f"{k} {v:.1f} MB/s" for k, v in row["mb_per_s"].items())
        print(f"{row['family']:7} threads={row['threads']:>3}: {cells}")


if __name__ == "__main__":
    main()
