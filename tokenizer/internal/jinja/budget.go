package jinja

import (
	"fmt"
	"math"
)

// A chat template comes from the bundle, so it may be hostile: `{{ "x"|indent(10**10) }}`, a loop
// that doubles a string, `[1] * 2**62`, a namespace that contains itself. jinja2 trusts its
// templates and would exhaust the process; here every rendering runs under a budget, checked
// before anything is allocated, so such a template fails with an error instead:
//
//   - steps: every statement executed, expression evaluated, loop iteration and macro call
//     costs one, so the time a rendering takes is bounded by the step budget times the cost of
//     one node (tens of nanoseconds), plus the byte budget below;
//   - the largest value: no string, list or output may exceed maxBytes;
//   - bytes: every byte a rendering allocates (strings, lists, the output) and every byte an
//     operation must read through (comparing, searching, hashing a key) is charged, so memory
//     and the time spent in linear operations are bounded together.
//
// A failed check sets err, which stays set: helpers that cannot return an error (equality,
// repr) stop early and the evaluator reports err after the node.

// Sizes charged per element, roughly what Go spends on them.
const (
	itemBytes = 16 // one Value in a List or Tuple
	charBytes = 32 // one one-character string made by iterating a string (header + Value)
	dictBytes = 64 // one Dict entry: key, value and index slot
)

// maxValueDepth bounds the nesting the recursive walks over values follow (repr, tojson,
// equality, ordering, hashing): deeper values, which only a namespace that contains itself
// or a loop that nests a list in itself thousands of times can build, are refused.
const maxValueDepth = 512

// budget is what one rendering may still spend. A nil budget is unlimited (the exported helpers
// such as Str and Repr use one).
type budget struct {
	steps    int64 // steps left
	maxSteps int64
	maxBytes int64 // the largest string, list or output
	bytes    int64 // bytes left to allocate or read
	maxAlloc int64
	err      error // the first limit hit; sticky
}

// step charges one evaluation step.
func (b *budget) step() error {
	if b == nil {
		return nil
	}
	b.steps--
	if b.steps < 0 {
		return b.fail(&Error{Kind: "TemplateRuntimeError", Msg: fmt.Sprintf("template exceeded its step budget of %d (RenderOptions.MaxSteps)", b.maxSteps)})
	}
	return b.err
}

// alloc checks and charges one new value of n bytes (n may be a saturated product, see mul).
func (b *budget) alloc(n int64) error { return b.grow(n, n) }

// grow checks a value growing to size bytes and charges the n bytes it grows by.
func (b *budget) grow(size, n int64) error {
	if b == nil {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	if size > b.maxBytes {
		return b.fail(&Error{Kind: "MemoryError", Msg: fmt.Sprintf("a value of %s exceeds the template's size limit of %d bytes (RenderOptions.MaxBytes)", sizeText(size), b.maxBytes)})
	}
	return b.charge(n)
}

// read charges the work of reading n bytes (a comparison, a search, hashing a key). It reports
// whether the budget still holds; when not, b.err says why.
func (b *budget) read(n int64) bool {
	if b == nil {
		return true
	}
	if b.err != nil {
		return false
	}
	return b.charge(n) == nil
}

func (b *budget) charge(n int64) error {
	b.bytes -= n
	if b.bytes < 0 || n < 0 {
		return b.fail(&Error{Kind: "MemoryError", Msg: fmt.Sprintf("template exceeded its budget of %d bytes allocated or read (RenderOptions.MaxAlloc)", b.maxAlloc)})
	}
	return nil
}

// deep records a value nested beyond maxValueDepth.
func (b *budget) deep() error {
	e := &Error{Kind: "RecursionError", Msg: fmt.Sprintf("value nested more than %d levels deep (or containing itself)", maxValueDepth)}
	if b == nil {
		return e
	}
	return b.fail(e)
}

func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// failed returns the sticky error (nil for an unlimited budget).
func (b *budget) failed() error {
	if b == nil {
		return nil
	}
	return b.err
}

// limit is the largest value b allows (no limit for a nil budget).
func (b *budget) limit() int64 {
	if b == nil {
		return math.MaxInt64
	}
	return b.maxBytes
}

// mul and add saturate at MaxInt64 instead of overflowing, so a size computed from hostile
// operands (len * 2**62) is simply too large rather than negative or wrapped.
func mul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func sizeText(n int64) string {
	if n == math.MaxInt64 {
		return "more than 2^63 bytes"
	}
	return fmt.Sprintf("%d bytes", n)
}
