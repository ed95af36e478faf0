package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/store"
)

// The ANE self-test that --backend auto requires. It runs once per OS build, in a child
// process (`anerun doctor --self-test`): an Objective-C exception inside the private framework
// cannot be caught from Go and aborts the process, and a failed test must fall back to the
// CPU, not kill the user's first run.

// selfTestTimeout bounds the child: three small compiles take well under a second when the
// ANE works.
const selfTestTimeout = 2 * time.Minute

// selfTestCache is the self-test record file in the anepack store directory.
func selfTestCache() (ane.SelfTestCache, error) {
	dir, err := store.DefaultDir()
	if err != nil {
		return ane.SelfTestCache{}, err
	}
	return ane.DefaultSelfTestCache(dir), nil
}

// autoANE decides whether --backend auto uses the ANE, running the self-test (in a child
// process) when this OS build has no record yet.
func autoANE() ane.AutoChoice {
	cache, err := selfTestCache()
	if err != nil {
		cache = ane.SelfTestCache{} // decided and not remembered: DecideAuto says so
	}
	return ane.DecideAuto(ane.Probe(), cache, func() ane.SelfTestRecord {
		exe, err := os.Executable()
		if err != nil {
			return ane.SelfTestRecord{Reason: "cannot find the anerun executable to run the self-test in: " + err.Error()}
		}
		return runSelfTestChild(exe, "doctor", "--self-test")
	})
}

// runSelfTestChild runs exe with args, which must print one ane.SelfTestRecord as JSON, and
// returns the record; a child that crashes, times out or prints something else gives a failed
// record saying so.
func runSelfTestChild(exe string, args ...string) ane.SelfTestRecord {
	ctx, cancel := context.WithTimeout(context.Background(), selfTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	tail := crashLine(errb.String())
	switch {
	case ctx.Err() != nil:
		return ane.SelfTestRecord{Reason: fmt.Sprintf("the self-test did not finish in %v%s", selfTestTimeout, tail)}
	case err != nil:
		return ane.SelfTestRecord{Reason: fmt.Sprintf("the self-test process died (%v)%s", err, tail)}
	}
	var rec ane.SelfTestRecord
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		return ane.SelfTestRecord{Reason: fmt.Sprintf("the self-test printed no record (%v)%s", err, tail)}
	}
	return rec
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

// selfTestChild is `anerun doctor --self-test`, the child's side: run the self-test in this
// process and print its record.
func selfTestChild(w io.Writer) error {
	var rec ane.SelfTestRecord
	if d, err := ane.Open(); err != nil {
		rec.Reason = err.Error()
	} else {
		rec = ane.SelfTest(d)
	}
	return json.NewEncoder(w).Encode(rec)
}
