package mil

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/blobfile"
)

// CompileOptions tunes Compile. The zero value is ready to use.
type CompileOptions struct {
	// Function names the function to compile; empty means "main", or the only function.
	Function string
	// Cache shares decoded weights between executables compiled from the same blob bytes
	// (the prefill buckets of one layer all read the same blob); nil means no sharing.
	Cache *WeightCache
	// MaxElements bounds every tensor (inputs, constants, intermediates); 0 means 1<<30.
	// Fuzzing lowers it so that hostile shapes cannot exhaust memory.
	MaxElements int
	// MaxBytes bounds what Compile allocates for tensors it computes: folded constants,
	// decompressed constexpr weights, the run-time buffers and op scratch (decoded blob weights
	// are bounded by the blob bytes themselves and not counted); 0 means DefaultMaxBytes.
	MaxBytes int64
	// TrackRange makes the executable record the largest magnitude every op produces, for
	// Range: the fp16 headroom of a program (docs/ane.md, "fp16 headroom").
	TrackRange bool
}

// kernelFn computes one op: in holds the float data of the op's tensor inputs (constants or
// buffers), out the result buffer. It must not retain the slices beyond the call. cols limits
// the work of column-local ops (see emit) to the first cols elements of every row of the last
// dimension; other ops always receive the full width.
type kernelFn func(in [][]float32, out []float32, cols int)

// allCols asks a program for every column, whatever its tensors' last dimension.
const allCols = math.MaxInt32

// val is a variable during compilation: a constant (data known now) or a runtime tensor.
type val struct {
	name  string
	typ   Type
	konst bool
	f     []float32 // float data: constant data, or decoded lazily from raw
	ints  []int64   // integer/bool constant data
	str   string    // string constant
	raw   []byte    // BLOBFILE payload of a constant, decoded on demand
	// Runtime tensors only.
	last   int // index of the last step reading it; -1 if none
	buf    []float32
	input  bool
	output bool
}

type pending struct {
	st     *Stmt
	ins    []*val
	out    *val
	kernel kernelFn
	local  bool
}

type compiler struct {
	prog    *Program
	fn      *Func
	opts    CompileOptions
	weights map[string][]byte
	files   map[string]*blobfile.File
	vars    map[string]*val
	names   map[string]Pos
	steps   []*pending
	ios18   bool
	ioMax   int64 // elements of the largest input or output (bounds.go)
	spent   int64 // bytes charged against opts.MaxBytes
}

// Compile checks the program against the ANE's rules and the types of every statement,
// resolves its BLOBFILE constants in weights (MIL path, e.g. "@model_path/weights/mlp.bin",
// to the whole blob file), folds constants, and returns an executable. weights is only read;
// the executable keeps sub-slices of it.
func (p *Program) Compile(weights map[string][]byte) (*Executable, error) {
	return p.CompileWith(weights, CompileOptions{})
}

// CompileWith is Compile with options.
func (p *Program) CompileWith(weights map[string][]byte, opts CompileOptions) (*Executable, error) {
	if opts.MaxElements <= 0 {
		opts.MaxElements = 1 << 30
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	fn, err := p.checkHeader(opts.Function)
	if err != nil {
		return nil, err
	}
	c := &compiler{
		prog: p, fn: fn, opts: opts, weights: weights,
		files: map[string]*blobfile.File{},
		vars:  map[string]*val{},
		names: map[string]Pos{},
		ios18: fn.Opset == "ios18",
	}
	c.ioMax = c.largestIO()
	ins, err := c.inputs()
	if err != nil {
		return nil, err
	}
	for _, st := range fn.Stmts {
		if err := c.stmt(st); err != nil {
			return nil, err
		}
	}
	outs, err := c.outputs()
	if err != nil {
		return nil, err
	}
	return c.link(ins, outs)
}

func (c *compiler) inputs() ([]*val, error) {
	var ins []*val
	for _, prm := range c.fn.Params {
		if err := checkIO(prm.Pos, "input", prm.Name, prm.Type); err != nil {
			return nil, err
		}
		if err := c.checkSize(prm.Pos, prm.Name, prm.Type); err != nil {
			return nil, err
		}
		if err := checkDims(prm.Pos, "input", prm.Name, prm.Type); err != nil {
			return nil, err
		}
		if _, dup := c.vars[prm.Name]; dup {
			return nil, &CompileError{Pos: prm.Pos, Var: prm.Name, Op: "input", Msg: "declared twice", Kind: ErrType}
		}
		v := &val{name: prm.Name, typ: prm.Type, input: true, last: -1}
		c.vars[prm.Name] = v
		ins = append(ins, v)
	}
	if err := checkSorted(c.fn.Pos, "inputs", c.fn.Params, func(p Param) string { return p.Name }); err != nil {
		return nil, err
	}
	return ins, nil
}

func (c *compiler) outputs() ([]*val, error) {
	if len(c.fn.Outputs) == 0 {
		return nil, &CompileError{Pos: c.fn.Pos, Var: c.fn.Name, Op: "func", Msg: "has no outputs", Kind: ErrType}
	}
	var outs []*val
	seen := map[string]bool{}
	for _, o := range c.fn.Outputs {
		v, ok := c.vars[o.Name]
		if !ok {
			return nil, &CompileError{Pos: o.Pos, Var: o.Name, Op: "output", Msg: "is not defined", Kind: ErrType}
		}
		if seen[o.Name] {
			return nil, &CompileError{Pos: o.Pos, Var: o.Name, Op: "output", Msg: "is listed twice", Kind: ErrType}
		}
		seen[o.Name] = true
		if err := checkIO(o.Pos, "output", o.Name, v.typ); err != nil {
			return nil, err
		}
		if err := checkDims(o.Pos, "output", o.Name, v.typ); err != nil {
			return nil, err
		}
		v.output = true
		outs = append(outs, v)
	}
	if len(outs) > 1 {
		first := outs[0]
		for i, v := range outs[1:] {
			if v.typ.Elements()*v.typ.DType.Bits() != first.typ.Elements()*first.typ.DType.Bits() {
				return nil, &CompileError{Pos: c.fn.Outputs[i+1].Pos, Var: v.name, Op: "output", Kind: ErrANE,
					Msg: fmt.Sprintf("is %s but output %s is %s; several outputs must have equal sizes (0x1d or wrong data); concatenate them along channels instead", v.typ, first.name, first.typ)}
			}
		}
	}
	if err := checkSorted(c.fn.Pos, "outputs", c.fn.Outputs, func(r Ref) string { return r.Name }); err != nil {
		return nil, err
	}
	return outs, nil
}

func (c *compiler) checkSize(pos Pos, name string, t Type) error {
	n := 1
	for _, d := range t.Shape {
		if d != 0 && n > c.opts.MaxElements/d {
			return &CompileError{Pos: pos, Var: name, Op: "type", Kind: ErrUnsupported,
				Msg: fmt.Sprintf("%s has more than %d elements", t, c.opts.MaxElements)}
		}
		n *= d
	}
	return nil
}

// stmt compiles one statement and defines its variable.
func (c *compiler) stmt(st *Stmt) error {
	if _, dup := c.vars[st.Var]; dup {
		return stmtErr(st, ErrType, "variable %s is defined twice (MIL is SSA)", st.Var)
	}
	if a := st.attr("name"); a != nil {
		if a.Val.Type.DType != String || a.Val.Type.Rank() != 0 {
			return stmtErr(st, ErrType, "attribute name must be a string, not %s", a.Val.Type)
		}
		if prev, dup := c.names[a.Val.Str]; dup {
			return stmtErr(st, ErrANE, "op name %q is already used at %s; names must be unique within a function", a.Val.Str, prev)
		}
		c.names[a.Val.Str] = st.Pos
	}
	if err := c.checkSize(st.Pos, st.Var, st.Type); err != nil {
		return err
	}
	def, ok := ops[st.Op]
	if !ok {
		return stmtErr(st, ErrANE, "unknown op %q", st.Op)
	}
	args, err := c.collectArgs(st, def)
	if err != nil {
		return err
	}
	v, err := def.compile(c, st, args)
	if err != nil {
		return err
	}
	if err := args.finish(); err != nil {
		return err
	}
	if !v.typ.Equal(st.Type) {
		return stmtErr(st, ErrType, "declared %s but %s produces %s", st.Type, st.Op, v.typ)
	}
	v.name = st.Var
	c.vars[st.Var] = v
	return nil
}

// emit records a runtime op producing a tensor of type out from ins, or runs it now when
// every input is a constant (constant folding). local says the op is column-local: output
// column s (last dimension) depends only on input column s, and k honours its cols argument.
func (c *compiler) emit(st *Stmt, out Type, ins []*val, k kernelFn, local bool) (*val, error) {
	if out.DType != FP16 && out.DType != FP32 {
		return nil, stmtErr(st, ErrUnsupported, "produces %s; only fp16 and fp32 tensors can be computed", out)
	}
	if err := c.checkSize(st.Pos, st.Var, out); err != nil {
		return nil, err
	}
	v := &val{typ: out, last: -1}
	allConst := true
	for _, in := range ins {
		allConst = allConst && in.konst
	}
	if !allConst {
		if err := checkDims(st.Pos, st.Op, st.Var, out); err != nil {
			return nil, err
		}
	}
	if err := c.growth(st, out, ins...); err != nil {
		return nil, err
	}
	// A run-time tensor's buffer is charged when link plans the buffers (they are reused);
	// a folded constant is allocated now.
	if allConst {
		data, err := c.alloc(st, out.Elements())
		if err != nil {
			return nil, err
		}
		in := make([][]float32, len(ins))
		for i, x := range ins {
			in[i] = c.floats(x)
		}
		k(in, data, allCols)
		if out.DType == FP16 {
			roundSlice16(data)
		}
		v.konst, v.f = true, data
		return v, nil
	}
	for _, in := range ins {
		if !in.konst {
			in.last = len(c.steps)
		}
	}
	c.steps = append(c.steps, &pending{st: st, ins: ins, out: v, kernel: k, local: local})
	return v, nil
}

// floats returns the float data of a constant or the buffer of a runtime tensor.
func (c *compiler) floats(v *val) []float32 {
	if !v.konst {
		return v.buf[:v.typ.Elements()]
	}
	if v.f == nil && v.raw != nil {
		v.f = c.opts.Cache.decode(v.raw, v.typ.DType, v.typ.Elements())
	}
	return v.f
}

// link assigns buffers to runtime tensors, reusing a buffer once its tensor is dead, and binds
// every step to its buffers. The plan is made first and charged to the byte budget, so that a
// program whose buffers would not fit is refused before anything is allocated.
func (c *compiler) link(ins, outs []*val) (*Executable, error) {
	var caps []int // capacity of each planned buffer
	var free []int // buffers whose tensor is dead
	id := map[*val]int{}
	take := func(n int) int {
		best := -1
		for i, b := range free {
			if caps[b] >= n && (best < 0 || caps[b] < caps[free[best]]) {
				best = i
			}
		}
		if best < 0 {
			caps = append(caps, n)
			return len(caps) - 1
		}
		b := free[best]
		free = append(free[:best], free[best+1:]...)
		return b
	}
	release := func(v *val) {
		if b, ok := id[v]; ok && !v.konst && !v.input && !v.output {
			free = append(free, b)
			delete(id, v)
		}
	}
	for _, v := range ins {
		caps = append(caps, v.typ.Elements())
		id[v] = len(caps) - 1
	}
	outBuf := make([]int, len(c.steps)) // output buffer of each step
	for i, s := range c.steps {
		outBuf[i] = take(s.out.typ.Elements())
		id[s.out] = outBuf[i]
		for _, x := range s.ins {
			if !x.konst && x.last == i {
				release(x)
			}
		}
		if s.out.last < 0 {
			release(s.out)
		}
	}
	var total int64
	for _, n := range caps {
		total += 4 * int64(n)
	}
	pos := c.fn.Pos
	if len(c.fn.Stmts) > 0 {
		pos = c.fn.Stmts[len(c.fn.Stmts)-1].Pos
	}
	if err := c.charge(pos, c.fn.Name, fmt.Sprintf("the %d run-time buffers (after reuse)", len(caps)), total); err != nil {
		return nil, err
	}
	bufs := make([][]float32, len(caps))
	for i, n := range caps {
		bufs[i] = make([]float32, n)
	}
	for i, v := range ins {
		v.buf = bufs[i]
	}
	e := &Executable{track: c.opts.TrackRange}
	for i, s := range c.steps {
		s.out.buf = bufs[outBuf[i]][:s.out.typ.Elements()]
	}
	for _, s := range c.steps {
		in := make([][]float32, len(s.ins))
		for j, x := range s.ins {
			in[j] = c.floats(x)
		}
		e.steps = append(e.steps, step{
			kernel: s.kernel, in: in, out: s.out.buf,
			round: s.out.typ.DType == FP16,
			name:  s.st.Var, op: s.st.Op,
		})
	}
	e.width, e.columnLocal = c.columnLocal(ins, outs)
	for _, v := range ins {
		e.inputs = append(e.inputs, ioBuf{IO: IO{Name: v.name, Type: v.typ}, data: v.buf})
	}
	for _, v := range outs {
		e.outputs = append(e.outputs, ioBuf{IO: IO{Name: v.name, Type: v.typ}, data: c.floats(v)})
	}
	return e, nil
}

func lastDim(shape []int) int {
	if len(shape) == 0 {
		return 1
	}
	return shape[len(shape)-1]
}

// columnLocal reports whether every runtime op is column-local and every runtime tensor ends
// in the same dimension S as the I/O: then evaluating only the first k columns of the inputs
// gives exactly the first k columns of the outputs (the decode case: one live column of 32).
func (c *compiler) columnLocal(ins, outs []*val) (int, bool) {
	if len(ins) == 0 {
		return 0, false
	}
	s := lastDim(ins[0].typ.Shape)
	for _, v := range append(append([]*val{}, ins...), outs...) {
		if v.konst || lastDim(v.typ.Shape) != s {
			return s, false
		}
	}
	for _, p := range c.steps {
		if !p.local || lastDim(p.out.typ.Shape) != s {
			return s, false
		}
	}
	return s, true
}
