//go:build qwen35golden

// This test needs testdata/tokenizer-qwen3.5-public.jsonl, which HF tokenizers writes on a
// machine that has it (testdata/gen/qwen35_tokenizer_golden.py). Run it with
// `go test -tags qwen35golden ./tokenizer/ -run Qwen35Golden`; once the file is committed, this
// build constraint should be deleted so the test runs always.

package tokenizer

import "testing"

// TestGoldenQwen35 checks the Qwen3.5 regex flavour against HF tokenizers 0.23 on the 519 public
// texts and the 70 mark-rich texts of testdata/gen/qwen35-extra-texts.jsonl.
func TestGoldenQwen35(t *testing.T) {
	checkGolden(t, qwen35(t), "tokenizer-qwen3.5-public.jsonl", 519+70)
}
