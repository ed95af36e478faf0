package mil

// Program is a parsed MIL text: its version, its attributes (buildInfo) and its functions.
type Program struct {
	Version    string // as written in program(...), e.g. "1.3"
	VersionPos Pos
	Attrs      []Attr
	Funcs      []*Func
}

// Func is one function, e.g. `func main<ios18>(tensor<fp16, [1, 64, 1, 32]> x) { ... } -> (y);`.
type Func struct {
	Name    string
	Opset   string // "ios18", "ios16", ...
	Pos     Pos
	Params  []Param
	Attrs   []Attr // optional [..] between the parameter list and the body
	Stmts   []*Stmt
	Outputs []Ref
}

// Param is a function input.
type Param struct {
	Name string
	Type Type
	Pos  Pos
}

// Ref names a variable.
type Ref struct {
	Name string
	Pos  Pos
}

// Stmt is one statement: `<type> <var> = <op>(<args>)[<attrs>];`.
type Stmt struct {
	Pos   Pos
	Type  Type // declared result type
	Var   string
	Op    string
	Args  []Arg  // call arguments
	Attrs []Attr // bracket attributes: name, and const's val, and the attribute-style constexpr parameters
}

// Arg is one call argument: a variable, a tuple of variables `(a, b)`, or an inline literal.
type Arg struct {
	Name  string
	Pos   Pos
	Refs  []Ref // one for a plain variable, several for a tuple
	Tuple bool
	Lit   *Literal
}

// Attr is a bracket attribute `name = <literal>`.
type Attr struct {
	Name string
	Pos  Pos
	Val  *Literal
}

// Literal is a typed value: `int32(1)`, `tensor<int32, [2]>([1, 1])`, `tensor<string, []>("valid")`,
// `tensor<fp16, [O, I, 1, 1]>(BLOBFILE(...))`, or the dict of buildInfo.
type Literal struct {
	Type Type
	Pos  Pos
	Ints []int64   // integer and bool data (bool as 0/1)
	Nums []float64 // floating-point data
	Str  string    // string scalar
	Blob *BlobRef  // BLOBFILE reference instead of inline data
	Dict [][2]string
}

// BlobRef is the BLOBFILE(path, offset) of a constant: offset names the 64-byte record.
type BlobRef struct {
	Path   string
	Offset uint64
}

// attr returns the attribute called name, or nil.
func (s *Stmt) attr(name string) *Attr {
	for i := range s.Attrs {
		if s.Attrs[i].Name == name {
			return &s.Attrs[i]
		}
	}
	return nil
}
