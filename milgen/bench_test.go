package milgen

import (
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/mil"
)

// benchProgram compiles the named generated program of cfg on random weights.
func benchProgram(b *testing.B, cfgJSON, name string, opts Options) (*mil.Executable, Program) {
	cfg := parseConfig(b, cfgJSON)
	specs, err := blobplan.Blobs(cfg, opts.Blobs)
	if err != nil {
		b.Fatal(err)
	}
	var keep []blobplan.Blob
	for _, s := range specs { // only the blobs of layer 0 and the first LM-head chunk
		if s.Key.Layer == 0 || (s.Key.Group == arch.GroupLMHead && s.Key.Chunk == 0) {
			keep = append(keep, s)
		}
	}
	progs, err := Programs(cfg, opts, blobplan.Place(specs, sectionName))
	if err != nil {
		b.Fatal(err)
	}
	mb := buildModelBlobs(b, keep, 1)
	for _, k := range progs {
		if k.Name == name {
			return mb.compile(b, k, nil), k
		}
	}
	b.Fatalf("no program %s", name)
	return nil, Program{}
}

func runBench(b *testing.B, e *mil.Executable, k Program, flops float64) {
	runBenchCols(b, e, k, flops, k.Seq)
}

// runBenchCols reports GFLOP/s of the work done: cols of the program's Seq columns.
func runBenchCols(b *testing.B, e *mil.Executable, k Program, flops float64, cols int) {
	r := newRand(2)
	x := randF16(r, arch.Elements(k.Inputs[0].Shape), 1)
	y := make([]uint16, arch.Elements(k.Outputs[0].Shape))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.EvalColumns([][]uint16{x}, [][]uint16{y}, cols); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(flops*float64(cols)/float64(k.Seq)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkSimFFN measures the sim on a whole SwiGLU FFN program (hidden 512, intermediate
// 1536, S = 64): 3 convs of 2·512·1536·64 flops.
func BenchmarkSimFFN(b *testing.B) {
	const js = `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 512, "intermediate_size": 1536,
	 "num_hidden_layers": 1, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 256,
	 "max_position_embeddings": 128}`
	e, k := benchProgram(b, js, "layers.0.mlp.s64", Options{Seqs: []int{64}, Blobs: blobplan.Options{WeightDType: dtype.F16}})
	runBench(b, e, k, 3*2*512*1536*64)
}

// BenchmarkSimLMHeadChunk measures one LM-head chunk of the tiny test model (hidden 64,
// vocab 151936 -> 3 chunks of 50688 rows) at S = 32, the sim's hot spot in whole-model runs.
func BenchmarkSimLMHeadChunk(b *testing.B) {
	const js = `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 160,
	 "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 151936,
	 "max_position_embeddings": 128, "tie_word_embeddings": true}`
	e, k := benchProgram(b, js, "lm_head.0.s32", Options{Seqs: []int{32}})
	runBench(b, e, k, 2*50688*64*32)
}

// BenchmarkSimLMHeadChunkDecode is the same chunk evaluated for one live column (decode), the
// way the dispatcher calls the sim.
func BenchmarkSimLMHeadChunkDecode(b *testing.B) {
	const js = `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 160,
	 "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 151936,
	 "max_position_embeddings": 128, "tie_word_embeddings": true}`
	e, k := benchProgram(b, js, "lm_head.0.s32", Options{Seqs: []int{32}})
	runBenchCols(b, e, k, 2*50688*64*32, 1)
}

// BenchmarkPrograms measures pack-time program generation for a Qwen2.5-0.5B-shaped config
// (24 layers, 5 buckets, 3 LM-head chunks) and reports the program count and MIL text size.
func BenchmarkPrograms(b *testing.B) {
	cfg := parseConfig(b, `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
	 "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
	 "max_position_embeddings": 32768, "tie_word_embeddings": true}`)
	specs, err := blobplan.Blobs(cfg, blobplan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	placed := blobplan.Place(specs, sectionName)
	var progs []Program
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if progs, err = Programs(cfg, Options{}, placed); err != nil {
			b.Fatal(err)
		}
	}
	var size int
	for _, k := range progs {
		size += len(k.Text)
	}
	b.ReportMetric(float64(len(progs)), "programs")
	b.ReportMetric(float64(size), "MIL-bytes")
}
