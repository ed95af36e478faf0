package tokenizer

import (
	"strings"
	"testing"
)

// corpusText is the public corpus (every text of tokenizer-public.jsonl), joined by newlines.
func corpusText(tb testing.TB) string {
	recs := readJSONL[tokRecord](tb, "tokenizer-public.jsonl")
	parts := make([]string, len(recs))
	for i, r := range recs {
		parts[i] = r.Text
	}
	return strings.Join(parts, "\n")
}

// BenchmarkLoad measures building a Tokenizer from the compiled 151k-vocabulary tables (the
// bundle's load path; target < 10 ms).
func BenchmarkLoad(b *testing.B) {
	_, _, blob := qwenFiles(b)
	b.SetBytes(int64(len(blob)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Load(blob); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode encodes the public corpus on one goroutine; MB/s is of UTF-8 input. The word
// cache is warm after the first iteration, as it is in a long-running process.
func BenchmarkEncode(b *testing.B) {
	tk := qwen(b)
	text := corpusText(b)
	b.SetBytes(int64(len(text)))
	var ids []int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ids = tk.AppendEncode(ids[:0], text, EncodeOptions{})
	}
}

// BenchmarkEncodeRecords encodes the corpus record by record (519 calls per iteration), the
// shape of prompt encoding.
func BenchmarkEncodeRecords(b *testing.B) {
	tk := qwen(b)
	recs := readJSONL[tokRecord](b, "tokenizer-public.jsonl")
	n := 0
	for _, r := range recs {
		n += len(r.Text)
	}
	b.SetBytes(int64(n))
	var ids []int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range recs {
			ids = tk.AppendEncode(ids[:0], r.Text, EncodeOptions{})
		}
	}
}

// BenchmarkEncodeParallel encodes the corpus records on all GOMAXPROCS goroutines at once.
func BenchmarkEncodeParallel(b *testing.B) {
	tk := qwen(b)
	recs := readJSONL[tokRecord](b, "tokenizer-public.jsonl")
	n := 0
	for _, r := range recs {
		n += len(r.Text)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ids []int
		for pb.Next() {
			for _, r := range recs {
				ids = tk.AppendEncode(ids[:0], r.Text, EncodeOptions{})
			}
		}
	})
}

// BenchmarkDecode decodes the corpus ids.
func BenchmarkDecode(b *testing.B) {
	tk := qwen(b)
	ids := tk.Encode(corpusText(b))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = tk.Decode(ids)
	}
}
