package pack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/milgen"
)

// Version is the producer version recorded in every bundle.
const Version = "0.1.0"

// Options controls Pack.
type Options struct {
	// DType is the storage type of linear weights (the LM head included): "f16" (default),
	// "f32", "int8" (q8: int8 per row with an fp16 scale) or "int4" (q4: uint4 in groups of
	// GroupSize inputs with an fp16 scale and offset each; the LM head stays int8). Untied
	// embeddings are FP16, norms and biases always F32.
	DType string
	// GroupSize is the int4 group size (32, 64 or 128); 0 means blobplan.DefaultGroupSize.
	GroupSize int
	// Output is the bundle path; empty means "<model name>.aneb" in the current directory.
	Output string
	// Force overwrites an existing output file.
	Force bool
	// Name is the model name recorded in the manifest and used for the default output name;
	// empty means the checkpoint directory's base name.
	Name string
	// Provenance describes where the checkpoint came from; Files is filled in by Pack.
	// The zero value means a local directory.
	Provenance format.Provenance
	// KnownDigests maps source file names to sha256 hex digests already verified (e.g. by the
	// hub client), so Pack need not hash those files again.
	KnownDigests map[string]string
	// Progress, if set, is called as weights are written: bytes done and total.
	Progress func(done, total int64)
	// ANESeqs are the sequence-length buckets (multiples of 32) of the ANE prefill programs;
	// nil means milgen.DefaultSeqs. S = 32 is always generated: it also serves decode.
	ANESeqs []int
	// NoPrograms skips generating ANE programs (the weight blobs are written regardless, since
	// the CPU backend reads them in place). F32 bundles never carry programs: the ANE computes
	// in fp16 and is not handed fp32 weights.
	NoPrograms bool
	// LMHeadRows bounds the rows of one LM-head chunk (the LM head, or the tied embedding, is
	// stored and run in chunks); 0 means blobplan.DefaultLMHeadRows.
	LMHeadRows int
	// Warn, if set, receives warnings (values that overflowed in FP16, unused tensors, ...).
	Warn func(msg string)
}

// Result describes a written bundle.
type Result struct {
	Path       string
	Manifest   *format.Manifest
	Header     format.Header
	Size       int64
	Conversion format.Conversion
}

// DefaultOutput returns the default bundle name for a model name, e.g. "Qwen2.5-0.5B-Instruct.aneb".
func DefaultOutput(name string) string { return name + ".aneb" }

// Pack converts the checkpoint in dir into a bundle. On any error or when ctx is cancelled no
// file is left at the output path (nor a temp file beside it).
func Pack(ctx context.Context, dir string, opts Options) (*Result, error) {
	src, err := readSource(dir)
	if err != nil {
		return nil, err
	}
	mlx, err := readMLXQuant(src.configJSON, filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	var target dtype.DType
	lmHead := dtype.Invalid
	if mlx != nil {
		if target, err = mlxTarget(mlx, opts.DType, opts.GroupSize); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		opts.GroupSize, lmHead = mlx.GroupSize, dtype.Q4
	} else if target, err = targetDType(opts.DType); err != nil {
		return nil, err
	}
	if opts.GroupSize != 0 && target != dtype.Q4 {
		return nil, fmt.Errorf("group size %d applies to int4 weights; the dtype is %s", opts.GroupSize, opts.DType)
	}
	gen, err := src.generation()
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		name = filepath.Base(abs)
	}
	out := opts.Output
	if out == "" {
		out = DefaultOutput(name)
	}
	if err := checkOutput(out, opts.Force); err != nil {
		return nil, err
	}
	// Compiling the tokenizer (about a second for a 151k vocabulary, mostly JSON decoding) runs
	// on another core while the weights are converted; its section is written after them.
	tok := startTokenizer(src)
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ckpt.Close()
	if mlx != nil {
		ckpt.UseMLX4(mlx.GroupSize)
	}
	unused, err := ckpt.Check(src.config)
	if err != nil {
		return nil, err
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if len(unused) > 0 {
		warn(fmt.Sprintf("ignoring %d tensor(s) the architecture does not use: %s", len(unused), strings.Join(unused, ", ")))
	}

	// Hash the source files on another core while the weights are converted.
	digests := startHashing(ctx, dir, sourceFiles(dir, ckpt), opts.KnownDigests)

	w, err := format.Create(out)
	if err != nil {
		return nil, err
	}
	b := &builder{
		ctx: ctx, w: w, cfg: src.config, ckpt: ckpt, target: target,
		progress: opts.Progress,
		milOpts: milgen.Options{Seqs: opts.ANESeqs, Blobs: blobplan.Options{WeightDType: target, MaxLMHeadRows: opts.LMHeadRows,
			GroupSize: opts.GroupSize, LMHeadDType: lmHead}},
		noPrograms: opts.NoPrograms || target == dtype.F32,
	}
	m, err := b.build(src, tok)
	if err == nil {
		var files []format.SourceFile
		files, err = digests.wait()
		m.Provenance = opts.Provenance
		if m.Provenance.Source == "" {
			m.Provenance.Source = "local"
		}
		m.Provenance.Files = files
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	m.Model.Name = name
	m.Generation = gen
	conv := format.Conversion{
		SourceDType: sourceDType(ckpt),
		Overflows:   int64(b.conv.Stats.Overflow),
		Subnormals:  int64(b.conv.Stats.Subnormal),
		Underflows:  int64(b.conv.Stats.Underflow),
	}
	if target == dtype.F16 {
		m.Conversion = &conv
		if conv.Overflows > 0 {
			warn(fmt.Sprintf("%d weight value(s) exceed the FP16 range and became ±Inf; consider --dtype f32", conv.Overflows))
		}
		if conv.Underflows > 0 {
			warn(fmt.Sprintf("%d tiny weight value(s) became 0 in FP16", conv.Underflows))
		}
	}
	if err := ctx.Err(); err != nil {
		w.Abort()
		return nil, err
	}
	hdr, err := w.Commit(m)
	if err != nil {
		w.Abort()
		return nil, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	return &Result{Path: out, Manifest: m, Header: hdr, Size: st.Size(), Conversion: conv}, nil
}

func targetDType(s string) (dtype.DType, error) {
	switch strings.ToLower(s) {
	case "", "f16", "fp16", "float16":
		return dtype.F16, nil
	case "f32", "fp32", "float32":
		return dtype.F32, nil
	case "int8", "q8", "i8":
		return dtype.Q8, nil
	case "int4", "q4", "u4":
		return dtype.Q4, nil
	}
	return dtype.Invalid, fmt.Errorf("dtype %q is not supported; expected f16, f32, int8 or int4", s)
}

// checkOutput refuses to overwrite without force and reports a missing directory up front.
func checkOutput(out string, force bool) error {
	if st, err := os.Stat(out); err == nil {
		if st.IsDir() {
			return fmt.Errorf("output %s is a directory; expected a file path", out)
		}
		if !force {
			return fmt.Errorf("output %s already exists; use --force to overwrite it", out)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(out)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("output directory %s does not exist", dir)
	}
	return nil
}

func sourceDType(c *convert.Checkpoint) string {
	seen := map[dtype.DType]bool{}
	var list []string
	for _, n := range c.Names() {
		d := c.Tensor(n).DType
		if !seen[d] {
			seen[d] = true
			list = append(list, d.String())
		}
	}
	return strings.Join(list, ",")
}
