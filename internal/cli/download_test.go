package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestNewProgressChoice: a pipe gets lines; HF_HUB_DISABLE_PROGRESS_BARS
// decides when set.
func TestNewProgressChoice(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	yes, no := true, false
	if p, _ := NewDownloadProgress(w, nil); fmt.Sprintf("%T", p) != "*cli.DownloadLines" {
		t.Errorf("pipe: %T", p)
	}
	if p, _ := NewDownloadProgress(w, &yes); fmt.Sprintf("%T", p) != "*cli.DownloadBar" {
		t.Errorf("bars forced on: %T", p)
	}
	if p, _ := NewDownloadProgress(w, &no); fmt.Sprintf("%T", p) != "*cli.DownloadLines" {
		t.Errorf("bars off: %T", p)
	}
}

func TestFormatBytesSI(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 1536000: "1.5 MB", 1 << 30: "1.1 GB", -2000: "-2.0 kB"} {
		if got := FormatBytesSI(n); got != want {
			t.Errorf("FormatBytesSI(%d) = %q, want %q", n, got, want)
		}
	}
}
