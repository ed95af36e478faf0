package mil

import "math"

// MaxFP16 is the largest finite fp16 value. The ANE computes in fp16, so an activation whose
// magnitude passes it becomes infinite there, while a float32 CPU run of the same model
// carries on: Range finds such programs in the simulator (docs/ane.md, "fp16 headroom").
const MaxFP16 = 65504

// Range is the largest magnitude the ops of a program produced over the evaluations since it
// was compiled with CompileOptions.TrackRange, measured before each result is rounded to its
// dtype (so an fp16 overflow shows as a value above MaxFP16, not only as infinity).
type Range struct {
	Max      float32 // largest |value|; +Inf once an overflow has propagated
	Var      string  // the statement that produced it
	Op       string
	Overflow string // the first statement whose result passed MaxFP16, if any
	NaN      string // the first statement that produced a NaN, if any
	Evals    int    // evaluations recorded
}

// Overflows reports whether an op produced a value that fp16 cannot hold, or a NaN.
func (r Range) Overflows() bool { return r.Overflow != "" || r.NaN != "" }

// Headroom is how many times larger the activations could grow before fp16 overflows:
// MaxFP16 / Max (below 1 when they already overflow; +Inf when every value was 0).
func (r Range) Headroom() float64 {
	if r.Max == 0 {
		return math.Inf(1)
	}
	return MaxFP16 / float64(r.Max)
}

// Range returns what the executable recorded; the zero Range when it was compiled without
// CompileOptions.TrackRange or has not been evaluated.
func (e *Executable) Range() Range {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rng
}

// observe records the magnitudes of step i's result: with cols below the width, only the
// computed columns of every row.
func (e *Executable) observe(i int, out []float32, cols int) {
	s := &e.steps[i]
	var m float32
	nan := false
	scan := func(v []float32) {
		for _, x := range v {
			a := float32(math.Abs(float64(x)))
			if a > m {
				m = a
			} else if x != x {
				nan = true
			}
		}
	}
	if cols >= e.width {
		scan(out)
	} else {
		for o := 0; o < len(out); o += e.width {
			scan(out[o : o+cols])
		}
	}
	if m > e.rng.Max {
		e.rng.Max, e.rng.Var, e.rng.Op = m, s.name, s.op
	}
	if m > MaxFP16 && e.rng.Overflow == "" {
		e.rng.Overflow = s.name
	}
	if nan && e.rng.NaN == "" {
		e.rng.NaN = s.name
	}
}
