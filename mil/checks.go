package mil

import (
	"fmt"
	"sort"
	"strings"
)

// Program versions and opsets the sim accepts. program(1.0) is the old (macOS 13 era) form and
// pairs with opsets up to ios17; ios18 bodies need program(1.3): a 1.0 header on an ios18 body
// gives InvalidMILProgram (docs/ane.md, "Program text"). program(1.5) is claimed for M5
// by one unmerged pull request and is unverified, so it is refused rather than guessed at.
var (
	knownVersions = map[string]bool{"1": true, "1.0": true, "1.3": true}
	knownOpsets   = map[string]bool{"ios15": true, "ios16": true, "ios17": true, "ios18": true}
)

// checkHeader checks the program version against the chosen function's opset and returns
// that function.
func (p *Program) checkHeader(name string) (*Func, error) {
	progErr := func(pos Pos, kind error, format string, args ...any) error {
		return &CompileError{Pos: pos, Op: "program", Msg: fmt.Sprintf(format, args...), Kind: kind}
	}
	if !knownVersions[p.Version] {
		return nil, progErr(p.VersionPos, ErrUnsupported, "program(%s): known versions are 1.0 and 1.3 (1.5 is unverified)", p.Version)
	}
	if len(p.Funcs) == 0 {
		return nil, progErr(p.VersionPos, ErrType, "has no functions")
	}
	seen := map[string]bool{}
	for _, f := range p.Funcs {
		if seen[f.Name] {
			return nil, progErr(f.Pos, ErrType, "function %s is defined twice", f.Name)
		}
		seen[f.Name] = true
		if !knownOpsets[f.Opset] {
			return nil, progErr(f.Pos, ErrUnsupported, "func %s<%s>: unknown opset; expected ios15..ios18", f.Name, f.Opset)
		}
		if f.Opset == "ios18" && (p.Version == "1" || p.Version == "1.0") {
			return nil, progErr(f.Pos, ErrANE, "func %s<ios18> under a program(%s) header: ios18 bodies need program(1.3) (InvalidMILProgram)", f.Name, p.Version)
		}
	}
	if name == "" {
		if len(p.Funcs) == 1 {
			return p.Funcs[0], nil
		}
		name = "main"
	}
	for _, f := range p.Funcs {
		if f.Name == name {
			return f, nil
		}
	}
	names := make([]string, len(p.Funcs))
	for i, f := range p.Funcs {
		names[i] = f.Name
	}
	return nil, progErr(p.VersionPos, ErrType, "no function %q; the program has %s", name, strings.Join(names, ", "))
}

// checkIO applies the ANE's I/O rules to a function input or output (docs/ane.md, "Inputs and outputs"):
// an fp16 or fp32 tensor [1, C, 1, S] (or another rank-4 shape) whose last dimension, the
// row the ANE pads to 64 bytes, is at least and a multiple of 32 fp16 or 16 fp32 elements.
// Smaller rows give all-zero or garbage outputs, or eval failures.
func checkIO(pos Pos, what, name string, t Type) error {
	e := func(kind error, format string, args ...any) error {
		return &CompileError{Pos: pos, Var: name, Op: what, Msg: fmt.Sprintf(format, args...), Kind: kind}
	}
	if t.Kind != KindTensor || (t.DType != FP16 && t.DType != FP32) {
		return e(ErrANE, "is %s; ANE inputs and outputs are fp16 or fp32 tensors", t)
	}
	if t.Rank() != 4 {
		// Every ANE program we know of exchanges [1, C, 1, S]; others are
		// unverified rather than known to fail.
		return e(ErrUnsupported, "is %s; the sim takes rank-4 [1, C, 1, S] inputs and outputs", t)
	}
	row := 32
	if t.DType == FP32 {
		row = 16
	}
	if s := t.Shape[3]; s < row || s%row != 0 {
		return e(ErrANE, "is %s: the last dimension %d must be a positive multiple of %d for %s I/O (each row is padded to 64 bytes; smaller rows give zeros or garbage)", t, s, row, t.DType)
	}
	return nil
}

// checkSorted refuses several inputs or outputs whose names do not sort in declaration order:
// the ANE binds I/O surfaces in alphabetical order of the MIL names (docs/ane.md, "Inputs and outputs"), so any
// other order silently swaps them.
func checkSorted[T any](pos Pos, what string, items []T, name func(T) string) error {
	if len(items) < 2 {
		return nil
	}
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = name(it)
	}
	if sort.StringsAreSorted(names) {
		return nil
	}
	return &CompileError{Pos: pos, Op: what, Kind: ErrANE,
		Msg: fmt.Sprintf("(%s) are not in alphabetical order; the ANE binds %s alphabetically, so they would be swapped; rename them, e.g. a_%s, b_%s", strings.Join(names, ", "), what, names[0], names[1])}
}
