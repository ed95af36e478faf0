package ane

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
)

// ErrNoPrograms is returned for a bundle that carries no ANE programs (packed with
// `anepack --no-ane`, or by an older anepack): the ane and sim backends have nothing to run.
var ErrNoPrograms = errors.New("the bundle has no ANE programs")

// programSet is a bundle's programs, read from its manifest and checked against the model.
type programSet struct {
	groups   []string        // the program kinds of the family's groups (arch.Family.Groups), by index
	perLayer [][]string      // the program kinds each decoder layer has, in the order they run
	onCPU    map[string]bool // kinds that run on the CPU instead (Options.LinearInOn, the experts): never loaded
	programs []format.Program
	texts    map[string][]byte // the MIL sections the programs name, by name
	layerSeq []int             // buckets every layer group has, ascending
	lmSeq    []int             // buckets every LM-head chunk has, ascending
	lmRows   []int             // rows of each LM-head chunk, in chunk order
	lmLayer  int               // the Layer field of the LM-head programs (-1 as pack writes it)
	bytes    int64             // MIL text bytes
}

// readPrograms reads the manifest's program list and the MIL texts it points at, and checks
// that together they are a complete ANE model of m: every layer has the three groups in the
// same buckets (including the decode bucket), the LM-head chunks cover the vocabulary, and
// every program's I/O has the channel counts m's config implies. Errors name the bundle, the
// program and the field.
func readPrograms(m *runtime.Model) (*programSet, error) {
	man := m.Manifest()
	if len(man.Programs) == 0 {
		src := "MODEL"
		if man.Provenance.Repo != "" {
			src = man.Provenance.Repo
		}
		if m.DType == dtype.F32 {
			return nil, fmt.Errorf("%s: %w: it stores %s weights, which are for the CPU (the ANE computes in fp16); pack an f16 bundle: anepack %s --dtype f16 -o %s",
				m.Name, ErrNoPrograms, m.DType, src, m.Name)
		}
		return nil, fmt.Errorf("%s: %w (it was packed with --no-ane, or by an anepack without ANE support); pack it again without --no-ane: anepack %s -o %s",
			m.Name, ErrNoPrograms, src, m.Name)
	}
	c := m.Config
	hidden := c.HiddenSize
	channels := map[string][2]int{}
	// A sparse layer's experts have no program (milgen.Programs): they run on the CPU.
	ps := &programSet{lmLayer: -1, onCPU: map[string]bool{arch.GroupExperts: true}}
	for _, g := range m.Family.Groups(c) {
		if g.Name != arch.GroupExperts {
			channels[g.Name] = [2]int{g.In, g.Out}
		}
		ps.groups = append(ps.groups, g.Name)
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		var names []string
		for _, g := range m.Family.LayerGroups(c, l) {
			if g.Name != arch.GroupExperts {
				names = append(names, g.Name)
			}
		}
		ps.perLayer = append(ps.perLayer, names)
	}
	ps.texts = map[string][]byte{}
	texts := ps.texts
	seqs := map[string][]int{} // "kind/layer/chunk" -> buckets
	lmRows := map[int]int{}
	for i := range man.Programs {
		rec := &man.Programs[i]
		where := fmt.Sprintf("%s: manifest programs[%d] (%q)", m.Name, i, rec.Name)
		text, ok := texts[rec.MIL]
		if !ok {
			sec, found := m.Bundle().Section(rec.MIL)
			if !found {
				return nil, fmt.Errorf("%s: field mil names section %q, which is not in the bundle", where, rec.MIL)
			}
			if sec.Kind != format.KindMIL {
				return nil, fmt.Errorf("%s: field mil names section %q of kind %s; expected a mil section", where, rec.MIL, sec.Kind)
			}
			var err error
			if text, err = m.Bundle().Bytes(sec); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			texts[rec.MIL] = text
		}
		if rec.MILOffset < 0 || rec.MILSize <= 0 || rec.MILOffset > int64(len(text)) || rec.MILSize > int64(len(text))-rec.MILOffset {
			return nil, fmt.Errorf("%s: fields mil_offset %d and mil_size %d are outside section %q of %d bytes", where, rec.MILOffset, rec.MILSize, rec.MIL, len(text))
		}
		if len(rec.Inputs) != 1 || len(rec.Outputs) != 1 {
			return nil, fmt.Errorf("%s: %d inputs and %d outputs; expected one of each", where, len(rec.Inputs), len(rec.Outputs))
		}
		in, out := rec.Inputs[0], rec.Outputs[0]
		if rec.Seq <= 0 || rec.Seq%32 != 0 {
			return nil, fmt.Errorf("%s: field seq is %d; expected a positive multiple of 32", where, rec.Seq)
		}
		for _, io := range []format.ProgramIO{in, out} {
			if dt, err := dtype.Parse(io.DType); err != nil || dt != dtype.F16 || len(io.Shape) != 4 || io.Shape[0] != 1 || io.Shape[2] != 1 || io.Shape[3] != rec.Seq {
				return nil, fmt.Errorf("%s: %s is %s %v; expected f16 [1, C, 1, %d]", where, io.Name, io.DType, io.Shape, rec.Seq)
			}
		}
		want, isLayer := channels[rec.Kind]
		switch {
		case isLayer:
			if rec.Layer < 0 || rec.Layer >= c.NumHiddenLayers {
				return nil, fmt.Errorf("%s: field layer is %d; the model has layers 0 to %d", where, rec.Layer, c.NumHiddenLayers-1)
			}
			if in.Shape[1] != want[0] || out.Shape[1] != want[1] {
				return nil, fmt.Errorf("%s: maps %d channels to %d; the config implies %d to %d", where, in.Shape[1], out.Shape[1], want[0], want[1])
			}
		case rec.Kind == arch.GroupLMHead:
			if rec.Chunk < 0 || rec.Chunk >= len(man.Programs) {
				return nil, fmt.Errorf("%s: field chunk is %d", where, rec.Chunk)
			}
			if in.Shape[1] != hidden || out.Shape[1] <= 0 {
				return nil, fmt.Errorf("%s: maps %d channels to %d; expected %d (hidden_size) to the chunk's rows", where, in.Shape[1], out.Shape[1], hidden)
			}
			if r, seen := lmRows[rec.Chunk]; seen && r != out.Shape[1] {
				return nil, fmt.Errorf("%s: chunk %d has %d rows here and %d in another bucket", where, rec.Chunk, out.Shape[1], r)
			}
			lmRows[rec.Chunk] = out.Shape[1]
			ps.lmLayer = rec.Layer
		default:
			var kinds []string // the groups with programs
			for _, g := range ps.groups {
				if _, ok := channels[g]; ok {
					kinds = append(kinds, g)
				}
			}
			return nil, fmt.Errorf("%s: field kind is %q; expected %s or %s", where, rec.Kind, strings.Join(kinds, ", "), arch.GroupLMHead)
		}
		key := fmt.Sprintf("%s/%d/%d", rec.Kind, rec.Layer, rec.Chunk)
		seqs[key] = append(seqs[key], rec.Seq)
		ps.programs = append(ps.programs, *rec)
		ps.bytes += rec.MILSize
	}

	// Every layer group in the same buckets, one of them the decode bucket.
	for l := 0; l < c.NumHiddenLayers; l++ {
		for _, g := range ps.perLayer[l] {
			s := sortedSeqs(seqs[fmt.Sprintf("%s/%d/0", g, l)])
			if len(s) == 0 {
				return nil, fmt.Errorf("%s: the manifest has no %s program for layer %d; pack the bundle again with this anepack", m.Name, g, l)
			}
			if ps.layerSeq == nil {
				ps.layerSeq = s
			} else if !slices.Equal(s, ps.layerSeq) {
				return nil, fmt.Errorf("%s: the %s programs of layer %d have buckets %v; layer 0's first group has %v", m.Name, g, l, s, ps.layerSeq)
			}
		}
	}
	if !slices.Contains(ps.layerSeq, format.DecodeSeq) {
		return nil, fmt.Errorf("%s: the layer programs have buckets %v; the decode bucket %d is missing", m.Name, ps.layerSeq, format.DecodeSeq)
	}
	// LM-head chunks 0..n-1, covering the vocabulary, each in the same buckets.
	total := 0
	for i := 0; i < len(lmRows); i++ {
		r, ok := lmRows[i]
		if !ok {
			return nil, fmt.Errorf("%s: LM-head program chunk %d is missing (the manifest has %d chunks)", m.Name, i, len(lmRows))
		}
		s := sortedSeqs(seqs[fmt.Sprintf("%s/%d/%d", arch.GroupLMHead, ps.lmLayer, i)])
		if ps.lmSeq == nil {
			ps.lmSeq = s
		} else if !slices.Equal(s, ps.lmSeq) {
			return nil, fmt.Errorf("%s: LM-head chunk %d has buckets %v; chunk 0 has %v", m.Name, i, s, ps.lmSeq)
		}
		ps.lmRows = append(ps.lmRows, r)
		total += r
	}
	if total != c.VocabSize {
		return nil, fmt.Errorf("%s: the LM-head programs produce %d logits; vocab_size is %d", m.Name, total, c.VocabSize)
	}
	return ps, nil
}

func sortedSeqs(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// compiles returns how many programs a plan of layer buckets and LM-head buckets loads.
func (ps *programSet) compiles(layerSeqs, lmSeqs []int) int {
	n := 0
	for _, kinds := range ps.perLayer {
		for _, g := range kinds {
			if !ps.onCPU[g] {
				n++
			}
		}
	}
	return len(layerSeqs)*n + len(lmSeqs)*len(ps.lmRows)
}

// plan picks the buckets this run may use so that every program it can load fits in budget
// compiles (budget < 0: no limit). The LM head needs one bucket (the smallest: generation
// needs only the last position's logits). The layer programs need the decode bucket when the
// ANE decodes; then the largest prefill buckets are added while they fit, since a larger
// bucket means fewer dispatches per prompt. When not even the minimum fits, the minimum is
// returned and lazy loading reports ErrCompileBudget when the budget runs out.
func (ps *programSet) plan(budget int, decodeOnANE bool) (layerSeqs, lmSeqs []int) {
	lmSeqs = ps.lmSeq[:1]
	if budget < 0 {
		return ps.layerSeq, ps.lmSeq
	}
	if decodeOnANE {
		layerSeqs = []int{format.DecodeSeq}
	}
	for i := len(ps.layerSeq) - 1; i >= 0; i-- {
		s := ps.layerSeq[i]
		if slices.Contains(layerSeqs, s) {
			continue
		}
		next := append(slices.Clone(layerSeqs), s)
		if ps.compiles(next, lmSeqs) > budget {
			continue
		}
		layerSeqs = next
	}
	if len(layerSeqs) == 0 {
		layerSeqs = []int{ps.layerSeq[len(ps.layerSeq)-1]}
	}
	slices.Sort(layerSeqs)
	return layerSeqs, lmSeqs
}

// selected returns the programs of the planned buckets, but for the groups that run on the CPU.
func (ps *programSet) selected(layerSeqs, lmSeqs []int) []format.Program {
	var out []format.Program
	for _, k := range ps.programs {
		seqs := layerSeqs
		if k.Kind == arch.GroupLMHead {
			seqs = lmSeqs
		}
		if slices.Contains(seqs, k.Seq) && !ps.onCPU[k.Kind] {
			out = append(out, k)
		}
	}
	return out
}
