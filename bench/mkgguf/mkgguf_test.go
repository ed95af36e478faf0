package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/synth"
)

// family is one supported architecture as the tests convert it, with what llama.cpp's
// converter writes for its tokenizer (read off the tokenizer files by hand).
type family struct {
	config string // configs/*.json, or testdata/model-*.json (its "config" and "seed")
	tok    string // testdata/<tok>-tokenizer
	typ    string // the output type argument
	arch   string // general.architecture
	pre    string // tokenizer.ggml.pre
	ids    map[string]uint32
	add    map[string]bool
	// spot are token ids whose text and type are checked by hand as well.
	spot map[int]struct {
		text string
		typ  int32
	}
}

var qwenSpot = map[int]struct {
	text string
	typ  int32
}{
	0:      {"!", 1},
	151643: {"<|endoftext|>", 3},
	151645: {"<|im_end|>", 3},
	151659: {"<|fim_prefix|>", 3}, // not special in tokenizer.json, but looks like a control token
	151667: {"<think>", 4},
	151935: {"[PAD151935]", 5},
}

var qwenIDs = map[string]uint32{"tokenizer.ggml.bos_token_id": 151643, "tokenizer.ggml.eos_token_id": 151645, "tokenizer.ggml.padding_token_id": 151643}

var families = map[string]family{
	"qwen2": {config: "configs/qwen2-tiny.json", tok: "qwen", typ: "f16", arch: "qwen2", pre: "qwen2",
		ids: qwenIDs, add: map[string]bool{"tokenizer.ggml.add_bos_token": false}, spot: qwenSpot},
	"qwen2-untied-bf16": {config: "configs/qwen2-tiny-untied.json", tok: "qwen", typ: "bf16", arch: "qwen2", pre: "qwen2",
		ids: qwenIDs, add: map[string]bool{"tokenizer.ggml.add_bos_token": false}, spot: qwenSpot},
	"qwen3-f32": {config: "testdata/model-qwen3-tiny.json", tok: "qwen", typ: "f32", arch: "qwen3", pre: "qwen2",
		ids: qwenIDs, add: map[string]bool{"tokenizer.ggml.add_bos_token": false}, spot: qwenSpot},
	"llama3": {config: "testdata/model-llama3-tiny.json", tok: "llama3", typ: "f16", arch: "llama", pre: "llama-bpe",
		ids: map[string]uint32{"tokenizer.ggml.bos_token_id": 128000, "tokenizer.ggml.eos_token_id": 128009},
		// Llama 3's post-processor prepends <|begin_of_text|>; its pair template has no separator.
		add: map[string]bool{"tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.add_sep_token": false},
		spot: map[int]struct {
			text string
			typ  int32
		}{0: {"!", 1}, 128000: {"<|begin_of_text|>", 3}, 128009: {"<|eot_id|>", 3}, 128255: {"<|reserved_special_token_250|>", 3}}},
}

// repoFile reads a file of the repository.
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	root, err := testtok.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeCheckpoint writes a SYNTH-1 checkpoint of fam's config with its real tokenizer.
func writeCheckpoint(t *testing.T, fam family) string {
	t.Helper()
	raw := repoFile(t, fam.config)
	cfg, seed := raw, uint64(7)
	if strings.HasPrefix(fam.config, "testdata/") {
		var g struct {
			Seed   uint64          `json:"seed"`
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			t.Fatal(err)
		}
		cfg, seed = g.Config, g.Seed
	}
	return writeCheckpointJSON(t, cfg, fam.tok, seed, "synth-"+fam.arch)
}

// writeCheckpointJSON writes a SYNTH-1 checkpoint of config.json cfg with the tokenizer of
// testdata/<tok>-tokenizer into a folder called name.
func writeCheckpointJSON(t *testing.T, cfg []byte, tok string, seed uint64, name string) string {
	t.Helper()
	tj, tc, err := testtok.Files(tok)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	files := map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": tc}
	if err := synth.WriteCheckpoint(context.Background(), dir, cfg, files, synth.Options{Seed: seed, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFamilies converts a SYNTH-1 checkpoint of each supported family and reads the file back:
// every metadata key and value, and every tensor's name, dimensions, type, offset and bytes.
func TestFamilies(t *testing.T) {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			fam := families[name]
			dir := writeCheckpoint(t, fam)
			out := filepath.Join(t.TempDir(), "model.gguf")
			var stdout, stderr bytes.Buffer
			if code := run([]string{dir, out, fam.typ}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			f, err := readGGUF(out)
			if err != nil {
				t.Fatal(err)
			}
			if f.version != 3 {
				t.Errorf("version %d; want 3", f.version)
			}
			if f.alignment != 32 {
				t.Errorf("alignment %d; want 32", f.alignment)
			}
			checkMetadata(t, f, fam, dir)
			checkTensors(t, f, fam, dir)
			entries, _ := os.ReadDir(filepath.Dir(out))
			if len(entries) != 1 {
				t.Errorf("output folder holds %d entries; want only model.gguf", len(entries))
			}
		})
	}
}

// readJSON decodes a JSON object with numbers kept as json.Number.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func u32v(v uint32) ggufValue             { return ggufValue{typ: 4, v: v} }
func f32v(v float32) ggufValue            { return ggufValue{typ: 6, v: v} }
func strv(v string) ggufValue             { return ggufValue{typ: 8, v: v} }
func boolv(v bool) ggufValue              { return ggufValue{typ: 7, v: v} }
func arrv(elem uint32, v []any) ggufValue { return ggufValue{typ: 9, elem: elem, v: v} }

// checkMetadata compares every key of f with what llama.cpp's converter writes for the
// checkpoint in dir, worked out here from config.json and the tokenizer files.
func checkMetadata(t *testing.T, f *ggufFile, fam family, dir string) {
	cfg := readJSON(t, filepath.Join(dir, "config.json"))
	num := func(key string) json.Number { return cfg[key].(json.Number) }
	u := func(key string) ggufValue {
		n, err := strconv.ParseUint(num(key).String(), 10, 32)
		if err != nil {
			t.Fatalf("config.json %s: %v", key, err)
		}
		return u32v(uint32(n))
	}
	fl := func(key string) ggufValue {
		x, err := strconv.ParseFloat(num(key).String(), 64)
		if err != nil {
			t.Fatalf("config.json %s: %v", key, err)
		}
		return f32v(float32(x))
	}
	a := fam.arch + "."
	want := map[string]ggufValue{
		"general.architecture":                 strv(fam.arch),
		"general.type":                         strv("model"),
		"general.name":                         strv(filepath.Base(dir)),
		"general.file_type":                    u32v(map[string]uint32{"f32": 0, "f16": 1, "bf16": 32}[fam.typ]),
		"general.quantization_version":         u32v(2),
		a + "block_count":                      u("num_hidden_layers"),
		a + "context_length":                   u("max_position_embeddings"),
		a + "embedding_length":                 u("hidden_size"),
		a + "feed_forward_length":              u("intermediate_size"),
		a + "attention.head_count":             u("num_attention_heads"),
		a + "attention.head_count_kv":          u("num_key_value_heads"),
		a + "rope.freq_base":                   fl("rope_theta"),
		a + "attention.layer_norm_rms_epsilon": fl("rms_norm_eps"),
		"tokenizer.ggml.model":                 strv("gpt2"),
		"tokenizer.ggml.pre":                   strv(fam.pre),
	}
	if _, ok := cfg["head_dim"]; ok {
		want[a+"attention.key_length"] = u("head_dim")
		want[a+"attention.value_length"] = u("head_dim")
	}
	if fam.arch == "llama" {
		want[a+"vocab_size"] = u("vocab_size")
		want[a+"rope.dimension_count"] = u("head_dim")
	}
	for k, id := range fam.ids {
		want[k] = u32v(id)
	}
	for k, b := range fam.add {
		want[k] = boolv(b)
	}
	tc := readJSON(t, filepath.Join(dir, "tokenizer_config.json"))
	if tmpl, ok := tc["chat_template"].(string); ok {
		want["tokenizer.chat_template"] = strv(tmpl)
	}
	tokens, types, merges := expectedVocab(t, dir, int(mustInt(t, num("vocab_size"))))
	want["tokenizer.ggml.tokens"] = arrv(8, tokens)
	want["tokenizer.ggml.token_type"] = arrv(5, types)
	want["tokenizer.ggml.merges"] = arrv(8, merges)

	for _, k := range f.keys {
		w, ok := want[k]
		if !ok {
			t.Errorf("unexpected key %s = %v", k, short(f.kvs[k].v))
			continue
		}
		if g := f.kvs[k]; !reflect.DeepEqual(g, w) {
			t.Errorf("key %s: type %d/%d value %v; want type %d/%d value %v", k, g.typ, g.elem, short(g.v), w.typ, w.elem, short(w.v))
		}
	}
	for k := range want {
		if _, ok := f.kvs[k]; !ok {
			t.Errorf("key %s is missing", k)
		}
	}
	gotTokens, gotTypes := f.kvs["tokenizer.ggml.tokens"].v.([]any), f.kvs["tokenizer.ggml.token_type"].v.([]any)
	for id, s := range fam.spot {
		if id >= len(gotTokens) || gotTokens[id] != s.text || gotTypes[id] != s.typ {
			t.Errorf("token %d: want %q of type %d", id, s.text, s.typ)
		}
	}
}

func mustInt(t *testing.T, n json.Number) int64 {
	v, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// short abbreviates long arrays in messages.
func short(v any) any {
	if a, ok := v.([]any); ok && len(a) > 4 {
		return fmt.Sprintf("%v ... (%d)", a[:4], len(a))
	}
	if s, ok := v.(string); ok && len(s) > 60 {
		return s[:60] + "..."
	}
	return v
}

// expectedVocab reads tokenizer.json: ids 0 .. vocabSize-1 with the vocab's spelling or the
// added token's content ("[PAD<id>]" for ids neither has), their llama.cpp types, and the
// merges as "a b".
func expectedVocab(t *testing.T, dir string, vocabSize int) (tokens, types, merges []any) {
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	tokens, types = make([]any, vocabSize), make([]any, vocabSize)
	for i := range tokens {
		tokens[i], types[i] = "[PAD"+strconv.Itoa(i)+"]", int32(5)
	}
	for s, id := range tj.Model.Vocab {
		tokens[id], types[id] = s, int32(1)
	}
	for _, a := range tj.AddedTokens {
		typ := int32(4)
		if a.Special || strings.HasPrefix(a.Content, "<|") && strings.HasSuffix(a.Content, "|>") {
			typ = 3
		}
		tokens[a.ID], types[a.ID] = a.Content, typ
	}
	var lines []string
	if json.Unmarshal(tj.Model.Merges, &lines) != nil {
		lines = nil // a failed decode may have filled part of it
		var pairs [][2]string
		if err := json.Unmarshal(tj.Model.Merges, &pairs); err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			lines = append(lines, p[0]+" "+p[1])
		}
	}
	for _, l := range lines {
		merges = append(merges, l)
	}
	return tokens, types, merges
}

// ggufNames maps the checkpoint's names to llama.cpp's (gguf-py's tensor map for these
// families), written out independently of mkgguf's table.
func ggufName(hf string) string {
	top := map[string]string{"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
	if n, ok := top[hf]; ok {
		return n
	}
	per := map[string]string{
		"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
		"self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
		"self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
		"self_attn.o_proj.weight": "attn_output.weight", "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
		"mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
	}
	parts := strings.SplitN(hf, ".", 4) // model.layers.N.rest
	if len(parts) == 4 && parts[1] == "layers" && per[parts[3]] != "" {
		return "blk." + parts[2] + "." + per[parts[3]]
	}
	return ""
}

// checkTensors compares every tensor of f with the checkpoint's: the names, the dimensions
// reversed, the type (F32 for norms and 1-D tensors), an aligned offset that overlaps no other
// tensor, and the bytes: each value converted from BF16 here, with Llama's q and k rows in
// llama.cpp's order.
func checkTensors(t *testing.T, f *ggufFile, fam family, dir string) {
	ck, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	cfg := readJSON(t, filepath.Join(dir, "config.json"))
	heads := int(mustInt(t, cfg["num_attention_heads"].(json.Number)))
	kvHeads := int(mustInt(t, cfg["num_key_value_heads"].(json.Number)))
	byName := map[string]ggufTensor{}
	for _, g := range f.tensors {
		byName[g.name] = g
	}
	weightType := map[string]uint32{"f32": 0, "f16": 1, "bf16": 30}[fam.typ]
	elemSize := map[uint32]uint64{0: 4, 1: 2, 30: 2}
	want := map[string]bool{}
	for _, hf := range ck.Names() {
		name := ggufName(hf)
		if name == "" {
			t.Fatalf("checkpoint tensor %s has no llama.cpp name in the test's map", hf)
		}
		want[name] = true
		g, ok := byName[name]
		if !ok {
			t.Errorf("tensor %s (%s) is missing", name, hf)
			continue
		}
		r := ck.Tensor(hf)
		dims := make([]uint64, len(r.Shape))
		for i, d := range r.Shape {
			dims[len(r.Shape)-1-i] = uint64(d)
		}
		if !reflect.DeepEqual(g.dims, dims) {
			t.Errorf("%s: dims %v; want %v (checkpoint shape %v reversed)", name, g.dims, dims, r.Shape)
		}
		typ := weightType
		if len(r.Shape) == 1 || strings.HasSuffix(name, "_norm.weight") {
			typ = 0
		}
		if g.typ != typ {
			t.Errorf("%s: type %d; want %d", name, g.typ, typ)
			continue
		}
		if r.RawDType != "BF16" {
			t.Fatalf("%s: checkpoint dtype %s; the test expects BF16", hf, r.RawDType)
		}
		rows := r.Shape[0]
		srcRow := func(i int) int { return i }
		if fam.arch == "llama" && (strings.Contains(hf, "q_proj") || strings.Contains(hf, "k_proj")) {
			h := heads
			if strings.Contains(hf, "k_proj") {
				h = kvHeads
			}
			srcRow = pairedRows(rows/h, h)
		}
		got, err := f.data(g, uint64(len(r.Data)/2)*elemSize[typ])
		if err != nil {
			t.Error(err)
			continue
		}
		exp := expectedBytes(r.Data, rows, typ, srcRow)
		if !bytes.Equal(got, exp) {
			t.Errorf("%s: data differs from the checkpoint's %s converted", name, hf)
		}
	}
	if fam.arch == "llama" {
		want[ropeFreqsName] = true
		checkRopeFreqs(t, f, byName[ropeFreqsName], cfg)
	}
	for _, g := range f.tensors {
		if !want[g.name] {
			t.Errorf("unexpected tensor %s", g.name)
		}
	}
	checkLayout(t, f, elemSize)
}

// pairedRows is the row order of llama.cpp's rotary layout, stated as what it is: in each head
// of d rows, output row 2i is checkpoint row i and output row 2i+1 is checkpoint row i + d/2,
// the two dimensions transformers' rotate_half pairs.
func pairedRows(d, heads int) func(int) int {
	return func(out int) int {
		h, within := out/d, out%d
		if within%2 == 0 {
			return h*d + within/2
		}
		return h*d + d/2 + within/2
	}
}

// expectedBytes converts BF16 checkpoint data (rows of equal length) to the GGUF type, one value
// at a time, taking output row i from checkpoint row srcRow(i).
func expectedBytes(src []byte, rows int, typ uint32, srcRow func(int) int) []byte {
	n := len(src) / 2
	cols := n / rows
	var out bytes.Buffer
	for i := 0; i < rows; i++ {
		s := srcRow(i)
		for j := 0; j < cols; j++ {
			bf := binary.LittleEndian.Uint16(src[2*(s*cols+j):])
			f := math.Float32frombits(uint32(bf) << 16)
			switch typ {
			case 0:
				binary.Write(&out, binary.LittleEndian, f)
			case 1:
				binary.Write(&out, binary.LittleEndian, half.F32ToF16Scalar(f))
			case 30:
				binary.Write(&out, binary.LittleEndian, bf)
			}
		}
	}
	return out.Bytes()
}

// checkRopeFreqs checks Llama 3.1's rope_freqs.weight against the scaling rule computed in
// float64: 1 for short wavelengths, factor for long ones, the smooth blend between.
func checkRopeFreqs(t *testing.T, f *ggufFile, g ggufTensor, cfg map[string]any) {
	hd := int(mustInt(t, cfg["head_dim"].(json.Number)))
	theta, _ := cfg["rope_theta"].(json.Number).Float64()
	rs := cfg["rope_scaling"].(map[string]any)
	get := func(k string) float64 { v, _ := rs[k].(json.Number).Float64(); return v }
	factor, low, high, orig := get("factor"), get("low_freq_factor"), get("high_freq_factor"), get("original_max_position_embeddings")
	if g.typ != 0 || !reflect.DeepEqual(g.dims, []uint64{uint64(hd / 2)}) {
		t.Fatalf("rope_freqs.weight: type %d dims %v; want F32 [%d]", g.typ, g.dims, hd/2)
	}
	b, err := f.data(g, uint64(hd/2)*4)
	if err != nil {
		t.Fatal(err)
	}
	band := 0
	for i := 0; i < hd/2; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		wavelen := 2 * math.Pi * math.Pow(theta, float64(2*i)/float64(hd))
		want := 1.0
		switch {
		case wavelen > orig/low:
			want = factor
		case wavelen >= orig/high:
			s := (orig/wavelen - low) / (high - low)
			want = 1 / ((1-s)/factor + s)
			band++
		}
		if math.Abs(float64(got)-want) > 1e-5*want {
			t.Errorf("rope_freqs[%d] = %v; want %v", i, got, want)
		}
	}
	if band == 0 {
		t.Errorf("no frequency of head_dim %d falls in the blended band; the check covers too little", hd)
	}
}

// checkLayout checks that every tensor starts at an aligned offset and that no two overlap.
func checkLayout(t *testing.T, f *ggufFile, elemSize map[uint32]uint64) {
	ts := append([]ggufTensor(nil), f.tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].offset < ts[j].offset })
	var end uint64
	for _, g := range ts {
		if g.offset%f.alignment != 0 {
			t.Errorf("%s: offset %d is not a multiple of %d", g.name, g.offset, f.alignment)
		}
		if g.offset < end {
			t.Errorf("%s: offset %d overlaps the previous tensor (ends at %d)", g.name, g.offset, end)
		}
		n := elemSize[g.typ]
		for _, d := range g.dims {
			n *= d
		}
		end = g.offset + n
	}
	if f.dataStart+end > uint64(len(f.raw)) {
		t.Errorf("the last tensor ends at %d, past the file's %d bytes", f.dataStart+end, len(f.raw))
	}
}
