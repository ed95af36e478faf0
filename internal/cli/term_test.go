package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// onScreen points the shared screen at a buffer for one test, as if it were a terminal.
func onScreen(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	screen.mu.Lock()
	old := screen.w
	screen.w, screen.open, screen.frozen = &buf, false, false
	screen.mu.Unlock()
	t.Cleanup(func() {
		screen.mu.Lock()
		screen.w, screen.open, screen.frozen = old, false, false
		screen.mu.Unlock()
	})
	return &buf
}

// TestBar draws a bar as on a terminal: done/total in binary units, the label change to
// "verifying", a final line with the time, and a log line that clears the bar's line first.
func TestBar(t *testing.T) {
	buf := onScreen(t)
	p := &Progress{label: "downloading", bytes: true, tty: true, w: Stderr(), total: 4 << 20}
	p.Set(1<<20, 4<<20)
	Stderr().Write([]byte("a log line\n"))
	p.SetLabel("verifying")
	p.Set(4<<20, 4<<20)
	p.Finish()
	got := buf.String()
	for _, want := range []string{
		clearLine + "downloading  25% [=====               ] 1.0 MiB/4.0 MiB",
		clearLine + "a log line\n",
		clearLine + "verifying 100% [====================] 4.0 MiB/4.0 MiB in ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("screen %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "s\n") {
		t.Errorf("the finished bar does not end its line: %q", got)
	}
}

// TestNothingDoneNothingShown: a task that never reported progress (a bundle verified before,
// not hashed again) prints no "done in 0.0s" line, on a terminal or in a log.
func TestNothingDoneNothingShown(t *testing.T) {
	buf := onScreen(t)
	(&Progress{label: "verifying", bytes: true, tty: true, w: Stderr()}).Finish()
	var log bytes.Buffer
	(&Progress{label: "verifying", bytes: true, w: &log}).Finish()
	if buf.Len() != 0 || log.Len() != 0 {
		t.Errorf("terminal %q, log %q; want nothing", buf.String(), log.String())
	}
}

// TestInterruptLine: the interrupt message ends the bar's open line and stays the last line:
// the bar draws no more.
func TestInterruptLine(t *testing.T) {
	buf := onScreen(t)
	p := &Progress{label: "converting", bytes: true, tty: true, w: Stderr(), total: 100}
	p.Set(50, 100)
	interruptLine("anepack: interrupted; stopping")
	p.Set(100, 100)
	p.Finish()
	got := buf.String()
	if !strings.HasSuffix(got, "50 B/100 B\nanepack: interrupted; stopping\n") {
		t.Errorf("screen %q", got)
	}
}

// TestSpinnerLines: off a terminal a spinner is one line, and stopping it twice is harmless.
func TestSpinnerLines(t *testing.T) {
	var buf bytes.Buffer
	s := newSpinner("Org/M: asking the Hub for its files", false, false, &buf)
	s.Stop()
	s.Stop()
	if buf.String() != "Org/M: asking the Hub for its files ...\n" {
		t.Errorf("%q", buf.String())
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"temperature", "tempreature", 1}, {"seed", "sede", 1}, {"force", "foorce", 1}, {"ctx", "cxt", 1}, {"abc", "xyz", 3}, {"", "ab", 2}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d; want %d", c.a, c.b, got, c.d)
		}
	}
}

// TestArgsAndFlagErrors checks the messages for missing and extra arguments and for unknown
// flags, aliases included.
func TestArgsAndFlagErrors(t *testing.T) {
	cmd := &cobra.Command{Use: "inspect BUNDLE", Args: Args(0, "BUNDLE"), RunE: func(*cobra.Command, []string) error { return nil }}
	var temp float64
	cmd.Flags().Float64Var(&temp, "temperature", 0, "")
	cmd.Flags().Bool("json", false, "")
	Aliases(cmd, map[string]string{"temp": "temperature", "ctx-size": "ctx"})
	if err := cmd.Args(cmd, nil); err == nil || err.Error() != "missing argument BUNDLE (usage: inspect BUNDLE [flags])" {
		t.Errorf("missing: %v", err)
	}
	if err := cmd.Args(cmd, []string{"a", "b"}); err == nil || !strings.HasPrefix(err.Error(), `too many arguments: "b" is one more than inspect takes`) {
		t.Errorf("extra: %v", err)
	}
	if err := cmd.ParseFlags([]string{"--temp", "0.5"}); err != nil || temp != 0.5 {
		t.Errorf("--temp: %v, temperature %v", err, temp)
	}
	if err := cmd.ParseFlags([]string{"--ctx-size", "5"}); err == nil {
		t.Errorf("an alias of a flag the command lacks was accepted")
	}
	for flag, want := range map[string]string{
		"--jsn":          "unknown flag --jsn; did you mean --json?",
		"--tempretaure":  "unknown flag --tempretaure; did you mean --temperature?",
		"--tem":          "unknown flag --tem; did you mean --temperature?",
		"--nothing-near": "unknown flag --nothing-near (inspect --help lists the flags)",
	} {
		err := cmd.ParseFlags([]string{flag})
		if err == nil {
			t.Fatalf("%s parsed", flag)
		}
		if got := FlagError(cmd, err).Error(); got != want {
			t.Errorf("%s: %q; want %q", flag, got, want)
		}
	}
}

// TestExitCode maps errors to statuses: ExitError's code, 1 otherwise, and a quiet ExitError.
func TestExitCode(t *testing.T) {
	var buf bytes.Buffer
	if c := ExitCode("anepack", &ExitError{Code: 3, Err: errors.New("bad")}, &buf); c != 3 || buf.String() != "anepack: bad\n" {
		t.Errorf("code %d, %q", c, buf.String())
	}
	buf.Reset()
	if c := ExitCode("anepack", &ExitError{Code: 130}, &buf); c != 130 || buf.Len() != 0 {
		t.Errorf("quiet: code %d, %q", c, buf.String())
	}
	if c := ExitCode("anepack", nil, &buf); c != 0 {
		t.Errorf("nil: %d", c)
	}
}

// TestPanicIsOneLine: a bug that panics in a command prints one line asking for a report,
// not a stack trace, and exits 2.
func TestPanicIsOneLine(t *testing.T) {
	t.Setenv("GOTRACEBACK", "")
	root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true, RunE: func(*cobra.Command, []string) error {
		var m map[string]int
		m["boom"]++ // a nil map: a real bug, not a deliberate panic call
		return nil
	}}
	root.SetArgs(nil)
	var buf bytes.Buffer
	if c := run("x", root, &buf); c != 2 || strings.Count(buf.String(), "\n") != 1 || !strings.Contains(buf.String(), "x: internal error: assignment to entry in nil map") {
		t.Errorf("code %d, %q", c, buf.String())
	}
}
