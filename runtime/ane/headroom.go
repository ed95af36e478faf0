package ane

import (
	"slices"

	"github.com/anepack/anepack/mil"
)

// KernelRange is the fp16 headroom of one kernel as the simulator saw it: the largest
// magnitude its ops produced, against fp16's largest value (mil.MaxFP16). A kernel whose
// activations pass it would give infinities on the ANE while the CPU backend carries on.
type KernelRange struct {
	Kernel string
	mil.Range
}

// Headroom returns the fp16 headroom of every kernel evaluated so far, smallest headroom
// first, and which evaluations it covers. It is recorded only with Options.Check: on the sim
// evaluator for every evaluation, on the ANE for the first evaluation of each kernel (the
// one the check repeats in the simulator). Without Check it returns nothing.
func (b *Backend) Headroom() (ranges []KernelRange, covers string) {
	switch e := b.counter.Backend.(type) {
	case *checkedBackend:
		if s, ok := e.eval.(*simBackend); ok && s.sim.TrackRange {
			ranges, covers = s.ranges.list(), "every evaluation, in the simulator"
		} else {
			ranges, covers = e.ranges.list(), "each kernel's first evaluation, repeated in the simulator"
		}
	case *simBackend:
		ranges, covers = e.ranges.list(), "every evaluation, in the simulator"
	}
	slices.SortStableFunc(ranges, func(a, b KernelRange) int {
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
