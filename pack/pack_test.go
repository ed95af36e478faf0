package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/internal/sttest"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/synth"
	"github.com/anepack/anepack/tokenizer"
)

// synthCheckpoint writes a SYNTH-1 checkpoint of configs/<name>.json into a temp dir.
func synthCheckpoint(t testing.TB, name string, seed uint64) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("..", "configs", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := qwentok.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := synth.WriteCheckpoint(context.Background(), dir, cfg, tok, synth.Options{Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func packTo(t *testing.T, dir string, opts Options) (*Result, *format.Bundle) {
	t.Helper()
	if opts.Output == "" {
		opts.Output = filepath.Join(t.TempDir(), "model.aneb")
	}
	res, err := Pack(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := format.Open(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Verify(nil); err != nil {
		t.Fatal(err)
	}
	return res, b
}

// viewBytes concatenates a tensor view's parts.
func viewBytes(t *testing.T, b *format.Bundle, v *format.Tensor) []byte {
	t.Helper()
	var out []byte
	rows := 0
	for _, p := range v.Parts {
		s, ok := b.Section(p.Section)
		if !ok {
			t.Fatalf("%s: section %s missing", v.Name, p.Section)
		}
		data, err := b.Bytes(s)
		if err != nil {
			t.Fatal(err)
		}
		if p.Offset%64 != 0 || p.Offset+p.Size > int64(len(data)) {
			t.Fatalf("%s: part at %d+%d outside section %s (%d bytes) or unaligned", v.Name, p.Offset, p.Size, p.Section, len(data))
		}
		out = append(out, data[p.Offset:p.Offset+p.Size]...)
		rows += p.Rows
	}
	want := v.Shape[0]
	if len(v.Shape) == 3 { // a stacked expert weight: experts·out rows ([C, 1, K] parameters: C)
		want *= v.Shape[1]
	}
	if rows != want {
		t.Fatalf("%s: parts hold %d rows; shape %v", v.Name, rows, v.Shape)
	}
	return out
}

// checkViews compares every tensor view with the source tensor converted independently.
func checkViews(t *testing.T, dir string, b *format.Bundle, linear dtype.DType) {
	t.Helper()
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	m := b.Manifest()
	var cfg arch.Config
	if err := json.Unmarshal(m.Model.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	fam, _ := arch.Lookup(&cfg)
	for _, spec := range fam.Tensors(&cfg) {
		v := m.FindTensor(spec.Name)
		if v == nil {
			t.Fatalf("manifest lacks %s", spec.Name)
		}
		want := linear
		switch spec.Role {
		case arch.RoleNorm, arch.RoleBias, arch.RoleParam, arch.RoleRouter:
			want = dtype.F32
		case arch.RoleEmbedding:
			want = dtype.F16
		}
		if v.DType != want.String() {
			t.Errorf("%s stored as %s; want %s", spec.Name, v.DType, want)
		}
		var conv convert.Converter
		var buf bytes.Buffer
		sources := []string{spec.Name}
		if spec.Sources != nil { // a stacked expert weight: every expert's matrices in turn
			sources = nil
			for _, src := range spec.Sources {
				sources = append(sources, src.Name)
			}
		}
		for _, name := range sources {
			if err := conv.WriteTensor(&buf, ckpt.Tensor(name), want); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(viewBytes(t, b, v), buf.Bytes()) {
			t.Errorf("%s: bundle bytes differ from the converted checkpoint tensor", spec.Name)
		}
	}
}

func TestPackTiedFP16(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	res, b := packTo(t, dir, Options{})
	checkViews(t, dir, b, dtype.F16)
	m := b.Manifest()
	if m.Model.Name != "qwen2-tiny" || m.Model.DType != "f16" || m.Provenance.Source != "local" {
		t.Errorf("model %+v provenance %+v", m.Model, m.Provenance)
	}
	// The tied embedding is stored once, in the LM-head blobs.
	emb := m.FindTensor("model.embed_tokens.weight")
	if len(emb.Parts) != 5 || !strings.HasPrefix(emb.Parts[0].Section, "blob/lm_head.") { // 32000-row chunks
		t.Errorf("tied embedding parts %+v", emb.Parts)
	}
	// Every linear weight's view is the payload of a 0xDEADBEEF record of an fp16 blob.
	for _, v := range m.Tensors {
		s, _ := b.Section(v.Parts[0].Section)
		if s.Kind != format.KindBlob {
			continue
		}
		data, _ := b.Bytes(s)
		f, err := blobfile.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		rec, err := f.RecordAt(v.Parts[0].Offset - blobfile.RecordSize)
		if err != nil || rec.DType != blobfile.FP16 || rec.Size != v.Parts[0].Size {
			t.Errorf("%s: record %+v err %v", v.Name, rec, err)
		}
	}
	names := map[string]bool{}
	for _, s := range b.Sections() {
		names[s.Name] = true
	}
	for _, want := range []string{"file/config.json", "file/tokenizer.json", "file/tokenizer_config.json", "tokenizer", "tensors", "blob/layers.0.attn_qkv", "blob/layers.1.mlp", "blob/layers.0.attn_o", "blob/lm_head.2"} {
		if !names[want] {
			t.Errorf("section %s missing", want)
		}
	}
	var files []string
	for _, f := range m.Provenance.Files {
		files = append(files, f.Name)
		if len(f.SHA256) != 64 {
			t.Errorf("%s: digest %q", f.Name, f.SHA256)
		}
	}
	if strings.Join(files, ",") != "config.json,tokenizer.json,tokenizer_config.json,model.safetensors" {
		t.Errorf("provenance files %v", files)
	}
	if res.Size != int64(b.Header().FileSize) {
		t.Errorf("result size %d, header %d", res.Size, b.Header().FileSize)
	}
	raw, _ := json.Marshal(m)
	if bytes.Contains(raw, []byte(dir)) {
		t.Error("manifest contains the local checkpoint path")
	}
}

func TestPackUntiedF32(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny-untied", 2)
	_, b := packTo(t, dir, Options{DType: "f32"})
	checkViews(t, dir, b, dtype.F32)
	if b.Manifest().Conversion != nil {
		t.Error("an f32 bundle reports FP16 conversion losses")
	}
	if v := b.Manifest().FindTensor("lm_head.weight"); v == nil || len(v.Parts) != 5 { // 151936 rows in 32000-row chunks
		t.Errorf("lm_head view %+v", v)
	}
}

// TestShardedMatchesSingleFile splits the checkpoint into shards with an index; the bundle's
// weight sections must be identical to packing the single file.
func TestShardedMatchesSingleFile(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny-untied", 2)
	_, single := packTo(t, dir, Options{})
	shardDir := filepath.Join(t.TempDir(), "sharded")
	splitIntoShards(t, dir, shardDir)
	_, sharded := packTo(t, shardDir, Options{Name: "qwen2-tiny-untied"})
	a, c := single.Sections(), sharded.Sections()
	if len(a) != len(c) {
		t.Fatalf("%d sections vs %d", len(a), len(c))
	}
	for i := range a {
		if a[i].Name != c[i].Name || a[i].SHA256 != c[i].SHA256 {
			t.Errorf("section %s differs from %s", a[i].Name, c[i].Name)
		}
	}
}

// splitIntoShards rewrites dir's model.safetensors as two shards plus an index in out.
func splitIntoShards(t *testing.T, dir, out string) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	names := ckpt.Names()
	weightMap := map[string]string{}
	for k, part := range [][]string{names[:len(names)/2], names[len(names)/2:]} {
		shard := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[k]
		var ts []sttest.Tensor
		for _, n := range part {
			r := ckpt.Tensor(n)
			ts = append(ts, sttest.New(n, r.DType.Safetensors(), r.Shape, r.Data))
			weightMap[n] = shard
		}
		if err := os.WriteFile(filepath.Join(out, shard), sttest.Build(ts), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	os.WriteFile(filepath.Join(out, convert.IndexFile), idx, 0o644)
	for _, f := range []string{ConfigFile, TokenizerFile, TokenizerConfigFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(out, f), b, 0o644)
	}
}

func TestBadInputs(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	copyDir := func(t *testing.T, mutate func(d string)) string {
		d := filepath.Join(t.TempDir(), "ckpt")
		os.MkdirAll(d, 0o755)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			os.WriteFile(filepath.Join(d, e.Name()), b, 0o644)
		}
		mutate(d)
		return d
	}
	editConfig := func(f func(map[string]any)) func(string) {
		return func(d string) {
			var m map[string]any
			b, _ := os.ReadFile(filepath.Join(d, ConfigFile))
			json.Unmarshal(b, &m)
			f(m)
			b, _ = json.Marshal(m)
			os.WriteFile(filepath.Join(d, ConfigFile), b, 0o644)
		}
	}
	cases := []struct {
		name   string
		dir    string
		output string
		want   string
	}{
		{"missing config field", copyDir(t, editConfig(func(m map[string]any) { delete(m, "hidden_size") })), "", `config.json: field "hidden_size": missing`},
		{"unsupported architecture", copyDir(t, editConfig(func(m map[string]any) { m["architectures"] = []string{"MambaForCausalLM"} })), "", `"MambaForCausalLM" is not supported`},
		{"shape does not match config", copyDir(t, editConfig(func(m map[string]any) { m["intermediate_size"] = 128 })), "", "does not match config.json"},
		{"missing tokenizer", copyDir(t, func(d string) { os.Remove(filepath.Join(d, TokenizerFile)) }), "", "tokenizer.json: missing"},
		{"unsupported tokenizer model", copyDir(t, func(d string) {
			var tok map[string]any
			b, _ := os.ReadFile(filepath.Join(d, TokenizerFile))
			json.Unmarshal(b, &tok)
			tok["model"].(map[string]any)["type"] = "Unigram"
			b, _ = json.Marshal(tok)
			os.WriteFile(filepath.Join(d, TokenizerFile), b, 0o644)
		}), "", "Unigram"},
		{"output in a missing directory", dir, filepath.Join(t.TempDir(), "no", "such", "x.aneb"), "does not exist"},
		{"bad dtype", dir, "", "dtype"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.output
			if out == "" {
				out = filepath.Join(t.TempDir(), "x.aneb")
			}
			opts := Options{Output: out}
			if tc.name == "bad dtype" {
				opts.DType = "int3"
			}
			_, err := Pack(context.Background(), tc.dir, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want it to mention %q", err, tc.want)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Error("a bundle was written despite the error")
			}
		})
	}
}

func TestRefusesToOverwrite(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	out := filepath.Join(t.TempDir(), "m.aneb")
	os.WriteFile(out, []byte("precious"), 0o644)
	if _, err := Pack(context.Background(), dir, Options{Output: out}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Fatal("existing file was changed")
	}
	if _, err := Pack(context.Background(), dir, Options{Output: out, Force: true}); err != nil {
		t.Fatal(err)
	}
}

// TestCancelMidWrite cancels while weights are being written: no bundle and no temp file remain.
func TestCancelMidWrite(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "m.aneb")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Pack(ctx, dir, Options{Output: out, Progress: func(done, total int64) {
		if done > total/3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	ents, _ := os.ReadDir(outDir)
	for _, e := range ents {
		t.Errorf("left behind %s", e.Name())
	}
}

// TestProgramsCompileInSim checks every ANE program the bundle lists: its MIL text (a byte range
// of the mil section) parses, and compiles in the simulator against the bundle's own blob
// sections, which checks each BLOBFILE offset points at a 0xDEADBEEF record of the declared
// dtype and size.
func TestProgramsCompileInSim(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	_, b := packTo(t, dir, Options{ANESeqs: []int{32, 64}})
	m := b.Manifest()
	// 2 layers x 3 groups x 2 buckets + 5 LM-head chunks (151936 rows in chunks of at most 32000).
	if len(m.Programs) != 2*3*2+5 {
		t.Fatalf("%d programs", len(m.Programs))
	}
	if m.ANE == nil || m.ANE.LMHeadRows != 32000 || len(m.ANE.Seqs) != 2 {
		t.Errorf("manifest ane options %+v", m.ANE)
	}
	milSec, ok := b.Section(MILSection)
	if !ok || milSec.Kind != format.KindMIL {
		t.Fatal("no mil section")
	}
	text, _ := b.Bytes(milSec)
	cache := mil.NewWeightCache()
	for _, k := range m.Programs {
		prog, err := mil.Parse(text[k.MILOffset : k.MILOffset+k.MILSize])
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		weights := map[string][]byte{}
		for _, w := range k.Weights {
			s, ok := b.Section(w.Section)
			if !ok {
				t.Fatalf("%s: weight section %s missing", k.Name, w.Section)
			}
			weights[w.Path], _ = b.Bytes(s)
		}
		if _, err := prog.CompileWith(weights, mil.CompileOptions{Cache: cache}); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
	}
}

func TestNoPrograms(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	_, b := packTo(t, dir, Options{NoPrograms: true})
	if len(b.Manifest().Programs) != 0 {
		t.Fatal("programs written with NoPrograms")
	}
	if _, ok := b.Section(MILSection); ok {
		t.Fatal("mil section written with NoPrograms")
	}
}

// TestChatTemplateFile packs a checkpoint that keeps its chat template in chat_template.jinja:
// the bundle's tokenizer renders that template.
func TestChatTemplateFile(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	os.WriteFile(filepath.Join(dir, ChatTemplateFile), []byte("{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"), 0o644)
	_, b := packTo(t, dir, Options{NoPrograms: true})
	s, _ := b.Section(TokenizerSection)
	data, _ := b.Bytes(s)
	tk, err := tokenizer.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tk.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "hi"}}, tokenizer.ChatOptions{})
	if err != nil || got != "[user:hi]" {
		t.Fatalf("rendered %q, err %v", got, err)
	}
	if _, ok := b.Section(FilePrefix + ChatTemplateFile); !ok {
		t.Error("chat_template.jinja not kept verbatim")
	}
}
