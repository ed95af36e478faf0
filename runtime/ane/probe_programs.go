package ane

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/mil"
)

// ProbeProgram is one program of `anerun doctor --probe`: its MIL text and weight files, an
// input, and the output it must give, computed here in float64 from the weights' definition
// (not by the simulator, which runs the same program as one of the evaluators).
type ProbeProgram struct {
	Name          string // unique, e.g. "uint4-896-split"
	What          string // what it finds out, one line
	Weights       string // fp16, int8, uint4 or lut4
	Layout        string // mil.LayoutPacked or mil.LayoutSplit
	ExactSurfaces bool   // surfaces of exactly the tensor's size (else at least 64 KiB)
	MIL           []byte
	Blobs         map[string][]byte // weight files, packed layout (the evaluator splits them)
	In, Out       IO                // one fp16 [1, C, 1, 32] input and output
	X             []uint16          // the input, channel-major fp16
	Want          []float64         // the expected output, channel-major
	Tol           float64           // largest |got − want| allowed, relative to max |want|
}

// Spec is what the driver compiles for the program.
func (p *ProbeProgram) Spec() Spec {
	return Spec{MIL: p.MIL, Weights: p.Blobs, Inputs: []IO{p.In}, Outputs: []IO{p.Out}, Layout: p.Layout, ExactSurfaces: p.ExactSurfaces}
}

// Record describes the program as the simulator's backend takes it (with p.MIL as its text).
func (p *ProbeProgram) Record() *format.Program {
	io := func(x IO) format.ProgramIO {
		return format.ProgramIO{Name: x.Name, DType: dtype.F16.String(), Shape: []int{1, x.Bytes / 2 / probeSeq, 1, probeSeq}}
	}
	return &format.Program{Name: p.Name, Seq: probeSeq, Inputs: []format.ProgramIO{io(p.In)}, Outputs: []format.ProgramIO{io(p.Out)}}
}

// Check compares an output with Want and returns the largest difference relative to the
// largest expected magnitude.
func (p *ProbeProgram) Check(out []uint16) (rel float64, ok bool) {
	var worst, scale float64
	for i, w := range p.Want {
		g := float64(half.F16ToF32Scalar(out[i]))
		scale = max(scale, math.Abs(w))
		d := math.Abs(g - w)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		worst = max(worst, d)
	}
	rel = worst / max(scale, 1e-3)
	return rel, rel <= p.Tol
}

// ProbeCase builds one probe program on demand: the largest weigh 90 MB, so a run builds,
// runs and drops them one at a time.
type ProbeCase struct {
	Name  string
	Build func() *ProbeProgram
}

// selfTestName is the probe program --backend auto requires to pass.
const selfTestName = "self-test"

// ProbePrograms lists the probe's programs, in the order they run: the self-test (a 64 -> 64
// identity at S = 32), the same with 4 KiB surfaces, two 896 -> 896 fp16 projections in one
// blob (packed and split), 896 -> 896 with int8 affine (iOS16 attribute form), uint4
// blockwise (iOS18 inline form) and LUT4 (iOS18 per-group and iOS16 forms) weights, and
// 32000- and 50688-row projections (a classifier that compiled on hardware; a Qwen LM-head
// chunk). Every program is deterministic.
func ProbePrograms() []ProbeCase {
	cases := []ProbeCase{
		{selfTestName, func() *ProbeProgram { return identityProgram(selfTestName, false) }},
		{"surface-4k", func() *ProbeProgram { return identityProgram("surface-4k", true) }},
	}
	for _, layout := range []string{mil.LayoutPacked, mil.LayoutSplit} {
		cases = append(cases, ProbeCase{"fp16-896-" + layout, func() *ProbeProgram { return fp16ChainProgram(layout) }})
	}
	cases = append(cases, ProbeCase{"int8-896", int8Program})
	for _, layout := range []string{mil.LayoutPacked, mil.LayoutSplit} {
		cases = append(cases, ProbeCase{"uint4-896-" + layout, func() *ProbeProgram { return uint4Program(layout) }})
	}
	for _, layout := range []string{mil.LayoutPacked, mil.LayoutSplit} {
		cases = append(cases, ProbeCase{"lut4-ios18-896-" + layout, func() *ProbeProgram { return lut18Program(layout) }})
	}
	for _, layout := range []string{mil.LayoutPacked, mil.LayoutSplit} {
		cases = append(cases, ProbeCase{"lut4-ios16-896-" + layout, func() *ProbeProgram { return lut16Program(layout) }})
	}
	for _, rows := range []int{32000, 50688} {
		cases = append(cases, ProbeCase{fmt.Sprintf("rows-%d", rows), func() *ProbeProgram { return rowsProgram(rows) }})
	}
	return cases
}

const (
	probeWeightPath = "@model_path/weights/w.bin"
	probeHidden     = 896 // Qwen2.5-0.5B's hidden size
	probeTol        = 1e-2
)

// probeRand is the generator of one program's data.
func probeRand(name string) *rand.Rand {
	var seed uint64
	for _, c := range name {
		seed = seed*131 + uint64(c)
	}
	return rand.New(rand.NewPCG(seed, 0x414e45))
}

// randF16 returns n fp16 values uniform in [-scale, scale].
func randF16(r *rand.Rand, n int, scale float64) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = half.F32ToF16Scalar(float32((2*r.Float64() - 1) * scale))
	}
	return out
}

// fastF16 returns n fp16 values of random sign and mantissa in [0.25, 0.5): four from each
// random word, fast enough for the 45 million weights of an LM-head chunk.
func fastF16(r *rand.Rand, n int) []uint16 {
	out := make([]uint16, n)
	var u uint64
	for i := range out {
		if i%4 == 0 {
			u = r.Uint64()
		}
		out[i] = uint16(u)&0x83FF | 0x3400
		u >>= 16
	}
	return out
}

func f16Payload(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, h := range v {
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

func f16s(v []uint16) []float64 {
	out := make([]float64, len(v))
	for i, h := range v {
		out[i] = float64(half.F16ToF32Scalar(h))
	}
	return out
}

// round16 rounds to the nearest fp16 value.
func round16(x float64) float64 {
	return float64(half.F16ToF32Scalar(half.F32ToF16Scalar(float32(x))))
}

// project returns w [rows, cin] times x [cin, S], channel-major, skipping zero inputs.
func project(w []float64, rows, cin int, x []float64) []float64 {
	y := make([]float64, rows*probeSeq)
	for i := 0; i < cin; i++ {
		for s := 0; s < probeSeq; s++ {
			v := x[i*probeSeq+s]
			if v == 0 {
				continue
			}
			for o := 0; o < rows; o++ {
				y[o*probeSeq+s] += w[o*cin+i] * v
			}
		}
	}
	return y
}

func ioOf(name string, channels int) IO { return IO{Name: name, Bytes: 2 * channels * probeSeq} }

// identityProgram is y = I·x for 64 channels: the output is the input, bit for bit.
func identityProgram(name string, exact bool) *ProbeProgram {
	const c = 64
	w := make([]uint16, c*c)
	for i := 0; i < c; i++ {
		w[i*c+i] = half.F32ToF16Scalar(1)
	}
	blob, off := packBlob([]blobfile.DType{blobfile.FP16}, f16Payload(w))
	m := newProbeMIL(false, c)
	m.stmt(fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", c, c), "w", "const()", "val = "+m.blob(fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", c, c), probeWeightPath, off[0]))
	m.conv("y", "x", "w", c)
	x := randF16(probeRand(name), c*probeSeq, 1)
	what := "compile and run a 64 -> 64 identity at S = 32 (surfaces padded to 64 KiB)"
	if exact {
		what = "the same with 4 KiB surfaces, exactly the tensors' size"
	}
	return &ProbeProgram{Name: name, What: what, Weights: "fp16", Layout: mil.LayoutPacked, ExactSurfaces: exact,
		MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob}, In: ioOf("x", c), Out: ioOf("y", c),
		X: x, Want: f16s(x), Tol: 1e-3}
}

// fp16ChainProgram is y = W2·(W1·x), 896 -> 896 -> 896, both weights in one blob: the second
// is named at an offset other than 64.
func fp16ChainProgram(layout string) *ProbeProgram {
	name := "fp16-896-" + layout
	r := probeRand("fp16-896")
	n := probeHidden
	w1, w2 := randF16(r, n*n, 0.05), randF16(r, n*n, 0.05)
	blob, off := packBlob([]blobfile.DType{blobfile.FP16, blobfile.FP16}, f16Payload(w1), f16Payload(w2))
	m := newProbeMIL(false, n)
	wt := fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", n, n)
	m.stmt(wt, "w1", "const()", "val = "+m.blob(wt, probeWeightPath, off[0]))
	m.stmt(wt, "w2", "const()", "val = "+m.blob(wt, probeWeightPath, off[1]))
	m.conv("h", "x", "w1", n)
	m.conv("y", "h", "w2", n)
	x := randF16(r, n*probeSeq, 1)
	h := project(f16s(w1), n, n, f16s(x))
	for i := range h {
		h[i] = round16(h[i])
	}
	return &ProbeProgram{Name: name, What: "two fp16 896 -> 896 projections, weights in one blob file (" + layout + ")",
		Weights: "fp16", Layout: layout, MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob},
		In: ioOf("x", n), Out: ioOf("y", n), X: x, Want: project(f16s(w2), n, n, h), Tol: probeTol}
}

// int8Program is y = W·x with W = scale[o]·q[o, i] through constexpr_affine_dequantize in
// the iOS16 attribute form: int8 data from the blob, a per-row fp16 scale inline, zero point 0.
func int8Program() *ProbeProgram {
	const name = "int8-896"
	r := probeRand(name)
	n := probeHidden
	q := make([]byte, n*n)
	for i := range q {
		q[i] = byte(int8(r.IntN(255) - 127))
	}
	scale := make([]uint16, n)
	for i := range scale {
		scale[i] = half.F32ToF16Scalar(float32(0.0002 + 0.0004*r.Float64()))
	}
	blob, off := packBlob([]blobfile.DType{blobfile.Int8}, q)
	m := newProbeMIL(false, n)
	wt := fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", n, n)
	m.stmt(wt, "w", "constexpr_affine_dequantize()", fmt.Sprintf("axis = %s, quantized_data = %s, scale = %s, zero_point = %s",
		m.scalar("int32", "0"), m.blob(fmt.Sprintf("tensor<int8, [%d, %d, 1, 1]>", n, n), probeWeightPath, off[0]), fp16Vector(scale), m.scalar("int8", "0")))
	m.conv("y", "x", "w", n)
	w := make([]float64, n*n)
	sc := f16s(scale)
	for i := range w {
		w[i] = round16(float64(float32(sc[i/n]) * float32(int8(q[i]))))
	}
	x := randF16(r, n*probeSeq, 1)
	return &ProbeProgram{Name: name, What: "int8 weights through constexpr_affine_dequantize (iOS16 attribute form)",
		Weights: "int8", Layout: mil.LayoutPacked, MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob},
		In: ioOf("x", n), Out: ioOf("y", n), X: x, Want: project(w, n, n, f16s(x)), Tol: probeTol}
}

// uint4Program is y = W·x with W = scale·(q − offset) per group of 32 inputs through
// constexpr_blockwise_shift_scale, its inputs inline BLOBFILE literals (the iOS18 form):
// uint4 data, fp16 scale and offset [896, 28, 1, 1].
func uint4Program(layout string) *ProbeProgram {
	name := "uint4-896-" + layout
	r := probeRand("uint4-896")
	n, g := probeHidden, 32
	groups := n / g
	codes := make([]byte, n*n)
	packed := make([]byte, n*n/2)
	for i := range codes {
		codes[i] = byte(r.IntN(16))
		packed[i/2] |= codes[i] << (4 * (i % 2))
	}
	scale, offset := make([]uint16, n*groups), make([]uint16, n*groups)
	for i := range scale {
		scale[i] = half.F32ToF16Scalar(float32(0.002 + 0.004*r.Float64()))
		offset[i] = half.F32ToF16Scalar(float32(6 + 3*r.Float64()))
	}
	blob, off := packBlob([]blobfile.DType{blobfile.UInt4, blobfile.FP16, blobfile.FP16}, packed, f16Payload(scale), f16Payload(offset))
	m := newProbeMIL(false, n)
	st := fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", n, groups)
	m.stmt(fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", n, n), "w", fmt.Sprintf("constexpr_blockwise_shift_scale(data = %s, offset = %s, scale = %s)",
		m.blob(fmt.Sprintf("tensor<uint4, [%d, %d, 1, 1]>", n, n), probeWeightPath, off[0]),
		m.blob(st, probeWeightPath, off[2]), m.blob(st, probeWeightPath, off[1])), "")
	m.conv("y", "x", "w", n)
	w := make([]float64, n*n)
	sc, of := f16s(scale), f16s(offset)
	for i := range w {
		k := i/n*groups + i%n/g
		w[i] = round16(sc[k] * round16(float64(codes[i])-of[k]))
	}
	x := randF16(r, n*probeSeq, 1)
	return &ProbeProgram{Name: name, What: "uint4 weights, groups of 32, through constexpr_blockwise_shift_scale (iOS18 inline form, " + layout + ")",
		Weights: "uint4", Layout: layout, MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob},
		In: ioOf("x", n), Out: ioOf("y", n), X: x, Want: project(w, n, n, f16s(x)), Tol: probeTol}
}

// lutData returns 4-bit codes for an n x n weight, packed two to a byte (low nibble first),
// and tables of 16 fp16 entries.
func lutData(r *rand.Rand, n, tables int) (codes, packed []byte, luts []uint16) {
	codes = make([]byte, n*n)
	packed = make([]byte, n*n/2)
	for i := range codes {
		codes[i] = byte(r.IntN(16))
		packed[i/2] |= codes[i] << (4 * (i % 2))
	}
	return codes, packed, randF16(r, 16*tables, 0.05)
}

// lut18Program is y = W·x with W from the iOS18 constexpr_lut_to_dense: uint4 indices with
// the weight's shape and one 16-entry table per group of 8 output channels
// (lut [112, 1, 1, 1, 16, 1]), as per-grouped-channel palettization produces.
func lut18Program(layout string) *ProbeProgram {
	name := "lut4-ios18-896-" + layout
	r := probeRand("lut4-ios18-896")
	n, g := probeHidden, 8
	codes, packed, luts := lutData(r, n, n/g)
	blob, off := packBlob([]blobfile.DType{blobfile.UInt4, blobfile.FP16}, packed, f16Payload(luts))
	m := newProbeMIL(false, n)
	m.stmt(fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", n, n), "w", fmt.Sprintf("constexpr_lut_to_dense(indices = %s, lut = %s)",
		m.blob(fmt.Sprintf("tensor<uint4, [%d, %d, 1, 1]>", n, n), probeWeightPath, off[0]),
		m.blob(fmt.Sprintf("tensor<fp16, [%d, 1, 1, 1, 16, 1]>", n/g), probeWeightPath, off[1])), "")
	m.conv("y", "x", "w", n)
	w := make([]float64, n*n)
	lf := f16s(luts)
	for i := range w {
		w[i] = lf[i/n/g*16+int(codes[i])]
	}
	x := randF16(r, n*probeSeq, 1)
	return &ProbeProgram{Name: name, What: "LUT4 weights, a table per 8 output channels (iOS18 constexpr_lut_to_dense, " + layout + ")",
		Weights: "lut4", Layout: layout, MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob},
		In: ioOf("x", n), Out: ioOf("y", n), X: x, Want: project(w, n, n, f16s(x)), Tol: probeTol}
}

// lut16Program is y = W·x with W from the iOS16 constexpr_lut_to_dense (one 16-entry table,
// packed uint8 indices, uint32 shape) in a program(1.0) / ios16 program.
func lut16Program(layout string) *ProbeProgram {
	name := "lut4-ios16-896-" + layout
	r := probeRand("lut4-ios16-896")
	n := probeHidden
	codes, packed, lut := lutData(r, n, 1)
	blob, off := packBlob([]blobfile.DType{blobfile.UInt8, blobfile.FP16}, packed, f16Payload(lut))
	m := newProbeMIL(true, n)
	m.stmt(fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", n, n), "w", "constexpr_lut_to_dense()", fmt.Sprintf("indices = %s, lut = %s, shape = tensor<uint32, [4]>([%d, %d, 1, 1])",
		m.blob(fmt.Sprintf("tensor<uint8, [%d]>", len(packed)), probeWeightPath, off[0]), m.blob("tensor<fp16, [16]>", probeWeightPath, off[1]), n, n))
	m.conv("y", "x", "w", n)
	w := make([]float64, n*n)
	lf := f16s(lut)
	for i := range w {
		w[i] = lf[codes[i]]
	}
	x := randF16(r, n*probeSeq, 1)
	return &ProbeProgram{Name: name, What: "LUT4 weights, one table (iOS16 constexpr_lut_to_dense in a program(1.0) ios16 program, " + layout + ")",
		Weights: "lut4", Layout: layout, MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob},
		In: ioOf("x", n), Out: ioOf("y", n), X: x, Want: project(w, n, n, f16s(x)), Tol: probeTol}
}

// rowsProgram is y = W·x with `rows` output channels and 896 inputs. Column s of x holds 1 at
// channel 7s+3 and 0.5 at channel 5s+400, so y[o, s] = W[o, 7s+3] + W[o, 5s+400]/2: cheap to
// check, and a transposed or misplaced read gives other values.
func rowsProgram(rows int) *ProbeProgram {
	name := fmt.Sprintf("rows-%d", rows)
	r := probeRand(name)
	n := probeHidden
	// The weights go straight into the blob: at 90 MB, every copy counts.
	recs, size := blobfile.Layout([]blobfile.Entry{{DType: blobfile.FP16, Size: int64(2 * rows * n)}})
	blob := blobfile.AppendRecord(blobfile.AppendHeader(make([]byte, 0, size), 1), recs[0])[:size]
	w := blob[recs[0].DataOffset : recs[0].DataOffset+recs[0].Size]
	for i, v := range fastF16(r, rows*n) {
		binary.LittleEndian.PutUint16(w[2*i:], v)
	}
	weight := func(o, i int) float64 {
		return float64(half.F16ToF32Scalar(binary.LittleEndian.Uint16(w[2*(o*n+i):])))
	}
	m := newProbeMIL(false, n)
	wt := fmt.Sprintf("tensor<fp16, [%d, %d, 1, 1]>", rows, n)
	m.stmt(wt, "w", "const()", "val = "+m.blob(wt, probeWeightPath, recs[0].Offset))
	m.conv("y", "x", "w", rows)
	x := make([]uint16, n*probeSeq)
	want := make([]float64, rows*probeSeq)
	for s := 0; s < probeSeq; s++ {
		a, b := 7*s+3, 5*s+400
		x[a*probeSeq+s] = half.F32ToF16Scalar(1)
		x[b*probeSeq+s] = half.F32ToF16Scalar(0.5)
		for o := 0; o < rows; o++ {
			want[o*probeSeq+s] = weight(o, a) + weight(o, b)/2
		}
	}
	what := "a 32000-row projection (a classifier of that size compiled on hardware)"
	if rows != 32000 {
		what = fmt.Sprintf("a %d-row projection (one of Qwen2.5's three LM-head chunks)", rows)
	}
	return &ProbeProgram{Name: name, What: what, Weights: "fp16", Layout: mil.LayoutPacked,
		MIL: m.text(), Blobs: map[string][]byte{probeWeightPath: blob}, In: ioOf("x", n), Out: ioOf("y", rows),
		X: x, Want: want, Tol: probeTol}
}
