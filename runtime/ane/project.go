package ane

import (
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
)

// lmPiece is the most positions one LM-head program call takes: the LM-head programs are
// generated for S = 32 only (milgen.Options.LMHeadSeqs), and generation needs the last position's
// logits.
const lmPiece = format.DecodeSeq

// projections are the ANE backend's share of the forward pass: the bundle's programs, run
// through dispatch.Dispatcher (which picks the bucket, packs to channel-major fp16 and back, and
// loads each program on first use), and, for decoding on the CPU, the CPU's projections over the
// same weight bytes. They implement runtime.Projections.
type projections struct {
	d       *dispatch.Dispatcher
	groups  []string // the program kind of each of the family's groups, by index
	onCPU   []bool   // groups that always run on the CPU (Options.LinearInOn, and the experts), by index
	lmRows  []int
	lmLayer int
	vocab   int
	// cpu runs single-token steps (decode) when decodeOnCPU, and the onCPU groups.
	cpu         runtime.Projections
	decodeOnCPU bool
	anyOnCPU    bool
}

// NewProjector returns the projections of one sequence.
func (p *projections) NewProjector(batch int) (runtime.Projector, error) {
	pr := &projector{p: p, tmp: make([]float32, lmPiece*slices.Max(p.lmRows))}
	if p.cpu != nil {
		cb := 1 // decode only
		if p.anyOnCPU {
			cb = batch
		}
		c, err := p.cpu.NewProjector(cb)
		if err != nil {
			return nil, err
		}
		pr.cpu = c
	}
	return pr, nil
}

// projector is projections for one sequence.
type projector struct {
	p   *projections
	cpu runtime.Projector
	tmp []float32 // one LM-head chunk's logits for lmPiece positions
}

// Group runs the group's program, or the CPU's products for a group that runs there and, when
// decoding on the CPU, for one token.
func (pr *projector) Group(layer, g int, x []float32, n int, y []float32) error {
	if pr.p.onCPU[g] || (n == 1 && pr.p.decodeOnCPU) {
		return pr.cpu.Group(layer, g, x, n, y)
	}
	return pr.p.d.Run(pr.p.groups[g], layer, 0, x, n, y)
}

// Experts runs a sparse layer's routed experts on the CPU: a token reads only the rows of the
// experts its router chose, which no static program can (the experts group is always onCPU).
func (pr *projector) Experts(layer, g int, x []float32, n int, r *runtime.Routes, y []float32) error {
	return pr.cpu.Experts(layer, g, x, n, r, y)
}

// LMHead runs every chunk's program into tmp ([positions, rows of the chunk]) and copies its
// columns into place, lmPiece positions at a time.
func (pr *projector) LMHead(x []float32, n int, logits []float32) error {
	if n == 1 && pr.p.decodeOnCPU {
		return pr.cpu.LMHead(x, n, logits)
	}
	p := pr.p
	hidden := len(x) / n
	for t0 := 0; t0 < n; t0 += lmPiece {
		t1 := min(n, t0+lmPiece)
		m := t1 - t0
		col := 0
		for k, rows := range p.lmRows {
			y := pr.tmp[:m*rows]
			if err := p.d.Run(arch.GroupLMHead, p.lmLayer, k, x[t0*hidden:t1*hidden], m, y); err != nil {
				return err
			}
			for t := 0; t < m; t++ {
				copy(logits[(t0+t)*p.vocab+col:(t0+t)*p.vocab+col+rows], y[t*rows:(t+1)*rows])
			}
			col += rows
		}
	}
	return nil
}
