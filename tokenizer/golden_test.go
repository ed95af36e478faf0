package tokenizer

import (
	"slices"
	"testing"
)

// checkGolden compares Encode and Decode with every record of a reference file written by HF
// tokenizers 0.23: encode(text, add_special_tokens=False) and decode(ids, skip_special_tokens=False).
func checkGolden(t *testing.T, tk *Tokenizer, file string, wantRecords int) {
	t.Helper()
	recs := readJSONL[tokRecord](t, file)
	if len(recs) != wantRecords {
		t.Fatalf("%s has %d records, want %d", file, len(recs), wantRecords)
	}
	bad := 0
	for i, r := range recs {
		got := tk.Encode(r.Text)
		if !slices.Equal(got, r.IDs) {
			bad++
			if bad <= 10 {
				t.Errorf("record %d %q:\n got  %v\n want %v", i, r.Text, got, r.IDs)
			}
		}
		if d := tk.Decode(r.IDs); d != r.Decoded {
			bad++
			if bad <= 10 {
				t.Errorf("record %d: Decode = %q, want %q", i, d, r.Decoded)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d mismatches in %d records", file, bad, len(recs))
	}
}

// TestGoldenEncodeDecode checks the Qwen2.5/Qwen3 tokenizer against HF's reference output.
func TestGoldenEncodeDecode(t *testing.T) {
	checkGolden(t, qwen(t), "tokenizer-public.jsonl", 519)
}

// TestGoldenLlama3 checks the Llama 3.1 tokenizer (\p{N}{1,3}, no NFC, ignore_merges).
func TestGoldenLlama3(t *testing.T) {
	checkGolden(t, family(t, "llama3"), "tokenizer-llama3-public.jsonl", 519)
}

// TestGoldenGPT2 checks GPT-2's tokenizer (ByteLevel pre-tokenizer with its built-in regex).
func TestGoldenGPT2(t *testing.T) {
	checkGolden(t, family(t, "gpt2"), "tokenizer-gpt2-public.jsonl", 519)
}

// TestGoldenGemma3 checks Gemma 3's SentencePiece-style BPE (the "▁" normalizer, byte fallback,
// the Replace + ByteFallback + Fuse decoder).
func TestGoldenGemma3(t *testing.T) {
	checkGolden(t, family(t, "gemma3"), "tokenizer-gemma3-public.jsonl", 519)
}

// TestGoldenGptOss checks gpt-oss's o200k_harmony tokenizer (o200k's case-aware pre-tokenizer
// regex, \p{N}{1,3}, the harmony specials).
func TestGoldenGptOss(t *testing.T) {
	checkGolden(t, family(t, "gptoss"), "tokenizer-gptoss-public.jsonl", 519)
}
