package tokenizer

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
)

// qwen35 returns the Qwen tokenizer with its Split regex replaced by Qwen3.5's, the tokenizer
// that testdata/gen/qwen35_tokenizer_golden.py builds for HF (no Qwen3.5 tokenizer.json is
// available here; the regex is the only part of the pipeline that differs).
func qwen35(tb testing.TB) *Tokenizer {
	tb.Helper()
	tokJSON, cfg, _ := qwenFiles(tb)
	old := []byte(strconv.Quote(patternQwen2))
	if bytes.Count(tokJSON, old) != 1 {
		tb.Fatalf("the Qwen tokenizer.json does not hold the Qwen2 regex exactly once")
	}
	tk, err := LoadJSON(bytes.Replace(tokJSON, old, []byte(strconv.Quote(patternQwen35)), 1), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

// TestQwen35Flavour: the Qwen3.5 regex is recognised, and combining marks stay inside their word
// where Qwen2's regex cuts them off ("नमस्ते" is one pre-token, not "नमस", "्त", "े").
func TestQwen35Flavour(t *testing.T) {
	tk := qwen35(t)
	if in := tk.Info(); in.PreTokenizer != "qwen3.5" || in.Normalizer != "NFC" {
		t.Fatalf("Info = %+v", in)
	}
	word := "नमस्ते"
	if got := scannerSplit(preQwen35, " "+word+"!"); !slices.Equal(got, []string{" " + word, "!"}) {
		t.Errorf("qwen3.5 split = %q", got)
	}
	if got := scannerSplit(preQwen2, " "+word); len(got) != 3 {
		t.Errorf("qwen2 split = %q, want 3 pieces", got)
	}
	for _, s := range []string{word, "ภาษาไทย ก่ ก้", "بِسْمِ ٱللَّٰهِ", "שָׁלוֹם עוֹלָם", "x\u20dd 1\u20e3", "❤️ 👍🏽"} {
		ids := tk.Encode(s)
		if d := tk.Decode(ids); d != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, d)
		}
		if niqqud := "שָׁלוֹם עוֹלָם"; s == niqqud && slices.Equal(ids, qwen(t).Encode(s)) {
			t.Errorf("%q encodes the same under both regexes; its marks should change the ids", s)
		}
	}
}
