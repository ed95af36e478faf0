package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/bench/internal/gguf"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/internal/regfile"
)

// target is how llama.cpp names and lays out one Hugging Face architecture.
type target struct {
	// arch is llama.cpp's architecture name (general.architecture and the key prefix).
	arch string
	// llamaKeys adds the keys llama.cpp's converter writes for its LLaMA class only:
	// {arch}.vocab_size and {arch}.rope.dimension_count.
	llamaKeys bool
	// interleavedRoPE says llama.cpp's graph for the architecture rotates adjacent pairs of a
	// head's dimensions (GPT-J style) where transformers rotates its two halves: q and k rows
	// are reordered to match (permuteRows). Qwen2 and Qwen3 run llama.cpp's NeoX-style RoPE,
	// the halves, and need no reordering.
	interleavedRoPE bool
}

// targets lists the architectures mkgguf converts, by config.json's architectures[0].
var targets = map[string]target{
	"Qwen2ForCausalLM": {arch: "qwen2"},
	"Qwen3ForCausalLM": {arch: "qwen3"},
	"LlamaForCausalLM": {arch: "llama", llamaKeys: true, interleavedRoPE: true},
}

// supportedTargets returns the supported architecture names, sorted.
func supportedTargets() string {
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// fileType is an output type: llama.cpp's general.file_type and the type of the 2-D weights.
type fileType struct {
	code   uint32 // llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_BF16 32
	weight gguf.TensorType
}

var fileTypes = map[string]fileType{
	"f32":  {0, gguf.F32},
	"f16":  {1, gguf.F16},
	"bf16": {32, gguf.BF16},
}

// ggmlQuantVersion is GGML_QNT_VERSION, which llama.cpp's converter writes into every file as
// general.quantization_version.
const ggmlQuantVersion = 2

// model is a checkpoint opened for conversion, with the GGUF file that describes it.
type model struct {
	arch     string
	ckpt     *convert.Checkpoint
	conv     convert.Converter
	file     gguf.File
	warnings []string
}

// Close unmaps the checkpoint.
func (m *model) Close() { m.ckpt.Close() }

// openModel reads and checks everything in dir before anything is written: config.json, the
// safetensors files against the architecture's tensor list, the tokenizer.
func openModel(dir string, ft fileType) (*model, error) {
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := regfile.ReadFile(cfgPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no config.json: expected a Hugging Face checkpoint directory", dir)
		}
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", cfgPath, err)
	}
	var archs []string
	if a, ok := fields["architectures"]; ok && json.Unmarshal(a, &archs) == nil && len(archs) > 0 {
		if _, ok := targets[archs[0]]; !ok {
			return nil, fmt.Errorf("%s: field \"architectures\": %q is not supported by mkgguf; supported: %s", cfgPath, archs[0], supportedTargets())
		}
	}
	// ParseConfig reports a missing or malformed architectures field, and every other one.
	cfg, err := arch.ParseConfig(raw, cfgPath)
	if err != nil {
		return nil, err
	}
	tg := targets[cfg.Architecture]
	if cfg.RotaryDim() != cfg.HeadDim {
		return nil, fmt.Errorf("%s: field \"partial_rotary_factor\": %v; mkgguf converts only models whose RoPE rotates every dimension of a head", cfgPath, cfg.PartialRotaryFactor)
	}
	if tg.interleavedRoPE && cfg.HeadDim%2 != 0 {
		return nil, fmt.Errorf("%s: field \"head_dim\": %d; expected an even number", cfgPath, cfg.HeadDim)
	}
	fam, err := arch.Lookup(cfg)
	if err != nil {
		return nil, err
	}
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	m := &model{arch: tg.arch, ckpt: ckpt}
	ok := false
	defer func() {
		if !ok {
			ckpt.Close()
		}
	}()
	unused, err := ckpt.Check(cfg)
	if err != nil {
		return nil, err
	}
	if len(unused) > 0 {
		m.warnings = append(m.warnings, fmt.Sprintf("%s: tensors %s are not part of %s and are left out", dir, strings.Join(unused, ", "), cfg.Architecture))
	}
	voc, err := readVocab(dir, tg, cfg, fields)
	if err != nil {
		return nil, err
	}
	m.file.KVs = append(m.file.KVs,
		gguf.KV{Key: "general.architecture", Value: gguf.String(tg.arch)},
		gguf.KV{Key: "general.type", Value: gguf.String("model")},
		gguf.KV{Key: "general.name", Value: gguf.String(checkpointName(dir))},
	)
	m.file.KVs = append(m.file.KVs, hparams(tg, cfg, fields)...)
	m.file.KVs = append(m.file.KVs,
		gguf.KV{Key: "general.file_type", Value: gguf.Uint32(ft.code)},
		gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32(ggmlQuantVersion)},
	)
	m.file.KVs = append(m.file.KVs, voc.kvs()...)
	if m.file.Tensors, err = m.tensors(tg, fam, cfg, ft); err != nil {
		return nil, err
	}
	ok = true
	return m, nil
}

// checkpointName is general.name: the checkpoint folder's name, which is what llama.cpp's
// converter falls back to when the folder has no model card.
func checkpointName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(dir)
}

// hparams returns the {arch}.* keys of llama.cpp's converter for a dense decoder.
func hparams(tg target, c *arch.Config, fields map[string]json.RawMessage) []gguf.KV {
	a := tg.arch + "."
	kvs := []gguf.KV{
		{Key: a + "block_count", Value: gguf.Uint32(uint32(c.NumHiddenLayers))},
		{Key: a + "context_length", Value: gguf.Uint32(uint32(c.MaxPositionEmbeddings))},
		{Key: a + "embedding_length", Value: gguf.Uint32(uint32(c.HiddenSize))},
		{Key: a + "feed_forward_length", Value: gguf.Uint32(uint32(c.IntermediateSize))},
		{Key: a + "attention.head_count", Value: gguf.Uint32(uint32(c.NumAttentionHeads))},
		{Key: a + "attention.head_count_kv", Value: gguf.Uint32(uint32(c.NumKeyValueHeads))},
		{Key: a + "rope.freq_base", Value: gguf.Float32(float32(c.RopeTheta))},
		{Key: a + "attention.layer_norm_rms_epsilon", Value: gguf.Float32(float32(c.RMSNormEps))},
	}
	// The converter writes the head size only when config.json states it (Qwen3 and Llama 3.1+
	// do; llama.cpp otherwise takes embedding_length / head_count).
	if hd, ok := fields["head_dim"]; ok && string(hd) != "null" {
		kvs = append(kvs,
			gguf.KV{Key: a + "attention.key_length", Value: gguf.Uint32(uint32(c.HeadDim))},
			gguf.KV{Key: a + "attention.value_length", Value: gguf.Uint32(uint32(c.HeadDim))})
	}
	if tg.llamaKeys {
		kvs = append(kvs,
			gguf.KV{Key: a + "vocab_size", Value: gguf.Uint32(uint32(c.VocabSize))},
			gguf.KV{Key: a + "rope.dimension_count", Value: gguf.Uint32(uint32(c.HeadDim))})
	}
	return kvs
}
