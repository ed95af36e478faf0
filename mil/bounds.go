package mil

import (
	"fmt"
	"math"
)

// Bounds on what one program may make the simulator allocate. MIL text is small and its
// shapes are free, so without them a 2 KB program can ask for a tensor of 2^30 elements (4 GiB
// of float32 here). Every bound is checked before the memory it guards is allocated; the
// reasoning is in docs/ane.md ("Bounds").
const (
	// maxANEDim is the largest size of one dimension of an ANE input, output or intermediate
	// tensor: a larger vocabulary has to be split into chunks (docs/ane.md, "Limits").
	maxANEDim = 65536
	// IOGrowth bounds how much an op may grow a tensor: a computed tensor larger than every
	// operand may hold at most IOGrowth times the elements of the program's largest input or
	// output. The programs anepack runs stay far below (an FFN's hidden activation is about
	// 5x its I/O, attention scores S/head_dim times).
	IOGrowth = 64
	// DefaultMaxBytes is CompileOptions.MaxBytes when it is 0: room for the I/O and
	// intermediates of an LM-head chunk of 65536 rows at S = 512 with a folded fp32 weight.
	DefaultMaxBytes = 2 << 30
)

// satElements is the element count of shape, saturating instead of overflowing.
func satElements(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		if d == 0 {
			return 0
		}
		if n > math.MaxInt64/int64(d) {
			return math.MaxInt64
		}
		n *= int64(d)
	}
	return n
}

// largestIO returns the element count of the function's largest input or declared output:
// the scale of the work the program exists to do, which bounds the growth of its
// intermediates. Outputs are found by the statement that defines them; a wrong declaration is
// reported later as a type error.
func (c *compiler) largestIO() int64 {
	var n int64
	for _, p := range c.fn.Params {
		n = max(n, satElements(p.Type.Shape))
	}
	outs := map[string]bool{}
	for _, o := range c.fn.Outputs {
		outs[o.Name] = true
	}
	for _, st := range c.fn.Stmts {
		if outs[st.Var] {
			n = max(n, satElements(st.Type.Shape))
		}
	}
	return min(n, int64(c.opts.MaxElements))
}

// checkDims refuses a runtime tensor with a dimension the ANE does not take.
func checkDims(pos Pos, what, name string, t Type) error {
	for i, d := range t.Shape {
		if d > maxANEDim {
			return &CompileError{Pos: pos, Var: name, Op: what, Kind: ErrANE,
				Msg: fmt.Sprintf("is %s: dimension %d is %d, more than the ANE's largest dimension %d (split it, as the LM head is split into chunks)", t, i, d, maxANEDim)}
		}
	}
	return nil
}

// growth checks a tensor an op is about to compute (at run time, or now when its inputs are
// constants): it may not grow beyond both its largest operand and IOGrowth times the largest
// I/O tensor.
func (c *compiler) growth(st *Stmt, t Type, operands ...*val) error {
	return c.growthBy(st, t, 1, operands...)
}

// constexprGrowth is how much larger than its largest operand a decompressed weight may be
// without being refused: 8 one-bit LUT codes fill a byte, and vector palettization repeats
// each code's entry along an axis (a few times in practice).
const constexprGrowth = 16

// growthBy is growth with the operand bound multiplied by factor.
func (c *compiler) growthBy(st *Stmt, t Type, factor int64, operands ...*val) error {
	n := satElements(t.Shape)
	var largest int64
	for _, o := range operands {
		largest = max(largest, satElements(o.typ.Shape))
	}
	if limit := max(factor*largest, IOGrowth*c.ioMax); n > limit {
		what := "its largest operand"
		if factor > 1 {
			what = fmt.Sprintf("%d times its largest operand", factor)
		}
		return stmtErr(st, ErrUnsupported, "%s has %d elements: more than %s (%d) and more than %d times the largest input or output (%d elements); the simulator refuses it rather than allocate %s",
			t, n, what, largest, IOGrowth, c.ioMax, byteSize(4*n))
	}
	return nil
}

// alloc allocates n float32 values for statement st after charging them to the budget.
func (c *compiler) alloc(st *Stmt, n int) ([]float32, error) {
	if err := c.charge(st.Pos, st.Var, "its values", 4*int64(n)); err != nil {
		return nil, err
	}
	return make([]float32, n), nil
}

// charge counts n bytes the compilation is about to allocate for what against
// CompileOptions.MaxBytes.
func (c *compiler) charge(pos Pos, name, what string, n int64) error {
	if n > c.opts.MaxBytes-c.spent {
		return &CompileError{Pos: pos, Var: name, Op: "memory", Kind: ErrUnsupported,
			Msg: fmt.Sprintf("%s need %s; with the %s already allocated that exceeds the simulator's budget of %s for one program", what, byteSize(n), byteSize(c.spent), byteSize(c.opts.MaxBytes))}
	}
	c.spent += n
	return nil
}

// byteSize formats a byte count for error messages.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
