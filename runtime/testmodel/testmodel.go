// Package testmodel is for tests only: it builds real bundles for the tests of the runtime, its
// backends and anerun, and reads the golden references Hugging Face produced for them
// (testdata/model-*.json at the repository root). A bundle is made the way users make one — a
// SYNTH-1 checkpoint written by package synth, packed by package pack — once per test process
// and dtype, and shared by every test of the process (call Cleanup from TestMain to remove it).
package testmodel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/synth"
)

// Golden is one golden reference file: a SYNTH-1 model and Hugging Face's outputs for it.
type Golden struct {
	Model  string          `json:"model"`
	Seed   uint64          `json:"seed"`
	Config json.RawMessage `json:"config"`
	// Tokenizer names the tokenizer the model was made for: "qwen" (or empty) or "llama3".
	Tokenizer string `json:"tokenizer"`
	Cases     []Case `json:"cases"`
}

// Case is one prompt and HF's outputs for it (fp32, eager attention, KV cache).
type Case struct {
	Name         string `json:"name"`
	PromptIDs    []int  `json:"prompt_ids"`
	GeneratedIDs []int  `json:"generated_ids"` // greedy
	// StepsTop8[j] is the top 8 (id, logit) of the logits that chose GeneratedIDs[j].
	StepsTop8 [][][2]float64 `json:"steps_top8"`
	// PrefillTop4[j] is the top 4 (id, logit) at prompt position
	// len(PromptIDs)-len(PrefillTop4)+j: every position, or the last few of a long prompt.
	PrefillTop4 [][][2]float64 `json:"prefill_top4"`
}

// Models are the golden reference files, by model name.
var Models = []string{"qwen2-tiny", "qwen2-tiny-untied", "qwen3-tiny", "llama3-tiny", "gpt2-tiny", "gemma3-tiny", "qwen3.5-tiny",
	"mistral-tiny", "smollm3-tiny", "olmo3-tiny", "qwen3moe-tiny"}

// Root returns the repository root (the directory holding go.mod), found from the working
// directory, which `go test` sets to the package's directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testmodel: no go.mod above the working directory")
		}
		dir = parent
	}
}

// LoadGolden reads testdata/model-<name>.json.
func LoadGolden(tb testing.TB, name string) *Golden {
	tb.Helper()
	g, err := loadGolden(name)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func loadGolden(name string) (*Golden, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, "testdata", "model-"+name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g := new(Golden)
	if err := json.Unmarshal(data, g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	return g, nil
}

var (
	mu      sync.Mutex
	dir     string                // the process's build directory
	bundles = map[string]*build{} // "name/dtype" -> build
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Bundle returns the path of a bundle of golden model name ("qwen2-tiny", ...) packed with
// dtype ("f16" or "f32"), building it on first use. The file must not be modified.
func Bundle(tb testing.TB, name, dtype string) string {
	tb.Helper()
	mu.Lock()
	key := name + "/" + dtype
	b := bundles[key]
	if b == nil {
		b = new(build)
		bundles[key] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = buildGolden(name, dtype) })
	if b.err != nil {
		tb.Fatalf("building the %s bundle (%s): %v", name, dtype, b.err)
	}
	return b.path
}

// Config returns the path of configs/<name>.json, for models without a golden file (the
// full-size Qwen2.5-0.5B of the benchmarks).
func Config(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "configs", name+".json"), nil
}

func buildDir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp("", "anepack-testmodel-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	return dir, nil
}

func buildGolden(name, dtype string) (string, error) {
	g, err := loadGolden(name)
	if err != nil {
		return "", err
	}
	files, err := TokenizerFiles(g.Tokenizer)
	if err != nil {
		return "", err
	}
	return BuildWith(g.Config, g.Seed, name, dtype, files)
}

// TokenizerFiles returns the tokenizer files of a golden model's tokenizer: "qwen" (or empty),
// the Qwen2.5/Qwen3 tokenizer built into anepack, or "llama3", "gpt2", "gemma3": the real
// tokenizers in testdata/<name>-tokenizer.
func TokenizerFiles(name string) (map[string][]byte, error) {
	if name == "" || name == "qwen" {
		return qwentok.Files()
	}
	tj, tc, err := testtok.Files(name)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": tc}, nil
}

// Build writes a SYNTH-1 checkpoint of configJSON with seed and the Qwen tokenizer and packs it
// with dtype into the process's build directory as <name>-<dtype>.aneb; the checkpoint is
// removed afterwards.
func Build(configJSON []byte, seed uint64, name, dtype string) (string, error) {
	files, err := qwentok.Files()
	if err != nil {
		return "", err
	}
	return BuildWith(configJSON, seed, name, dtype, files)
}

// BuildWith is Build with the given tokenizer files.
func BuildWith(configJSON []byte, seed uint64, name, dtype string, files map[string][]byte) (string, error) {
	root, err := buildDir()
	if err != nil {
		return "", err
	}
	ckpt := filepath.Join(root, name+"-"+dtype+"-checkpoint")
	defer os.RemoveAll(ckpt)
	ctx := context.Background()
	if err := synth.WriteCheckpoint(ctx, ckpt, configJSON, files, synth.Options{Seed: seed}); err != nil {
		return "", err
	}
	out := filepath.Join(root, name+"-"+dtype+".aneb")
	if _, err := pack.Pack(ctx, ckpt, pack.Options{Output: out, DType: dtype, Name: name, Force: true}); err != nil {
		return "", err
	}
	return out, nil
}

// Cleanup removes every bundle built by this process. Call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
	}
}

// Rewrite copies the bundle at src to dst with its manifest changed by edit: the way tests make
// damaged or foreign bundles that pack would never write.
func Rewrite(src, dst string, edit func(m *format.Manifest)) error {
	return RewriteAdding(src, dst, nil, edit)
}

// RewriteAdding is Rewrite that also appends the tensor sections of add (name -> bytes), which
// the edited manifest may point at: the way tests give a hostile bundle consistent sizes.
func RewriteAdding(src, dst string, add map[string][]byte, edit func(m *format.Manifest)) error {
	b, err := format.Open(src)
	if err != nil {
		return err
	}
	defer b.Close()
	// Deep-copy the manifest through JSON so the open bundle's copy stays untouched.
	raw, err := json.Marshal(b.Manifest())
	if err != nil {
		return err
	}
	m := new(format.Manifest)
	if err := json.Unmarshal(raw, m); err != nil {
		return err
	}
	edit(m)
	w, err := format.Create(dst)
	if err != nil {
		return err
	}
	for _, s := range b.Sections() {
		data, err := b.Bytes(s)
		if err == nil {
			_, err = w.Add(s.Kind, s.Name, data)
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(add)) {
		if _, err := w.Add(format.KindTensors, name, add[name]); err != nil {
			w.Abort()
			return err
		}
	}
	if _, err := w.Commit(m); err != nil {
		w.Abort()
		return err
	}
	return nil
}

// WriteMinor2 copies the bundle at src to dst as a writer of format version 1.2 wrote it: the
// header's minor version 2, the manifest's format_version "1.2" and its ANE programs under
// "kernels", the key of minor versions 0 to 2. Tests use it to check that readers still take
// such bundles. The sections and the table are copied byte for byte; the header fields after
// the manifest (its length, the file size, the root digest) are those of the new manifest.
func WriteMinor2(src, dst string) error {
	b, err := format.Open(src)
	if err != nil {
		return err
	}
	defer b.Close()
	raw, err := json.Marshal(b.Manifest())
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	if p, ok := fields["programs"]; ok {
		fields["kernels"] = p
		delete(fields, "programs")
	}
	fields["format_version"] = json.RawMessage(`"1.2"`)
	man, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	h := b.Header()
	out := append(data[:h.ManifestOffset:h.ManifestOffset], man...)
	// Header fields, at the offsets package format documents; the root digest is the sha256
	// of the header with the digest zeroed, the table and the manifest.
	le := binary.LittleEndian
	le.PutUint16(out[6:], 2)                 // minor version
	le.PutUint64(out[48:], uint64(len(man))) // manifest length
	le.PutUint64(out[56:], uint64(len(out))) // file size
	clear(out[64:96])
	d := sha256.New()
	d.Write(out[:format.HeaderSize])
	d.Write(out[h.TableOffset : h.TableOffset+h.TableLength])
	d.Write(man)
	d.Sum(out[64:64])
	return os.WriteFile(dst, out, 0o644)
}
