//go:build linux || darwin

package sysmem

import (
	"strings"
	"testing"
)

// TestAvailable checks that the figure is positive and names its source (Linux and macOS both
// report one).
func TestAvailable(t *testing.T) {
	l, ok := Available()
	if !ok || l.Bytes <= 0 || l.Source == "" || !strings.Contains(l.String(), l.Source) {
		t.Fatalf("Available() = %+v, %v", l, ok)
	}
}
