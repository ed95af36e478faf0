package tokenizer

import (
	"slices"
	"testing"
)

// TestGoldenEncodeDecode checks every record of HF's reference output (tokenizers 0.23,
// encode(text, add_special_tokens=False) and decode(ids, skip_special_tokens=False)).
func TestGoldenEncodeDecode(t *testing.T) {
	tk := qwen(t)
	recs := readJSONL[tokRecord](t, "tokenizer-public.jsonl")
	if len(recs) != 519 {
		t.Fatalf("tokenizer-public.jsonl has %d records, want 519", len(recs))
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
		t.Fatalf("%d mismatches", bad)
	}
}
