package synth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nlpodyssey/safetensors"

	"github.com/anepack/anepack/arch"
)

type golden struct {
	Seed         uint64            `json:"seed"`
	Config       json.RawMessage   `json:"config"`
	TensorSHA256 map[string]string `json:"tensor_sha256"`
	// TensorRole is the role table's row of each tensor (absent in the oldest goldens).
	TensorRole map[string]string `json:"tensor_role"`
}

func loadGolden(t *testing.T, name string) golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.TensorSHA256) == 0 {
		t.Fatalf("%s has no tensor_sha256", name)
	}
	return g
}

// TestMatchesGoldenDigests writes each golden model's checkpoint and checks that every tensor's
// BF16 bytes hash to the digest Hugging Face's reference generator produced.
func TestMatchesGoldenDigests(t *testing.T) {
	for _, file := range []string{"model-qwen2-tiny.json", "model-qwen2-tiny-untied.json", "model-qwen3-tiny.json", "model-llama3-tiny.json", "model-gpt2-tiny.json", "model-gemma3-tiny.json", "model-qwen3.5-tiny.json", "model-qwen3moe-tiny.json",
		"model-mistral-tiny.json", "model-smollm3-tiny.json", "model-olmo3-tiny.json"} {
		t.Run(file, func(t *testing.T) {
			g := loadGolden(t, file)
			dir := t.TempDir()
			tok := map[string][]byte{"tokenizer.json": []byte("{}")}
			if err := WriteCheckpoint(context.Background(), dir, g.Config, tok, Options{Seed: g.Seed}); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := safetensors.Deserialize(data)
			if err != nil {
				t.Fatal(err)
			}
			if st.Len() != len(g.TensorSHA256) {
				t.Errorf("file has %d tensors; golden lists %d", st.Len(), len(g.TensorSHA256))
			}
			for name, want := range g.TensorSHA256 {
				tv, ok := st.Tensor(name)
				if !ok {
					t.Errorf("missing tensor %s", name)
					continue
				}
				if tv.DType() != safetensors.BF16 {
					t.Errorf("%s: dtype %v; want BF16", name, tv.DType())
				}
				sum := sha256.Sum256(tv.Data())
				if got := hex.EncodeToString(sum[:]); got != want {
					t.Errorf("%s: sha256 %s; want %s", name, got, want)
				}
			}
			checkRoles(t, g)
			cfgBack, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil || string(cfgBack) != string(g.Config) {
				t.Errorf("config.json not written verbatim")
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "tokenizer.json")); string(b) != "{}" {
				t.Errorf("tokenizer file not copied")
			}
			// Nothing but the four files: no temp files left behind.
			ents, _ := os.ReadDir(dir)
			if len(ents) != 3 {
				t.Errorf("directory holds %d entries; want 3", len(ents))
			}
		})
	}
}

// checkRoles compares the role each tensor gets from the architecture's description with the
// golden's role table, so a wrong role is named even where a digest alone would only differ.
func checkRoles(t *testing.T, g golden) {
	t.Helper()
	if g.TensorRole == nil {
		return // the Qwen2 goldens predate the role table; their digests cover the same rules
	}
	cfg, err := arch.ParseConfig(g.Config, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	fam, _ := arch.Lookup(cfg)
	for _, tt := range fam.CheckpointTensors(cfg) {
		sc := scalerFor(tt)
		var role string
		switch {
		case sc == (scaler{0.1, 1}):
			role = "one"
		case sc == (scaler{0.1, 0}):
			role = "zero"
		case sc == (scaler{0.5, 0}):
			role = "a_log"
		case sc == (scaler{0.25, 0}) && tt.Role == arch.RoleEmbedding: // a linear [out, 48] scales by sqrt(3/48) = 0.25 too
			role = "embed"
		case tt.Transposed:
			role = "in_out"
		default:
			role = "linear"
		}
		if want := g.TensorRole[tt.Name]; want != role {
			t.Errorf("%s: role %s; the golden's role table says %s", tt.Name, role, want)
		}
	}
}

// TestCancelLeavesNothing cancels generation and checks that no model file or temp file remains.
func TestCancelLeavesNothing(t *testing.T) {
	g := loadGolden(t, "model-qwen2-tiny.json")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WriteCheckpoint(ctx, dir, g.Config, nil, Options{Seed: g.Seed})
	if err == nil {
		t.Fatal("cancelled write succeeded")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "config.json" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	cases := map[float32]uint16{1: 0x3F80, -2.5: 0xC020, 1.00390625: 0x3F80, 1.01171875: 0x3F82, 65536: 0x4780}
	for f, want := range cases {
		if got := BF16FromFloat32(f); got != want {
			t.Errorf("BF16FromFloat32(%v) = %#04x; want %#04x", f, got, want)
		}
	}
}

func BenchmarkWriteQwen05B(b *testing.B) {
	cfg := &arch.Config{Architecture: "Qwen2ForCausalLM", HiddenSize: 896, IntermediateSize: 4864,
		NumHiddenLayers: 24, NumAttentionHeads: 14, NumKeyValueHeads: 2, HeadDim: 64, VocabSize: 151936,
		TieWordEmbeddings: true}
	var n countWriter
	for i := 0; i < b.N; i++ {
		n = 0
		if err := WriteSafetensors(context.Background(), &n, cfg, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(n))
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
