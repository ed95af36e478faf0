// Command anerun runs a packed model: `anerun model.aneb "prompt"` memory-maps the bundle,
// applies its chat template and streams the generated text to stdout. `anerun -i model.aneb` is
// an interactive chat; the subcommands benchmark (bench), print logits for comparison with
// transformers (logits), and show what the tokenizer and the chat template do (tokenize,
// template).
//
// The commands are registered in one place, newRootCmd in root.go; each lives in its own file.
// The backend is chosen in backend.go.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// processStart is as close to the start of the process as Go code can observe, for the time to
// first token that --verbose reports.
var processStart = time.Now()

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error // nil: exit quietly with code
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitInterrupted is the status after Ctrl-C, as shells report a process killed by SIGINT.
const exitInterrupted = 130

func main() {
	if err := newRootCmd().Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil {
				fmt.Fprintln(os.Stderr, "anerun:", ee.err)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "anerun:", err)
		os.Exit(1)
	}
}
