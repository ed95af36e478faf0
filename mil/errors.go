package mil

import (
	"errors"
	"fmt"
)

// Error categories; every error Compile returns wraps exactly one, so callers and tests can
// tell "the ANE would refuse this" from "the sim cannot do this" with errors.Is.
var (
	// ErrANE marks programs the ANE compiler rejects, or accepts and then computes wrongly
	// (docs/ane.md).
	ErrANE = errors.New("refused: the ANE rejects this or computes it wrongly")
	// ErrUnsupported marks valid MIL the sim does not implement.
	ErrUnsupported = errors.New("not supported by the MIL simulator")
	// ErrType marks ill-typed programs: wrong parameter types, shapes that do not agree,
	// undefined variables, declared types that differ from what the op produces.
	ErrType = errors.New("type error")
	// ErrWeights marks BLOBFILE constants that do not resolve: a path missing from the weights,
	// an offset that is not a record, a dtype or size that differs from the declared type.
	ErrWeights = errors.New("weight blob error")
)

// CompileError is an error in one place of a program.
type CompileError struct {
	Pos  Pos
	Var  string // the statement's variable, or the input/output name; may be empty
	Op   string // the op, or "input"/"output"/"program"
	Msg  string
	Kind error // one of ErrANE, ErrUnsupported, ErrType, ErrWeights
	Err  error // an underlying error (e.g. a blobfile.FormatError), or nil
}

// Error formats the error as "mil: line:col: op var: message".
func (e *CompileError) Error() string {
	where := e.Op
	if e.Var != "" {
		where += " " + e.Var
	}
	s := fmt.Sprintf("mil: %s: %s: %s", e.Pos, where, e.Msg)
	if e.Kind == ErrANE {
		s += " (the ANE rejects this or computes it wrongly)"
	}
	return s
}

// Unwrap exposes both the category and the underlying error to errors.Is.
func (e *CompileError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

func stmtErr(st *Stmt, kind error, format string, args ...any) *CompileError {
	return &CompileError{Pos: st.Pos, Var: st.Var, Op: st.Op, Msg: fmt.Sprintf(format, args...), Kind: kind}
}
