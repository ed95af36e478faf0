package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/store"
)

// SelfTests returns the self-test records in dir, or in the anepack store directory
// (store.DefaultDir) when dir is "".
func SelfTests(dir string) (ane.SelfTestCache, error) {
	if dir == "" {
		var err error
		if dir, err = store.DefaultDir(); err != nil {
			return ane.SelfTestCache{}, err
		}
	}
	return ane.DefaultSelfTestCache(dir), nil
}

// RunSelfTest runs the ANE self-test in this process. An Objective-C exception inside the
// framework ends the process; ChildSelfTest contains it.
func RunSelfTest() ane.SelfTestRecord {
	d, err := ane.Open()
	if err != nil {
		return ane.SelfTestRecord{Reason: err.Error()}
	}
	return ane.SelfTest(d)
}

// WriteSelfTest is the child's side of ChildSelfTest: it runs the self-test in this process
// and writes its record to w as JSON (`anerun doctor --self-test`).
func WriteSelfTest(w io.Writer) error {
	return json.NewEncoder(w).Encode(RunSelfTest())
}

// SelfTestTimeout bounds a ChildSelfTest: three small compiles take well under a second when
// the ANE works.
const SelfTestTimeout = 2 * time.Minute

// ChildSelfTest returns an Options.SelfTest that runs exe with args, which must print one
// record as WriteSelfTest does, and returns that record; a child that crashes, runs past
// SelfTestTimeout or prints something else gives a failed record saying so, with the line of
// its stderr that says why.
func ChildSelfTest(exe string, args ...string) func() ane.SelfTestRecord {
	return func() ane.SelfTestRecord {
		ctx, cancel := context.WithTimeout(context.Background(), SelfTestTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		tail := crashLine(errb.String())
		switch {
		case ctx.Err() != nil:
			return ane.SelfTestRecord{Reason: fmt.Sprintf("the self-test did not finish in %v%s", SelfTestTimeout, tail)}
		case err != nil:
			return ane.SelfTestRecord{Reason: fmt.Sprintf("the self-test process died (%v)%s", err, tail)}
		}
		var rec ane.SelfTestRecord
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
			return ane.SelfTestRecord{Reason: fmt.Sprintf("the self-test printed no record (%v)%s", err, tail)}
		}
		return rec
	}
}

// crashMarks are the lines of a dying process's stderr that say why, most telling first: the
// Objective-C runtime's report of an exception, then Go's of a signal or a panic.
var crashMarks = []string{"uncaught exception", "SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "fatal error:", "panic:"}

// crashLine returns ": " and the line of stderr that best says why the child failed (at most
// 300 bytes), or "" for an empty stderr.
func crashLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	for _, mark := range crashMarks {
		if i := strings.Index(stderr, mark); i >= 0 {
			start := strings.LastIndexByte(stderr[:i], '\n') + 1
			end := strings.IndexByte(stderr[i:], '\n')
			if end < 0 {
				end = len(stderr) - i
			}
			l = strings.TrimSpace(stderr[start : i+end])
			break
		}
	}
	if l == "" {
		return ""
	}
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return ": " + l
}

// Predict says which backend Auto picks on a machine whose ANE probe is host, for a bundle
// with ANE programs (hasPrograms) or without, given this OS build's self-test record (nil: not
// run yet), and why, without opening anything (`anerun doctor`). It follows Open: ANE where
// the driver opens and the self-test passed, else CPU.
func Predict(host ane.Report, hasPrograms bool, selfTest *ane.SelfTestRecord) (name, reason string) {
	switch {
	case !host.Available:
		return CPU, "the ANE is not available: " + host.Reason
	case !hasPrograms:
		return CPU, "the bundle has no ANE programs (packed with --no-ane)"
	case selfTest == nil:
		return ANE, "if the ANE self-test passes: the first --backend auto run on this OS build runs it"
	case !selfTest.Passed:
		return CPU, "the ANE self-test failed on this OS build: " + selfTest.Reason
	}
	return ANE, "the ANE self-test passed on this OS build"
}
