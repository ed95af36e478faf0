package format

import (
	"fmt"
	"math"
)

// Check reports the first generation default outside the range Hugging Face's generate
// accepts, naming the field as generation_config.json spells it, e.g.
// `field "temperature": -1; expected a number >= 0`. anepack refuses such a config when
// packing; a bundle that carries one anyway was made or edited by something else, and its
// users should hear that the bundle is at fault, not a flag they never gave.
func (g Generation) Check() error {
	for _, f := range []struct {
		name string
		v    *float64
		ok   func(float64) bool
		want string
	}{
		{"temperature", g.Temperature, func(v float64) bool { return v >= 0 }, "a number >= 0"},
		{"top_p", g.TopP, func(v float64) bool { return v > 0 && v <= 1 }, "a number in (0, 1]"},
		{"min_p", g.MinP, func(v float64) bool { return v >= 0 && v <= 1 }, "a number in [0, 1]"},
		{"repetition_penalty", g.RepetitionPenalty, func(v float64) bool { return v > 0 }, "a number > 0"},
	} {
		if f.v != nil && (math.IsNaN(*f.v) || !f.ok(*f.v)) {
			return fmt.Errorf("field %q: %v; expected %s", f.name, *f.v, f.want)
		}
	}
	if g.TopK != nil && *g.TopK < 0 {
		return fmt.Errorf("field \"top_k\": %d; expected an integer >= 0", *g.TopK)
	}
	return nil
}
