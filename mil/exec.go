package mil

import (
	"fmt"
	"sync"
)

// IO describes one input or output of an executable.
type IO struct {
	Name string
	Type Type
}

type ioBuf struct {
	IO
	data []float32
}

type step struct {
	kernel kernelFn
	in     [][]float32
	out    []float32
	round  bool
	name   string
	op     string
}

// Executable is a compiled program. Its buffers are allocated once by Compile, so Eval
// allocates nothing; calls on one Executable are serialised by a mutex (one ANE model also
// evaluates one request at a time).
type Executable struct {
	mu          sync.Mutex
	steps       []step
	inputs      []ioBuf
	outputs     []ioBuf
	width       int   // S, the last dimension of the I/O
	columnLocal bool  // EvalColumns may skip columns
	track       bool  // record magnitudes (CompileOptions.TrackRange)
	rng         Range // what track recorded
}

// Inputs lists the program's inputs in declaration (= alphabetical) order.
func (e *Executable) Inputs() []IO { return ioList(e.inputs) }

// Outputs lists the program's outputs in declaration (= alphabetical) order.
func (e *Executable) Outputs() []IO { return ioList(e.outputs) }

// Ops returns the number of runtime ops (constants and folded ops excluded).
func (e *Executable) Ops() int { return len(e.steps) }

func ioList(b []ioBuf) []IO {
	out := make([]IO, len(b))
	for i := range b {
		out[i] = b[i].IO
	}
	return out
}

// Eval runs the program on fp16 inputs (bit patterns, channel-major [1, C, 1, S] as an
// IOSurface holds them) and writes the fp16 outputs. in and out follow Inputs and Outputs;
// every buffer must have exactly the tensor's element count. Programs with fp32 I/O need
// EvalFloat.
func (e *Executable) Eval(in, out [][]uint16) error {
	if err := e.checkCounts(len(in), len(out)); err != nil {
		return err
	}
	for i, b := range e.inputs {
		if b.Type.DType != FP16 {
			return fmt.Errorf("mil: input %s is %s; use EvalFloat", b.Name, b.Type)
		}
		if len(in[i]) != len(b.data) {
			return fmt.Errorf("mil: input %s has %d values; %s holds %d", b.Name, len(in[i]), b.Type, len(b.data))
		}
	}
	for i, b := range e.outputs {
		if b.Type.DType != FP16 {
			return fmt.Errorf("mil: output %s is %s; use EvalFloat", b.Name, b.Type)
		}
		if len(out[i]) != len(b.data) {
			return fmt.Errorf("mil: output %s buffer has %d values; %s holds %d", b.Name, len(out[i]), b.Type, len(b.data))
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, b := range e.inputs {
		F16ToF32(b.data, in[i])
	}
	e.exec(allCols)
	for i, b := range e.outputs {
		F32ToF16(out[i], b.data)
	}
	return nil
}

// ColumnLocal reports whether EvalColumns can skip columns: every op of the program maps input
// column s to output column s (1x1 convs, elementwise ops, channel concat, ...).
func (e *Executable) ColumnLocal() bool { return e.columnLocal }

// EvalColumns is Eval for callers that only need the first cols columns (positions) of every
// output row, e.g. decode with one live column in an S = 32 program. For column-local
// programs it reads and computes only those columns, which gives bit-for-bit the values Eval
// computes there; the other output columns are left unchanged. Other programs run in full.
func (e *Executable) EvalColumns(in, out [][]uint16, cols int) error {
	if !e.columnLocal || cols >= e.width {
		return e.Eval(in, out)
	}
	if cols < 1 {
		return fmt.Errorf("mil: EvalColumns with %d columns", cols)
	}
	if err := e.checkCounts(len(in), len(out)); err != nil {
		return err
	}
	for i, b := range e.inputs {
		if b.Type.DType != FP16 || len(in[i]) != len(b.data) {
			return fmt.Errorf("mil: input %s: need %d fp16 values for %s", b.Name, len(b.data), b.Type)
		}
	}
	for i, b := range e.outputs {
		if b.Type.DType != FP16 || len(out[i]) != len(b.data) {
			return fmt.Errorf("mil: output %s: need a buffer of %d fp16 values for %s", b.Name, len(b.data), b.Type)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.width
	for i, b := range e.inputs {
		for o := 0; o < len(b.data); o += w {
			F16ToF32(b.data[o:o+cols], in[i][o:o+cols])
		}
	}
	e.exec(cols)
	for i, b := range e.outputs {
		for o := 0; o < len(b.data); o += w {
			F32ToF16(out[i][o:o+cols], b.data[o:o+cols])
		}
	}
	return nil
}

// EvalFloat runs the program on float32 inputs: values for fp16 inputs are rounded to fp16
// first, as writing them into an fp16 IOSurface would. Outputs are fp16-exact for fp16 outputs.
func (e *Executable) EvalFloat(in, out [][]float32) error {
	if err := e.checkCounts(len(in), len(out)); err != nil {
		return err
	}
	for i, b := range e.inputs {
		if len(in[i]) != len(b.data) {
			return fmt.Errorf("mil: input %s has %d values; %s holds %d", b.Name, len(in[i]), b.Type, len(b.data))
		}
	}
	for i, b := range e.outputs {
		if len(out[i]) != len(b.data) {
			return fmt.Errorf("mil: output %s buffer has %d values; %s holds %d", b.Name, len(out[i]), b.Type, len(b.data))
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, b := range e.inputs {
		copy(b.data, in[i])
		if b.Type.DType == FP16 {
			roundSlice16(b.data)
		}
	}
	e.exec(allCols)
	for i, b := range e.outputs {
		copy(out[i], b.data)
	}
	return nil
}

// Run is Eval with inputs and outputs by name; it allocates the outputs.
func (e *Executable) Run(inputs map[string][]uint16) (map[string][]uint16, error) {
	in := make([][]uint16, len(e.inputs))
	for i, b := range e.inputs {
		v, ok := inputs[b.Name]
		if !ok {
			return nil, fmt.Errorf("mil: missing input %s (%s)", b.Name, b.Type)
		}
		in[i] = v
	}
	if len(inputs) != len(e.inputs) {
		for n := range inputs {
			if !e.hasInput(n) {
				return nil, fmt.Errorf("mil: the program has no input %s", n)
			}
		}
	}
	out := make([][]uint16, len(e.outputs))
	res := make(map[string][]uint16, len(e.outputs))
	for i, b := range e.outputs {
		out[i] = make([]uint16, len(b.data))
		res[b.Name] = out[i]
	}
	if err := e.Eval(in, out); err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Executable) hasInput(n string) bool {
	for _, b := range e.inputs {
		if b.Name == n {
			return true
		}
	}
	return false
}

func (e *Executable) checkCounts(nin, nout int) error {
	if nin != len(e.inputs) || nout != len(e.outputs) {
		return fmt.Errorf("mil: got %d inputs and %d outputs; the program has %d and %d", nin, nout, len(e.inputs), len(e.outputs))
	}
	return nil
}

// exec runs every step; cols is allCols, or fewer than width for column-local programs, whose
// tensors all have the last dimension width.
func (e *Executable) exec(cols int) {
	if e.track {
		e.rng.Evals++
	}
	for i := range e.steps {
		s := &e.steps[i]
		s.kernel(s.in, s.out, cols)
		if e.track {
			e.observe(i, s.out, cols)
		}
		if !s.round {
			continue
		}
		if cols >= e.width {
			roundSlice16(s.out)
			continue
		}
		for o := 0; o < len(s.out); o += e.width {
			roundSlice16(s.out[o : o+cols])
		}
	}
}
