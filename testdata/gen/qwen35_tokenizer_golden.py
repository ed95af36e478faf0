#!/usr/bin/env python3
"""Writes testdata/tokenizer-qwen3.5-public.jsonl: HF `tokenizers` 0.23 output for the Qwen3.5
pre-tokenizer regex, the oracle for tokenizer/qwen35_golden_test.go.

The fixtures hold no Qwen3.5 tokenizer.json, so the Qwen2.5/Qwen3 tokenizer.json (same byte-level
BPE machinery, NFC normalizer) is used with its Split regex replaced by Qwen3.5's, which differs
only in \\p{M}. The Go test builds the same modified tokenizer and must reproduce every record.

Inputs: the Qwen tokenizer.json, the 519 texts of testdata/tokenizer-public.jsonl, then the texts
of testdata/gen/qwen35-extra-texts.jsonl (combining marks in many scripts). Output: one JSON line
per text, {"text", "ids", "decoded"}, in that order, exactly like tokenizer-public.jsonl:
ids = encode(text, add_special_tokens=False).ids, decoded = decode(ids, skip_special_tokens=False).

Usage, from the repository root (python3 with `tokenizers` 0.23 installed, nothing else):

    zstd -d -k testdata/qwen-tokenizer/tokenizer.json.zst -o /tmp/qwen-tokenizer.json
    python3 testdata/gen/qwen35_tokenizer_golden.py --tokenizer /tmp/qwen-tokenizer.json

then commit testdata/tokenizer-qwen3.5-public.jsonl.
"""
import argparse
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer

QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN35 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.dirname(HERE)


def texts_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", required=True, help="the Qwen tokenizer.json (decompressed)")
    ap.add_argument("--out", default=os.path.join(TESTDATA, "tokenizer-qwen3.5-public.jsonl"))
    args = ap.parse_args()

    if not tokenizers.__version__.startswith("0.23"):
        sys.exit(f"tokenizers {tokenizers.__version__} installed; the goldens are for 0.23")

    with open(args.tokenizer, encoding="utf-8") as f:
        spec = json.load(f)
    split = spec["pre_tokenizer"]["pretokenizers"][0]
    if split["type"] != "Split" or split["pattern"].get("Regex") != QWEN2:
        sys.exit(f"{args.tokenizer}: pre_tokenizer.pretokenizers[0] is not Qwen2's Split regex")
    split["pattern"]["Regex"] = QWEN35
    tok = Tokenizer.from_str(json.dumps(spec, ensure_ascii=False))

    texts = texts_of(os.path.join(TESTDATA, "tokenizer-public.jsonl"))
    if len(texts) != 519:
        sys.exit(f"tokenizer-public.jsonl has {len(texts)} texts, expected 519")
    texts += texts_of(os.path.join(HERE, "qwen35-extra-texts.jsonl"))

    with open(args.out, "w", encoding="utf-8") as out:
        for text in texts:
            ids = tok.encode(text, add_special_tokens=False).ids
            decoded = tok.decode(ids, skip_special_tokens=False)
            out.write(json.dumps({"text": text, "ids": ids, "decoded": decoded}, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} records to {args.out} (tokenizers {tokenizers.__version__})")


if __name__ == "__main__":
    main()
