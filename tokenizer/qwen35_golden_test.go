package tokenizer

// testdata/tokenizer-qwen3.5-public.jsonl was written by HF tokenizers 0.23.2 on a 16-core
// Xeon with testdata/gen/qwen35_tokenizer_golden.py (see its header for the command).

import "testing"

// TestGoldenQwen35 checks the Qwen3.5 regex flavour against HF tokenizers 0.23 on the 519 public
// texts and the 70 mark-rich texts of testdata/gen/qwen35-extra-texts.jsonl.
func TestGoldenQwen35(t *testing.T) {
	checkGolden(t, qwen35(t), "tokenizer-qwen3.5-public.jsonl", 519+70)
}
