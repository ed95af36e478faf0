package mil

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/anepack/anepack/blobfile"
)

// argStyle says where an op takes its parameters from.
type argStyle uint8

const (
	callArgs argStyle = iota // op(x = a, y = b)[name = ...]
	// attrArgs: op()[name = ..., p = <literal>, ...], the form the iOS16 constexpr ops need
	// through the in-memory ANE path (docs/ane.md, "Compressed weights").
	attrArgs
	constArgs // const()[name = ..., val = <literal>]
)

// opDef describes one op the sim knows.
type opDef struct {
	params []string // accepted parameter names
	style  argStyle
	// callIn18: in ios18 functions the op takes call arguments whatever style says (the
	// iOS18 op that replaced an iOS16 one of the same name).
	callIn18 bool
	compile  func(c *compiler, st *Stmt, a *opArgs) (*val, error)
}

// opArgs holds a statement's resolved arguments and remembers which ones the op read, so that
// parameters the op does not know are refused rather than ignored.
type opArgs struct {
	c      *compiler
	st     *Stmt
	vals   map[string]*val
	tuples map[string][]*val
	used   map[string]bool
}

// collectArgs resolves the statement's arguments for def.
func (c *compiler) collectArgs(st *Stmt, def *opDef) (*opArgs, error) {
	a := &opArgs{c: c, st: st, vals: map[string]*val{}, tuples: map[string][]*val{}, used: map[string]bool{}}
	known := map[string]bool{}
	for _, p := range def.params {
		known[p] = true
	}
	add := func(name string, v *val, tuple []*val, isTuple bool) error {
		if !known[name] {
			return stmtErr(st, ErrType, "%s has no parameter %q; it takes %s", st.Op, name, strings.Join(def.params, ", "))
		}
		if _, dup := a.vals[name]; dup {
			return stmtErr(st, ErrType, "parameter %s given twice", name)
		}
		if _, dup := a.tuples[name]; dup {
			return stmtErr(st, ErrType, "parameter %s given twice", name)
		}
		if isTuple {
			a.tuples[name] = tuple
		} else {
			a.vals[name] = v
		}
		return nil
	}
	style := def.style
	if def.callIn18 && c.ios18 {
		style = callArgs
	}
	if style != callArgs && len(st.Args) > 0 {
		if style == attrArgs {
			return nil, stmtErr(st, ErrANE, "%s takes its parameters as bracket attributes with empty parentheses, %s()[name = ..., %s = ...]; the input-style form fails to compile (docs/ane.md, Compressed weights)", st.Op, st.Op, def.params[0])
		}
		return nil, stmtErr(st, ErrType, "%s takes no arguments", st.Op)
	}
	for _, arg := range st.Args {
		switch {
		case arg.Lit != nil:
			v, err := c.literalVal(st, arg.Name, arg.Lit)
			if err != nil {
				return nil, err
			}
			if err := add(arg.Name, v, nil, false); err != nil {
				return nil, err
			}
		case arg.Tuple:
			vs := make([]*val, len(arg.Refs))
			for i, r := range arg.Refs {
				v, ok := c.vars[r.Name]
				if !ok {
					return nil, stmtErr(st, ErrType, "%s: variable %s is not defined", arg.Name, r.Name)
				}
				vs[i] = v
			}
			if err := add(arg.Name, nil, vs, true); err != nil {
				return nil, err
			}
		default:
			v, ok := c.vars[arg.Refs[0].Name]
			if !ok {
				return nil, stmtErr(st, ErrType, "%s: variable %s is not defined", arg.Name, arg.Refs[0].Name)
			}
			if err := add(arg.Name, v, nil, false); err != nil {
				return nil, err
			}
		}
	}
	for _, at := range st.Attrs {
		if at.Name == "name" {
			continue
		}
		if style == callArgs {
			if def.callIn18 {
				return nil, stmtErr(st, ErrType, "attribute %s: in an ios18 function %s is the iOS18 op, which takes call arguments; the attribute form is the iOS16 op of ios16 and ios17 functions", at.Name, st.Op)
			}
			return nil, stmtErr(st, ErrUnsupported, "unexpected attribute %s; %s takes its parameters as arguments", at.Name, st.Op)
		}
		v, err := c.literalVal(st, at.Name, at.Val)
		if err != nil {
			return nil, err
		}
		if err := add(at.Name, v, nil, false); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// finish refuses parameters the op did not read.
func (a *opArgs) finish() error {
	var extra []string
	for n := range a.vals {
		if !a.used[n] {
			extra = append(extra, n)
		}
	}
	for n := range a.tuples {
		if !a.used[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return stmtErr(a.st, ErrUnsupported, "parameter(s) %s are not supported by the sim's %s", strings.Join(extra, ", "), a.st.Op)
	}
	return nil
}

func (a *opArgs) has(name string) bool {
	_, ok := a.vals[name]
	_, ok2 := a.tuples[name]
	return ok || ok2
}

func (a *opArgs) get(name string) (*val, error) {
	v, ok := a.vals[name]
	if !ok {
		if _, isTuple := a.tuples[name]; isTuple {
			return nil, stmtErr(a.st, ErrType, "parameter %s must be a single value, not a tuple", name)
		}
		return nil, stmtErr(a.st, ErrType, "missing parameter %s", name)
	}
	a.used[name] = true
	return v, nil
}

// tensor returns a required fp16/fp32 tensor parameter (runtime or constant).
func (a *opArgs) tensor(name string) (*val, error) {
	v, err := a.get(name)
	if err != nil {
		return nil, err
	}
	if v.typ.Kind != KindTensor || (v.typ.DType != FP16 && v.typ.DType != FP32) {
		return nil, stmtErr(a.st, ErrType, "%s must be an fp16 or fp32 tensor, not %s", name, v.typ)
	}
	return v, nil
}

// constant returns a required constant parameter of dtype dt (any dt when 0).
func (a *opArgs) constant(name string, dt DType) (*val, error) {
	v, err := a.get(name)
	if err != nil {
		return nil, err
	}
	if !v.konst {
		return nil, stmtErr(a.st, ErrANE, "%s must be a constant (op parameters are named consts, docs/ane.md)", name)
	}
	if dt != InvalidDType && v.typ.DType != dt {
		return nil, stmtErr(a.st, ErrType, "%s must be %s, not %s", name, dt, v.typ)
	}
	return v, nil
}

// ints returns a required constant int32 scalar or vector parameter.
func (a *opArgs) ints(name string) ([]int64, error) {
	v, err := a.constant(name, Int32)
	if err != nil {
		return nil, err
	}
	if v.typ.Rank() > 1 {
		return nil, stmtErr(a.st, ErrType, "%s must be an int32 scalar or vector, not %s", name, v.typ)
	}
	return a.c.intsOf(a.st, v)
}

// intScalar returns an int32 scalar parameter, or def when it is absent and not required.
func (a *opArgs) intScalar(name string, def int64, required bool) (int64, error) {
	if !required && !a.has(name) {
		return def, nil
	}
	v, err := a.constant(name, Int32)
	if err != nil {
		return 0, err
	}
	if v.typ.Rank() != 0 {
		return 0, stmtErr(a.st, ErrType, "%s must be an int32 scalar, not %s", name, v.typ)
	}
	return intReader(v).at(0), nil
}

// boolean returns a bool scalar parameter, or def when it is absent.
func (a *opArgs) boolean(name string, def bool) (bool, error) {
	if !a.has(name) {
		return def, nil
	}
	v, err := a.constant(name, Bool)
	if err != nil {
		return false, err
	}
	if v.typ.Rank() != 0 {
		return false, stmtErr(a.st, ErrType, "%s must be a bool scalar, not %s", name, v.typ)
	}
	return intReader(v).at(0) != 0, nil
}

// str returns a string parameter, or def when it is absent and not required.
func (a *opArgs) str(name, def string, required bool) (string, error) {
	if !required && !a.has(name) {
		return def, nil
	}
	v, err := a.constant(name, String)
	if err != nil {
		return "", err
	}
	return v.str, nil
}

// tuple returns a tuple parameter such as concat's values.
func (a *opArgs) tuple(name string) ([]*val, error) {
	vs, ok := a.tuples[name]
	if !ok {
		if v, single := a.vals[name]; single {
			a.used[name] = true
			return []*val{v}, nil
		}
		return nil, stmtErr(a.st, ErrType, "missing parameter %s", name)
	}
	a.used[name] = true
	return vs, nil
}

// literalVal turns a literal into a constant, resolving BLOBFILE references.
func (c *compiler) literalVal(st *Stmt, param string, lit *Literal) (*val, error) {
	if lit.Type.Kind != KindTensor {
		return nil, stmtErr(st, ErrType, "%s: %s values are not allowed here", param, lit.Type)
	}
	if err := c.checkSize(lit.Pos, st.Var, lit.Type); err != nil {
		return nil, err
	}
	v := &val{typ: lit.Type, konst: true, last: -1}
	switch {
	case lit.Blob != nil:
		raw, err := c.blob(st, param, lit)
		if err != nil {
			return nil, err
		}
		// Integer payloads (quantized weights, LUT indices) stay packed: the constexpr ops
		// read them in place with intReader, and intsOf decodes the few that are parameters.
		v.raw = raw
	case lit.Type.DType == String:
		v.str = lit.Str
	case lit.Type.DType.IsFloat():
		if lit.Type.DType != FP16 && lit.Type.DType != FP32 {
			return nil, stmtErr(st, ErrUnsupported, "%s: %s constants are not supported", param, lit.Type.DType)
		}
		v.f = make([]float32, len(lit.Nums))
		for i, x := range lit.Nums {
			v.f[i] = float32(x)
			if lit.Type.DType == FP16 {
				v.f[i] = round16(v.f[i])
			}
		}
	default:
		v.ints = append([]int64(nil), lit.Ints...)
	}
	return v, nil
}

// blob resolves a BLOBFILE literal to its payload: the path must be in the weights, the offset
// must name a 0xDEADBEEF record (not its payload), and the record's dtype code and size must
// match the declared type.
func (c *compiler) blob(st *Stmt, param string, lit *Literal) ([]byte, error) {
	ref := lit.Blob
	werr := func(err error, format string, args ...any) error {
		e := stmtErr(st, ErrWeights, "%s: BLOBFILE(%q, offset %d): %s", param, ref.Path, ref.Offset, fmt.Sprintf(format, args...))
		e.Err = err
		return e
	}
	data, ok := c.weights[ref.Path]
	if !ok {
		have := make([]string, 0, len(c.weights))
		for p := range c.weights {
			have = append(have, p)
		}
		sort.Strings(have)
		return nil, werr(nil, "path not in the weights dictionary (have %s)", strings.Join(have, ", "))
	}
	f := c.files[ref.Path]
	if f == nil {
		var err error
		if f, err = blobfile.Parse(data); err != nil {
			return nil, werr(err, "%v", err)
		}
		c.files[ref.Path] = f
	}
	if ref.Offset > math.MaxInt64 {
		return nil, werr(nil, "offset out of range")
	}
	rec, err := f.RecordAt(int64(ref.Offset))
	if err != nil {
		var fe *blobfile.FormatError
		if errors.As(err, &fe) {
			return nil, werr(err, "%s (the offset must name a record: 64 for the first)", fe.Msg)
		}
		return nil, werr(err, "%v", err)
	}
	code, ok := lit.Type.DType.blobCode()
	if !ok {
		return nil, werr(nil, "%s cannot be stored in a weight blob", lit.Type.DType)
	}
	if rec.DType != code {
		return nil, werr(nil, "record dtype code %d (%s) does not match the declared %s (code %d)", uint32(rec.DType), rec.DType, lit.Type, uint32(code))
	}
	want := (int64(lit.Type.Elements())*int64(lit.Type.DType.Bits()) + 7) / 8
	if rec.Size != want {
		return nil, werr(nil, "record payload is %d bytes; %s needs %d", rec.Size, lit.Type, want)
	}
	return f.Payload(rec), nil
}

// intsOf returns an integer constant's values, decoding a BLOBFILE payload (8 bytes a value,
// charged to the budget) on first use.
func (c *compiler) intsOf(st *Stmt, v *val) ([]int64, error) {
	if v.ints == nil && v.raw != nil {
		n := v.typ.Elements()
		if err := c.charge(st.Pos, st.Var, "decoded integer constants", 8*int64(n)); err != nil {
			return nil, err
		}
		r := intReader(v)
		v.ints = make([]int64, n)
		for i := range v.ints {
			v.ints[i] = r.at(i)
		}
	}
	return v.ints, nil
}

// ints reads the elements of an integer or bool constant: decoded literal values, or a
// BLOBFILE payload read in place (little-endian; sub-byte types packed least significant
// bits first, docs/ane.md "Weight blobs").
type ints struct {
	dec    []int64
	raw    []byte
	bits   int
	signed bool
}

// intReader returns a reader of v's integer elements.
func intReader(v *val) ints {
	dt := v.typ.DType
	return ints{dec: v.ints, raw: v.raw, bits: dt.Bits(),
		signed: dt == Int4 || dt == Int8 || dt == Int16 || dt == Int32 || dt == Int64}
}

// at returns element i.
func (r ints) at(i int) int64 {
	if r.raw == nil {
		return r.dec[i]
	}
	var u uint64
	if r.bits%8 == 0 {
		nb := r.bits / 8
		for k := nb - 1; k >= 0; k-- {
			u = u<<8 | uint64(r.raw[i*nb+k])
		}
	} else {
		bit := i * r.bits
		for k := 0; k < r.bits; k++ {
			b := bit + k
			u |= uint64(r.raw[b/8]>>(b%8)&1) << k
		}
	}
	if r.signed && r.bits < 64 && u&(1<<(r.bits-1)) != 0 {
		u |= ^uint64(0) << r.bits
	}
	return int64(u)
}
