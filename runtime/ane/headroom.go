package ane

import (
	"slices"

	"github.com/anepack/anepack/mil"
)

// ProgramRange is the fp16 headroom of one program as the simulator saw it: the largest
// magnitude its ops produced, against fp16's largest value (mil.MaxFP16). A program whose
// activations pass it would give infinities on the ANE while the CPU backend carries on.
type ProgramRange struct {
	Program string
	mil.Range
}

// Headroom returns the fp16 headroom of every program evaluated so far, smallest headroom
// first, and which evaluations it covers. It is recorded only with Options.Check: on the sim
// evaluator for every evaluation, on the ANE for the first evaluation of each program (the
// one the check repeats in the simulator). Without Check it returns nothing.
func (b *Backend) Headroom() (ranges []ProgramRange, covers string) {
	switch e := b.counter.Backend.(type) {
	case *checkedBackend:
		if s, ok := e.eval.(*simBackend); ok && s.sim.TrackRange {
			ranges, covers = s.ranges.list(), "every evaluation, in the simulator"
		} else {
			ranges, covers = e.ranges.list(), "each program's first evaluation, repeated in the simulator"
		}
	case *simBackend:
		ranges, covers = e.ranges.list(), "every evaluation, in the simulator"
	}
	slices.SortStableFunc(ranges, func(a, b ProgramRange) int {
		switch {
		case a.Headroom() < b.Headroom():
			return -1
		case a.Headroom() > b.Headroom():
			return 1
		}
		return 0
	})
	return ranges, covers
}
