package ane

import (
	"errors"
	goruntime "runtime"
	"testing"
)

// TestUnavailableOffApple checks the contract every non-Apple platform relies on: Open fails
// with ErrUnavailable and Probe says why, so `--backend auto` falls back to the CPU.
func TestUnavailableOffApple(t *testing.T) {
	if goruntime.GOOS == "darwin" && goruntime.GOARCH == "arm64" {
		t.Skip("on Apple Silicon the driver may be available")
	}
	if _, err := Open(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open() error = %v; want ErrUnavailable", err)
	}
	r := Probe()
	if r.Available || r.Reason == "" {
		t.Fatalf("Probe() = %+v; want unavailable with a reason", r)
	}
}
