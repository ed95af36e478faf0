package runtime

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/anepack/anepack/runtime/kernels"
)

// recoverPass, deferred by a forward pass, turns the pass's panic into *err: a kernel that
// refuses its arguments panics (a bug, or a bundle the checks at open let through), and an
// error ends the one sequence or request instead of the process. The kernels' pool raises a
// worker's panic on the caller as a *kernels.PanicError, with the worker's stack.
func recoverPass(err *error) {
	r := recover()
	if r == nil {
		return
	}
	var pe *kernels.PanicError
	if e, ok := r.(error); !ok || !errors.As(e, &pe) {
		pe = &kernels.PanicError{Value: r, Stack: debug.Stack()}
	}
	*err = fmt.Errorf("the forward pass failed: %w", pe)
}
