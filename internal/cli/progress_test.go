package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestLineProgress checks the non-terminal mode: a line at each quarter, then a summary line.
func TestLineProgress(t *testing.T) {
	var buf bytes.Buffer
	p := &Progress{label: "converting", w: &buf, bytes: true, total: 4096}
	for done := int64(0); done <= 4096; done += 256 {
		p.Set(done, 4096)
	}
	p.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || lines[0] != "converting: 25% (1.0 KiB of 4.0 KiB)" || !strings.HasPrefix(lines[3], "converting: done, 4.0 KiB in ") {
		t.Fatalf("lines %q", lines)
	}
	quiet := NewProgress("x", 10, false, true)
	quiet.Set(5, 10)
	quiet.Finish() // writes to io.Discard; must not panic
}
