#!/usr/bin/env python3
"""Times Hugging Face `tokenizers` on the corpus that tokenizer/BenchmarkEncode uses, and records
HF's ids for extra edge-case texts (hf-extra.jsonl; compressed into
tokenizer/testdata/hf-extra.jsonl.zst for tokenizer/hf_extra_test.go).

Usage (repository root):
    python3 bench/tokenizer_vs_hf.py --tokenizer tokenizer.json [--out DIR] [--seconds 20]

How bench/results/tokenizer-go-xeon.txt and tokenizer-hf-xeon.txt were taken (a 16-core Xeon
with AVX-512 and AMX; the Go test binary is built where Go is installed and copied over with the
decompressed tokenizer.json):

    go test -c -o bench/tokbench.test ./tokenizer/
    zstd -d testdata/qwen-tokenizer/tokenizer.json.zst -o out/tokbench/tokenizer.json
    # on the 16-core Xeon, from the repository root:
    (cd tokenizer && ../bench/tokbench.test -test.run '^$' \
        -test.bench 'Load|Encode$|EncodeRecords|Decode' -test.benchtime 3s -test.cpu 1 -test.count 3)
    (cd tokenizer && ../bench/tokbench.test -test.run '^$' -test.bench EncodeParallel \
        -test.benchtime 3s -test.cpu 1,4,16)
    RAYON_NUM_THREADS=16 python3 bench/tokenizer_vs_hf.py --tokenizer out/tokbench/tokenizer.json \
        --out out/tokbench --seconds 15

`tokenizer.json` is testdata/qwen-tokenizer/tokenizer.json.zst decompressed (zstd -d). The corpus
is every "text" of testdata/tokenizer-public.jsonl joined with "\n", exactly as the Go benchmark
builds it. Single-thread numbers use Tokenizer.encode in a loop (it never spawns threads);
encode_batch uses the Rayon pool (RAYON_NUM_THREADS, default all cores).
"""
import argparse
import json
import os
import random
import time

from tokenizers import Tokenizer, __version__


def corpus_records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def timed(fn, seconds):
    """Runs fn repeatedly for at least `seconds`; returns (best, median) seconds per call."""
    fn()  # warm-up (HF's word cache, like the Go benchmark's warm cache)
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def extra_texts():
    """Edge cases for the Go/HF comparison: fixed ones plus seeded random mixes of the character
    classes the pre-tokenizer distinguishes."""
    fixed = [
        "x'ſx", "'ſ", "don'ſ", "'S'T'RE'VE'M'LL'D", "I'M HERE'S", "\u017f's",
        "<think>\u0301x</think>\u0301", "e\u0301<|im_end|>\u0301", "<|im_start|> \n<|im_end|>\n\n",
        "\r\n\r\n  \t\u3000\u00a0x", " " * 40 + "y", "\n" * 10, "a\u2028b\u2029c\u0085d",
        "１２３ ٣٤ ½ Ⅻ 𝟘𝟙", "👩\u200d💻👨\u200d👩\u200d👧 🏳\ufe0f\u200d🌈", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝",
        "ﬁﬂ ﬀ ǅ Ǆ ǆ İstanbul ıi", "ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ", "\x00\x01\x7f\x1c\x1d", "\ufeffBOM",
        "a" * 300, "=" * 200, "😀" * 50, "中" * 100, "ab12cd34" * 30, "http://x.y/z?q=1&r=2#f",
        "def f(x):\n\treturn x**2  # sq\n", "<|endoftext|><|endoftext|>", "<|im_start|", "<think",
    ]
    alphabet = ["a", "Z", "é", "ß", "ж", "中", "ー", "ا", "ह", "ि", "्", "\u0301", "1", "٣", "½", "Ⅻ", "𝟘",
                " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2028", "\u0085", "\v", "\f",
                "'", "'s", "'S", "'re", "'VE", "'ll", "'d", "'m", "'t", "'x", "ſ", ".", ",", "!", "?", "-",
                "_", "(", "{", "<", "/", "\\", "\"", "#", "😀", "👩\u200d💻", "\u200d", "\ufffd",
                "<|im_start|>", "<think>", "</tool_call>", "e\u0301", "Å", "A\u030a"]
    rng = random.Random(20261122)
    rand = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(1500)]
    return fixed + rand


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--corpus", default="testdata/tokenizer-public.jsonl")
    ap.add_argument("--out", default=".")
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()

    tok = Tokenizer.from_file(args.tokenizer)
    records = corpus_records(args.corpus)
    text = "\n".join(records)
    nbytes = len(text.encode("utf-8"))
    rec_bytes = sum(len(r.encode("utf-8")) for r in records)

    best, med = timed(lambda: tok.encode(text, add_special_tokens=False), args.seconds)
    best_r, med_r = timed(lambda: [tok.encode(r, add_special_tokens=False) for r in records], args.seconds)
    best_b, med_b = timed(lambda: tok.encode_batch(records, add_special_tokens=False), args.seconds / 2)
    result = {
        "tokenizers_version": __version__,
        "cpu_count": os.cpu_count(),
        "rayon_threads": os.environ.get("RAYON_NUM_THREADS", "default"),
        "corpus_bytes": nbytes,
        "corpus_tokens": len(tok.encode(text, add_special_tokens=False).ids),
        "encode_joined_MBps_best": nbytes / best / 1e6,
        "encode_joined_MBps_median": nbytes / med / 1e6,
        "encode_records_MBps_best": rec_bytes / best_r / 1e6,
        "encode_records_MBps_median": rec_bytes / med_r / 1e6,
        "encode_batch_MBps_best": rec_bytes / best_b / 1e6,
        "encode_batch_MBps_median": rec_bytes / med_b / 1e6,
    }
    print(json.dumps(result, indent=2))
    with open(os.path.join(args.out, "hf_bench.json"), "w") as f:
        json.dump(result, f, indent=2)

    with open(os.path.join(args.out, "hf-extra.jsonl"), "w", encoding="utf-8") as f:
        for t in extra_texts():
            enc = tok.encode(t, add_special_tokens=False)
            f.write(json.dumps({"text": t, "ids": enc.ids,
                                "decoded": tok.decode(enc.ids, skip_special_tokens=False)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
