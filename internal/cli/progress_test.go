package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestFormatBytes(t *testing.T) {
	cases := map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 988097824: "942.3 MiB", 1 << 40: "1.0 TiB"}
	for n, want := range cases {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q; want %q", n, got, want)
		}
	}
}

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
