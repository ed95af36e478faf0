package serve

import (
	"fmt"
	"runtime/debug"

	"github.com/anepack/anepack/runtime"
)

// The engine's goroutine runs every request's passes, token choices and text: a panic there
// (a kernel refusing a bundle the checks at open let through, a bug in a grammar) would kill the
// server for everyone. The engine's calls into the runtime go through these methods, which
// turn a panic into an error for the requests of that call only.

// panicError is a recovered panic: its value, and the stack it was raised on.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("internal error: %v", e.value) }

// recoverInto, deferred, stores a panic of the deferring function in *err.
func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = &panicError{value: r, stack: debug.Stack()}
	}
}

// run runs the pass that is queued.
func (e *engine) run() (err error) {
	defer recoverInto(&err)
	return e.sb.Run()
}

// next asks j's generator for its next token.
func (e *engine) next(j *job) (id int, more bool, err error) {
	defer recoverInto(&err)
	return j.gen.Next()
}

// start makes j's generator and finds how much of its prompt the session has cached.
func (e *engine) start(j *job) (reused int, err error) {
	defer recoverInto(&err)
	if j.gen, err = j.sess.NewGenerator(j.prompt, j.opts); err != nil {
		return 0, err
	}
	return j.sess.Reuse(j.prompt)
}

// end finishes j's generator.
func (e *engine) end(j *job) (res *runtime.Result, err error) {
	defer recoverInto(&err)
	return j.gen.Finish()
}
