package cli

import (
	"bytes"
	"errors"
	"testing"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"Qwen2.5-0.5B":        "Qwen2.5-0.5B",
		"héllo, 世界":           "héllo, 世界",
		"\x1b]0;pwned\x07":    `\x1b]0;pwned\x07`,
		"\x1b[2J\x1b[H":       `\x1b[2J\x1b[H`,
		"name\nsections (0):": `name\x0asections (0):`,
		"a\rb\tc\x7f":         `a\x0db\x09c\x7f`,
		"\u009b31m":           `\u009b31m`,
		"abc\u202edef":        `abc\u202edef`,
		"bad \xff byte":       `bad \xff byte`,
		`back\slash`:          `back\slash`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q; want %q", in, got, want)
		}
	}
	if got, want := PrintableLines("line one\n\tline two\x1b[2J\r"), "line one\n\tline two\\x1b[2J\\x0d"; got != want {
		t.Errorf("PrintableLines = %q; want %q", got, want)
	}
}

// TestExitCodeEscapes: an error message from outside (a chat template's raise_exception) is
// printed with its control characters escaped and its later lines indented, so that none
// passes for the tool's own.
func TestExitCodeEscapes(t *testing.T) {
	var buf bytes.Buffer
	ExitCode("anerun", errors.New("template error: \x1b]0;pwned\x07\x1b[2J\ranerun: all is well\nanerun: really\n"), &buf)
	want := "anerun: template error: \\x1b]0;pwned\\x07\\x1b[2J\\x0danerun: all is well\n  anerun: really\n"
	if out := buf.String(); out != want {
		t.Fatalf("printed %q; want %q", out, want)
	}
}
