package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// ExitError makes a command exit with Code. Err, when set, is printed first; a nil Err exits
// quietly (the command has already said why).
type ExitError struct {
	Code int
	Err  error
}

// Error implements error.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the reason.
func (e *ExitError) Unwrap() error { return e.Err }

// Main runs root and exits the process with the status it earned: 0, the ExitError's code,
// ExitInterrupted after Ctrl-C, 1 for any other error (printed as one line, "tool: error"),
// and 2 for a bug that panicked in the command's goroutine: one line asking for a report
// instead of a stack trace (GOTRACEBACK=1 shows it).
func Main(tool string, root *cobra.Command) {
	os.Exit(run(tool, root, Stderr()))
}

func run(tool string, root *cobra.Command, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			if os.Getenv("GOTRACEBACK") != "" {
				panic(r)
			}
			fmt.Fprintf(stderr, "%s: internal error: %v (this is a bug: please report it with the command that caused it; GOTRACEBACK=1 shows where it happened)\n", tool, r)
			code = 2
		}
	}()
	return ExitCode(tool, root.Execute(), stderr)
}

// ExitCode prints err (if any) on stderr as "tool: err" and returns the exit status for it.
func ExitCode(tool string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if Interrupted() && errors.Is(err, context.Canceled) {
		return ExitInterrupted // SignalContext has said so already
	}
	code := 1
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
		if ee.Err == nil {
			return code
		}
	}
	if Interrupted() {
		code = ExitInterrupted
	}
	// Errors quote what they were given (a template's own message among them): its control
	// characters are escaped, and the lines after the first indented, so that none can pass
	// for a line of the tool's own.
	msg := strings.ReplaceAll(strings.TrimRight(PrintableLines(err.Error()), "\n"), "\n", "\n  ")
	fmt.Fprintf(stderr, "%s: %s\n", tool, msg)
	return code
}
