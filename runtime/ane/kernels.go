package ane

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/milgen"
	"github.com/anepack/anepack/runtime"
)

// ErrNoKernels is returned for a bundle that carries no ANE kernels (packed with
// `anepack --no-ane`, or by an older anepack): the ane and sim backends have nothing to run.
var ErrNoKernels = errors.New("the bundle has no ANE kernels")

// kernelSet is a bundle's kernels, read from its manifest and checked against the model.
type kernelSet struct {
	groups   []string        // the kernel kinds of the family's groups (arch.Family.Groups), by index
	perLayer [][]string      // the kernel kinds each decoder layer has, in the order they run
	onCPU    map[string]bool // kinds that run on the CPU instead (Options.LinearInOn): never loaded
	kernels  []format.Kernel
	texts    map[string][]byte // the MIL sections the kernels name, by name
	layerSeq []int             // buckets every layer group has, ascending
	lmSeq    []int             // buckets every LM-head chunk has, ascending
	lmRows   []int             // rows of each LM-head chunk, in chunk order
	lmLayer  int               // the Layer field of the LM-head kernels (-1 as pack writes it)
	bytes    int64             // MIL text bytes
}

// readKernels reads the manifest's kernel list and the MIL texts it points at, and checks
// that together they are a complete ANE model of m: every layer has the three groups in the
// same buckets (including the decode bucket), the LM-head chunks cover the vocabulary, and
// every kernel's I/O has the channel counts m's config implies. Errors name the bundle, the
// kernel and the field.
func readKernels(m *runtime.Model) (*kernelSet, error) {
	man := m.Manifest()
	if len(man.Kernels) == 0 {
		src := "MODEL"
		if man.Provenance.Repo != "" {
			src = man.Provenance.Repo
		}
		if m.DType == dtype.F32 {
			return nil, fmt.Errorf("%s: %w: it stores %s weights, which are for the CPU (the ANE computes in fp16); pack an f16 bundle: anepack %s --dtype f16 -o %s",
				m.Name, ErrNoKernels, m.DType, src, m.Name)
		}
		return nil, fmt.Errorf("%s: %w (it was packed with --no-ane, or by an anepack without ANE support); pack it again without --no-ane: anepack %s -o %s",
			m.Name, ErrNoKernels, src, m.Name)
	}
	c := m.Config
	hidden := c.HiddenSize
	channels := map[string][2]int{}
	ks := &kernelSet{lmLayer: -1}
	for _, g := range m.Family.Groups(c) {
		channels[g.Name] = [2]int{g.In, g.Out}
		ks.groups = append(ks.groups, g.Name)
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		var names []string
		for _, g := range m.Family.LayerGroups(c, l) {
			names = append(names, g.Name)
		}
		ks.perLayer = append(ks.perLayer, names)
	}
	ks.texts = map[string][]byte{}
	texts := ks.texts
	seqs := map[string][]int{} // "kind/layer/chunk" -> buckets
	lmRows := map[int]int{}
	for i := range man.Kernels {
		fk := &man.Kernels[i]
		where := fmt.Sprintf("%s: manifest kernels[%d] (%q)", m.Name, i, fk.Name)
		text, ok := texts[fk.MIL]
		if !ok {
			sec, found := m.Bundle().Section(fk.MIL)
			if !found {
				return nil, fmt.Errorf("%s: field mil names section %q, which is not in the bundle", where, fk.MIL)
			}
			if sec.Kind != format.KindMIL {
				return nil, fmt.Errorf("%s: field mil names section %q of kind %s; expected a mil section", where, fk.MIL, sec.Kind)
			}
			var err error
			if text, err = m.Bundle().Bytes(sec); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			texts[fk.MIL] = text
		}
		if fk.MILOffset < 0 || fk.MILSize <= 0 || fk.MILOffset > int64(len(text)) || fk.MILSize > int64(len(text))-fk.MILOffset {
			return nil, fmt.Errorf("%s: fields mil_offset %d and mil_size %d are outside section %q of %d bytes", where, fk.MILOffset, fk.MILSize, fk.MIL, len(text))
		}
		if len(fk.Inputs) != 1 || len(fk.Outputs) != 1 {
			return nil, fmt.Errorf("%s: %d inputs and %d outputs; expected one of each", where, len(fk.Inputs), len(fk.Outputs))
		}
		in, out := fk.Inputs[0], fk.Outputs[0]
		if fk.Seq <= 0 || fk.Seq%32 != 0 {
			return nil, fmt.Errorf("%s: field seq is %d; expected a positive multiple of 32", where, fk.Seq)
		}
		for _, io := range []format.KernelIO{in, out} {
			if dt, err := dtype.Parse(io.DType); err != nil || dt != dtype.F16 || len(io.Shape) != 4 || io.Shape[0] != 1 || io.Shape[2] != 1 || io.Shape[3] != fk.Seq {
				return nil, fmt.Errorf("%s: %s is %s %v; expected f16 [1, C, 1, %d]", where, io.Name, io.DType, io.Shape, fk.Seq)
			}
		}
		want, isLayer := channels[fk.Kind]
		switch {
		case isLayer:
			if fk.Layer < 0 || fk.Layer >= c.NumHiddenLayers {
				return nil, fmt.Errorf("%s: field layer is %d; the model has layers 0 to %d", where, fk.Layer, c.NumHiddenLayers-1)
			}
			if in.Shape[1] != want[0] || out.Shape[1] != want[1] {
				return nil, fmt.Errorf("%s: maps %d channels to %d; the config implies %d to %d", where, in.Shape[1], out.Shape[1], want[0], want[1])
			}
		case fk.Kind == arch.GroupLMHead:
			if fk.Chunk < 0 || fk.Chunk >= len(man.Kernels) {
				return nil, fmt.Errorf("%s: field chunk is %d", where, fk.Chunk)
			}
			if in.Shape[1] != hidden || out.Shape[1] <= 0 {
				return nil, fmt.Errorf("%s: maps %d channels to %d; expected %d (hidden_size) to the chunk's rows", where, in.Shape[1], out.Shape[1], hidden)
			}
			if r, seen := lmRows[fk.Chunk]; seen && r != out.Shape[1] {
				return nil, fmt.Errorf("%s: chunk %d has %d rows here and %d in another bucket", where, fk.Chunk, out.Shape[1], r)
			}
			lmRows[fk.Chunk] = out.Shape[1]
			ks.lmLayer = fk.Layer
		default:
			return nil, fmt.Errorf("%s: field kind is %q; expected %s or %s", where, fk.Kind, strings.Join(ks.groups, ", "), arch.GroupLMHead)
		}
		key := fmt.Sprintf("%s/%d/%d", fk.Kind, fk.Layer, fk.Chunk)
		seqs[key] = append(seqs[key], fk.Seq)
		ks.kernels = append(ks.kernels, *fk)
		ks.bytes += fk.MILSize
	}

	// Every layer group in the same buckets, one of them the decode bucket.
	for l := 0; l < c.NumHiddenLayers; l++ {
		for _, g := range ks.perLayer[l] {
			s := sortedSeqs(seqs[fmt.Sprintf("%s/%d/0", g, l)])
			if len(s) == 0 {
				return nil, fmt.Errorf("%s: the manifest has no %s kernel for layer %d; pack the bundle again with this anepack", m.Name, g, l)
			}
			if ks.layerSeq == nil {
				ks.layerSeq = s
			} else if !slices.Equal(s, ks.layerSeq) {
				return nil, fmt.Errorf("%s: the %s kernels of layer %d have buckets %v; layer 0's first group has %v", m.Name, g, l, s, ks.layerSeq)
			}
		}
	}
	if !slices.Contains(ks.layerSeq, milgen.DecodeSeq) {
		return nil, fmt.Errorf("%s: the layer kernels have buckets %v; the decode bucket %d is missing", m.Name, ks.layerSeq, milgen.DecodeSeq)
	}
	// LM-head chunks 0..n-1, covering the vocabulary, each in the same buckets.
	total := 0
	for i := 0; i < len(lmRows); i++ {
		r, ok := lmRows[i]
		if !ok {
			return nil, fmt.Errorf("%s: LM-head kernel chunk %d is missing (the manifest has %d chunks)", m.Name, i, len(lmRows))
		}
		s := sortedSeqs(seqs[fmt.Sprintf("%s/%d/%d", arch.GroupLMHead, ks.lmLayer, i)])
		if ks.lmSeq == nil {
			ks.lmSeq = s
		} else if !slices.Equal(s, ks.lmSeq) {
			return nil, fmt.Errorf("%s: LM-head chunk %d has buckets %v; chunk 0 has %v", m.Name, i, s, ks.lmSeq)
		}
		ks.lmRows = append(ks.lmRows, r)
		total += r
	}
	if total != c.VocabSize {
		return nil, fmt.Errorf("%s: the LM-head kernels produce %d logits; vocab_size is %d", m.Name, total, c.VocabSize)
	}
	return ks, nil
}

func sortedSeqs(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// compiles returns how many programs a plan of layer buckets and LM-head buckets loads.
func (ks *kernelSet) compiles(layerSeqs, lmSeqs []int) int {
	n := 0
	for _, kinds := range ks.perLayer {
		for _, g := range kinds {
			if !ks.onCPU[g] {
				n++
			}
		}
	}
	return len(layerSeqs)*n + len(lmSeqs)*len(ks.lmRows)
}

// plan picks the buckets this run may use so that every kernel it can load fits in budget
// compiles (budget < 0: no limit). The LM head needs one bucket (the smallest: generation
// needs only the last position's logits). The layer kernels need the decode bucket when the
// ANE decodes; then the largest prefill buckets are added while they fit, since a larger
// bucket means fewer dispatches per prompt. When not even the minimum fits, the minimum is
// returned and lazy loading reports ErrCompileBudget when the budget runs out.
func (ks *kernelSet) plan(budget int, decodeOnANE bool) (layerSeqs, lmSeqs []int) {
	lmSeqs = ks.lmSeq[:1]
	if budget < 0 {
		return ks.layerSeq, ks.lmSeq
	}
	if decodeOnANE {
		layerSeqs = []int{milgen.DecodeSeq}
	}
	for i := len(ks.layerSeq) - 1; i >= 0; i-- {
		s := ks.layerSeq[i]
		if slices.Contains(layerSeqs, s) {
			continue
		}
		next := append(slices.Clone(layerSeqs), s)
		if ks.compiles(next, lmSeqs) > budget {
			continue
		}
		layerSeqs = next
	}
	if len(layerSeqs) == 0 {
		layerSeqs = []int{ks.layerSeq[len(ks.layerSeq)-1]}
	}
	slices.Sort(layerSeqs)
	return layerSeqs, lmSeqs
}

// selected returns the kernels of the planned buckets, but for the groups that run on the CPU.
func (ks *kernelSet) selected(layerSeqs, lmSeqs []int) []format.Kernel {
	var out []format.Kernel
	for _, k := range ks.kernels {
		seqs := layerSeqs
		if k.Kind == arch.GroupLMHead {
			seqs = lmSeqs
		}
		if slices.Contains(seqs, k.Seq) && !ks.onCPU[k.Kind] {
			out = append(out, k)
		}
	}
	return out
}
