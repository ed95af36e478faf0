// Command anepack turns a Hugging Face language model into one self-contained, memory-mappable
// .aneb bundle: `anepack ./checkpoint-dir -o model.aneb`. Subcommands create synthetic
// checkpoints (synth), show a bundle (inspect) and check it (verify).
package main

import (
	"errors"
	"fmt"
	"os"
)

// exitError carries a specific exit status (e.g. 1 for a failed verification).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "anepack:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}
