package jinja

// Expression and statement nodes, mirroring jinja2.nodes for the constructs supported.

type expr interface{ line() int }

type pos struct{ ln int }

func (p pos) line() int { return p.ln }

type (
	constExpr struct {
		pos
		v Value
	}
	nameExpr struct {
		pos
		name string
	}
	listExpr struct {
		pos
		items []expr
	}
	tupleExpr struct {
		pos
		items []expr
	}
	dictExpr struct {
		pos
		keys, vals []expr
	}
	getattrExpr struct {
		pos
		obj  expr
		name string
	}
	getitemExpr struct {
		pos
		obj, key expr
	}
	sliceExpr struct {
		pos
		start, stop, step expr // nil when omitted
	}
	callArgs struct {
		args      []expr
		kwNames   []string
		kwVals    []expr
		dynArgs   expr
		dynKwargs expr
	}
	callExpr struct {
		pos
		fn expr
		callArgs
	}
	filterExpr struct {
		pos
		obj  expr // nil inside {% filter %} blocks
		name string
		callArgs
	}
	testExpr struct {
		pos
		obj  expr
		name string
		callArgs
	}
	unaryExpr struct {
		pos
		op string // "-", "+", "not"
		x  expr
	}
	binExpr struct {
		pos
		op   string // + - * / // % ** and or
		l, r expr
	}
	concatExpr struct {
		pos
		parts []expr
	}
	compareExpr struct {
		pos
		first expr
		ops   []string // eq ne lt lteq gt gteq in notin
		rest  []expr
	}
	condExpr struct {
		pos
		test, then, els expr // els may be nil
	}
)

type stmt interface{}

type (
	dataStmt   struct{ text string }
	outputStmt struct{ x expr }
	forStmt    struct {
		pos
		target    expr
		iter      expr
		body, els []stmt
		test      expr
		// ownFrames: the body defines a macro, which keeps the frame it was defined in, so
		// each iteration needs a frame of its own; other loops reuse one.
		ownFrames bool
	}
	ifStmt struct {
		pos
		tests  []expr // if, elif...
		bodies [][]stmt
		els    []stmt
	}
	setStmt struct {
		pos
		target expr
		x      expr
	}
	setBlockStmt struct {
		pos
		target expr
		filter *filterExpr // may be nil
		body   []stmt
	}
	macroStmt struct {
		pos
		name     string
		args     []string
		defaults []expr // for the last len(defaults) args
		body     []stmt
	}
	filterBlockStmt struct {
		pos
		filter *filterExpr
		body   []stmt
	}
	withStmt struct {
		pos
		targets []expr
		values  []expr
		body    []stmt
	}
	breakStmt    struct{ pos }
	continueStmt struct{ pos }
	// nsRef is the target of {% set ns.attr = ... %}.
	nsRef struct {
		pos
		name, attr string
	}
)

// definesMacro reports whether body defines a macro anywhere inside.
func definesMacro(body []stmt) bool {
	for _, s := range body {
		switch s := s.(type) {
		case *macroStmt:
			return true
		case *ifStmt:
			for _, b := range s.bodies {
				if definesMacro(b) {
					return true
				}
			}
			if definesMacro(s.els) {
				return true
			}
		case *forStmt:
			if s.ownFrames || definesMacro(s.els) {
				return true
			}
		case *setBlockStmt:
			if definesMacro(s.body) {
				return true
			}
		case *filterBlockStmt:
			if definesMacro(s.body) {
				return true
			}
		case *withStmt:
			if definesMacro(s.body) {
				return true
			}
		}
	}
	return false
}
