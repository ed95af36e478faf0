package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/internal/fileutil"
	"github.com/anepack/anepack/internal/regfile"
)

// Checkpoint is an open Hugging Face safetensors checkpoint: one model.safetensors or the shards
// named by model.safetensors.index.json. Close unmaps every file.
type Checkpoint struct {
	Dir     string
	Files   []string // the safetensors files, relative to Dir, in order
	tensors map[string]*TensorRef
	// alias maps an architecture's name to the name this checkpoint uses, where they differ
	// (GPT-2 without its "transformer." prefix); Check fills it.
	alias  map[string]string
	mapped []*stFile
	// mlxGroup is the group size of an MLX 4-bit checkpoint's quantized weights (UseMLX4).
	mlxGroup int
}

// Index file and single-file names Hugging Face uses.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// OpenCheckpoint opens the safetensors files of dir. With an index file, every shard it names
// must be a plain file name inside dir, and a tensor listed in the index must be in its shard.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, tensors: make(map[string]*TensorRef)}
	indexPath := filepath.Join(dir, IndexFile)
	weightMap, err := readIndex(indexPath)
	switch {
	case err == nil:
		shards := make([]string, 0)
		for _, f := range weightMap {
			if !slices.Contains(shards, f) {
				shards = append(shards, f)
			}
		}
		sort.Strings(shards)
		c.Files = shards
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(filepath.Join(dir, SingleFile)); err != nil {
			return nil, fmt.Errorf("%s: no %s and no %s: expected a Hugging Face safetensors checkpoint", dir, SingleFile, IndexFile)
		}
		c.Files = []string{SingleFile}
	default:
		return nil, err
	}
	var all []*TensorRef
	for _, name := range c.Files {
		path := filepath.Join(dir, name)
		f, refs, err := openSafetensors(path)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.mapped = append(c.mapped, f)
		for i := range refs {
			r := &refs[i]
			if prev, dup := c.tensors[r.Name]; dup {
				c.Close()
				return nil, &FileError{File: path, Tensor: r.Name, Msg: "duplicate: also in " + prev.File, Err: ErrFormat}
			}
			c.tensors[r.Name] = r
			all = append(all, r)
		}
	}
	for _, r := range all {
		shard := filepath.Base(r.File)
		if weightMap != nil && weightMap[r.Name] != shard {
			c.Close()
			if weightMap[r.Name] == "" {
				return nil, &FileError{File: r.File, Tensor: r.Name, Msg: "not listed in " + IndexFile, Err: ErrFormat}
			}
			return nil, &FileError{File: r.File, Tensor: r.Name, Msg: IndexFile + " places it in " + weightMap[r.Name], Err: ErrFormat}
		}
	}
	for name, shard := range weightMap {
		if c.tensors[name] == nil {
			c.Close()
			return nil, &FileError{File: filepath.Join(dir, shard), Tensor: name, Msg: "listed in " + IndexFile + " but missing from the shard", Err: ErrFormat}
		}
	}
	return c, nil
}

// readIndex reads model.safetensors.index.json's weight_map and checks that each shard is a
// plain file name (never a path that could leave the checkpoint directory).
func readIndex(path string) (map[string]string, error) {
	b, err := regfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, &FileError{File: path, Msg: "not valid JSON: " + err.Error(), Err: ErrFormat}
	}
	if len(idx.WeightMap) == 0 {
		return nil, &FileError{File: path, Msg: `field "weight_map": missing or empty; expected {"tensor name": "model-00001-of-0000N.safetensors", ...}`, Err: ErrFormat}
	}
	for name, shard := range idx.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || strings.ContainsAny(shard, `/\`) || shard == "." || shard == ".." || !strings.HasSuffix(shard, ".safetensors") {
			return nil, &FileError{File: path, Tensor: name, Msg: fmt.Sprintf("weight_map names shard %q; expected a .safetensors file name inside the checkpoint directory", shard), Err: ErrFormat}
		}
	}
	return idx.WeightMap, nil
}

// Tensor returns the tensor called name (the architecture's name, once Check has matched the
// checkpoint's spelling of it), or nil.
func (c *Checkpoint) Tensor(name string) *TensorRef {
	if a, ok := c.alias[name]; ok {
		name = a
	}
	return c.tensors[name]
}

// Names lists every tensor name, sorted.
func (c *Checkpoint) Names() []string {
	names := make([]string, 0, len(c.tensors))
	for n := range c.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Check compares the checkpoint with the tensors the architecture expects
// (arch.Family.CheckpointTensors: each expert's matrices apart where the family's checkpoints
// store them so): every expected tensor must exist with the exact shape (a weight the family stores [in, out] is compared that way).
// A name may lack the family's optional prefix; Tensor then finds it by the architecture's
// name. It returns the names of tensors the architecture does not use (ignored, like
// transformers does; the caller warns), e.g. lm_head.weight in a tied checkpoint; buffers the
// family lists in Ignore, and the parts under its IgnorePrefixes, are skipped silently.
func (c *Checkpoint) Check(cfg *arch.Config) (unused []string, err error) {
	fam, err := arch.Lookup(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkQuantized(c, cfg); err != nil {
		return nil, err
	}
	want := fam.CheckpointTensors(cfg)
	used := make(map[string]bool, len(want))
	c.alias = map[string]string{}
	for _, t := range want {
		name := t.Name
		r := c.tensors[name]
		if r == nil && fam.OptionalPrefix != "" && strings.HasPrefix(name, fam.OptionalPrefix) {
			if short := strings.TrimPrefix(name, fam.OptionalPrefix); c.tensors[short] != nil {
				name, r = short, c.tensors[short]
				c.alias[t.Name] = short
			}
		}
		if r == nil {
			// Stored in the MXFP4 format (gpt-oss's experts): X_blocks and X_scales.
			if parts, ok, err := c.checkMXFP4(t); err != nil {
				return nil, err
			} else if ok {
				for _, n := range parts {
					used[c.nameOf(n)] = true
				}
				continue
			}
			return nil, fmt.Errorf("%s: tensor %s is missing; %s with this config.json needs it (shape %v)", c.Dir, t.Name, cfg.Architecture, t.CheckpointShape())
		}
		used[name] = true
		if side, ok, err := c.checkMLX4(t); err != nil {
			return nil, err
		} else if ok {
			for _, n := range side {
				used[c.nameOf(n)] = true
			}
			continue
		}
		if !r.DType.IsFloat() {
			return nil, &FileError{File: r.File, Tensor: name, Msg: fmt.Sprintf("dtype %s; expected BF16, F16 or F32", r.RawDType)}
		}
		if shape := t.CheckpointShape(); !slices.Equal(r.Shape, shape) {
			what := "config.json"
			switch {
			case t.Role == arch.RoleNorm && len(shape) == 1 && shape[0] == cfg.HeadDim:
				what = "config.json's head_dim"
			case t.Group == arch.GroupExperts:
				what = "config.json's moe_intermediate_size and hidden_size"
			case t.Role == arch.RoleRouter:
				what = "config.json's num_experts and hidden_size"
			}
			return nil, &FileError{File: r.File, Tensor: name, Msg: fmt.Sprintf("shape %v does not match %s; expected %v", r.Shape, what, shape)}
		}
	}
	for _, n := range c.Names() {
		if !used[n] && !ignored(fam, n) {
			unused = append(unused, n)
		}
	}
	return unused, nil
}

// nameOf returns the checkpoint's own name for an architecture name (through the alias).
func (c *Checkpoint) nameOf(name string) string {
	if a, ok := c.alias[name]; ok {
		return a
	}
	return name
}

// ignored reports whether a checkpoint tensor is one of the family's non-weight buffers or
// belongs to a part of the model text generation does not use (a vision tower).
func ignored(fam *arch.Family, name string) bool {
	for _, suffix := range fam.Ignore {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	for _, prefix := range fam.IgnorePrefixes {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// quantizedMarkers are tensor name suffixes of quantization schemes anepack does not read.
var quantizedMarkers = map[string]string{
	".qweight":       "GPTQ/AWQ (qweight, qzeros, scales)",
	".qzeros":        "GPTQ/AWQ (qweight, qzeros, scales)",
	".weight_packed": "compressed-tensors (weight_packed)",
	".SCB":           "bitsandbytes int8 (SCB)",
	".absmax":        "bitsandbytes 4-bit (absmax, quant_map)",
}

// checkQuantized refuses a checkpoint whose weights were already quantized in a scheme this
// reader does not convert, naming the scheme, before a confusing "tensor missing" error.
func checkQuantized(c *Checkpoint, cfg *arch.Config) error {
	for _, n := range c.Names() {
		for suffix, scheme := range quantizedMarkers {
			if strings.HasSuffix(n, suffix) {
				return &FileError{File: c.tensors[n].File, Tensor: n,
					Msg: fmt.Sprintf("the checkpoint is quantized with %s, which anepack does not read; use the unquantized (BF16/F16/F32) %s checkpoint and anepack --dtype", scheme, cfg.Architecture)}
			}
		}
	}
	return nil
}

// Done releases the resident pages of a tensor that has been converted, so converting a
// multi-gigabyte checkpoint keeps a small resident set. The data stay readable (they are paged
// back in from the page cache if touched again).
func (c *Checkpoint) Done(r *TensorRef) {
	for _, f := range c.mapped {
		if f.path != r.File || len(f.data) == 0 || len(r.Data) == 0 {
			continue
		}
		start := int(uintptrDiff(r.Data, f.data))
		end := start + len(r.Data)
		page := os.Getpagesize()
		lo := (start + page - 1) / page * page // only whole pages owned by this tensor
		hi := end / page * page
		if hi > lo {
			fileutil.DropPages(f.data[lo:hi])
		}
	}
}

// Close unmaps all files. Tensor data must not be used afterwards.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.mapped {
		if err := fileutil.Unmap(f.data); err != nil && first == nil {
			first = err
		}
	}
	c.mapped = nil
	return first
}
