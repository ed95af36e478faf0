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

// benchCorpus encodes the public corpus with tk, as BenchmarkEncode (whole corpus at once),
// BenchmarkEncodeRecords (record by record) or BenchmarkEncodeParallel (records on every
// GOMAXPROCS goroutine) do for Qwen, or "cold": the whole corpus with an empty word cache (a
// Tokenizer freshly loaded from the same tables, outside the timing). The warm modes favour
// tokenizers whose words are long (a Gemma word is everything between two added tokens), since a
// repeated text then hits the cache for whole lines. testdata/gen/bench_hf_tokenizers.py times
// HF tokenizers on the same text.
func benchCorpus(b *testing.B, tk *Tokenizer, mode string) {
	recs := readJSONL[tokRecord](b, "tokenizer-public.jsonl")
	text := corpusText(b)
	n := 0
	for _, r := range recs {
		n += len(r.Text)
	}
	var ids []int
	switch mode {
	case "corpus":
		b.SetBytes(int64(len(text)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ids = tk.AppendEncode(ids[:0], text, EncodeOptions{})
		}
	case "cold":
		b.SetBytes(int64(len(text)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			fresh, err := Load(tk.t.blob)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			ids = fresh.AppendEncode(ids[:0], text, EncodeOptions{})
		}
	case "records":
		b.SetBytes(int64(n))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, r := range recs {
				ids = tk.AppendEncode(ids[:0], r.Text, EncodeOptions{})
			}
		}
	case "parallel":
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
	default:
		b.Fatalf("unknown mode %q", mode)
	}
}

// BenchmarkEncodeGPT2 encodes the corpus with GPT-2's tokenizer (ByteLevel regex, 50k merges).
func BenchmarkEncodeGPT2(b *testing.B) { benchCorpus(b, family(b, "gpt2"), "corpus") }

// BenchmarkEncodeGPT2Cold encodes the corpus with GPT-2's tokenizer and an empty word cache.
func BenchmarkEncodeGPT2Cold(b *testing.B) { benchCorpus(b, family(b, "gpt2"), "cold") }

// BenchmarkEncodeGPT2Records encodes the corpus record by record with GPT-2's tokenizer.
func BenchmarkEncodeGPT2Records(b *testing.B) { benchCorpus(b, family(b, "gpt2"), "records") }

// BenchmarkEncodeGPT2Parallel encodes the records on all goroutines with GPT-2's tokenizer.
func BenchmarkEncodeGPT2Parallel(b *testing.B) { benchCorpus(b, family(b, "gpt2"), "parallel") }

// BenchmarkEncodeGemma3 encodes the corpus with Gemma 3's SentencePiece-style BPE, where every
// segment between added tokens is one BPE word (the heap path; HF does the same).
func BenchmarkEncodeGemma3(b *testing.B) { benchCorpus(b, family(b, "gemma3"), "corpus") }

// BenchmarkEncodeGemma3Cold encodes the corpus with Gemma 3's tokenizer and an empty word cache.
func BenchmarkEncodeGemma3Cold(b *testing.B) { benchCorpus(b, family(b, "gemma3"), "cold") }

// BenchmarkEncodeGemma3Records encodes the corpus record by record with Gemma 3's tokenizer.
func BenchmarkEncodeGemma3Records(b *testing.B) { benchCorpus(b, family(b, "gemma3"), "records") }

// BenchmarkEncodeGemma3Parallel encodes the records on all goroutines with Gemma 3's tokenizer.
func BenchmarkEncodeGemma3Parallel(b *testing.B) { benchCorpus(b, family(b, "gemma3"), "parallel") }

// BenchmarkEncodeLlama3 encodes the corpus with Llama 3's tokenizer (ignore_merges, 280k merges).
func BenchmarkEncodeLlama3(b *testing.B) { benchCorpus(b, family(b, "llama3"), "corpus") }

// BenchmarkEncodeCold encodes the corpus with the Qwen tokenizer and an empty word cache.
func BenchmarkEncodeCold(b *testing.B) { benchCorpus(b, qwen(b), "cold") }

// BenchmarkLoadGemma3 measures building a Tokenizer from Gemma 3's compiled tables (262k vocab,
// 515k merges, 6415 added tokens).
func BenchmarkLoadGemma3(b *testing.B) {
	_, _, blob := familyFiles(b, "gemma3")
	b.SetBytes(int64(len(blob)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Load(blob); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeLlama3Records encodes the corpus record by record with Llama 3's tokenizer.
func BenchmarkEncodeLlama3Records(b *testing.B) { benchCorpus(b, family(b, "llama3"), "records") }
