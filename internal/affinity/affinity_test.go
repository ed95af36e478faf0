package affinity

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		out  string
	}{
		{"0", []int{0}, "0"},
		{"0-3,8", []int{0, 1, 2, 3, 8}, "0-3,8"},
		{" 5, 1-2 ,2,7-7", []int{1, 2, 5, 7}, "1-2,5,7"},
		{"10-12,3,4", []int{3, 4, 10, 11, 12}, "3-4,10-12"},
	} {
		got, err := Parse(c.in)
		if err != nil || !slices.Equal(got, c.want) || Format(got) != c.out {
			t.Errorf("Parse(%q) = %v, %v (formatted %q); want %v, %q", c.in, got, err, Format(got), c.want, c.out)
		}
	}
	for _, bad := range []string{"", "a", "1-", "-1", "3-1", "1,,2", "0-99999999", "1.5", "0x1"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "expected a list like 0-3,8") {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
}

// TestPinRefusesUnknownCPU: a CPU the process may not run on is refused before anything is
// pinned, naming the CPUs it may run on.
func TestPinRefusesUnknownCPU(t *testing.T) {
	allowed, err := Allowed()
	if err != nil || len(allowed) == 0 {
		t.Fatalf("Allowed: %v, %v", allowed, err)
	}
	bad := allowed[len(allowed)-1] + 1
	if err := Pin([]int{bad}); err == nil || !strings.Contains(err.Error(), Format(allowed)) {
		t.Errorf("Pin(%d): %v", bad, err)
	}
	if err := Pin(nil); err == nil {
		t.Error("Pin(nil) succeeded")
	}
	if after, _ := Allowed(); !slices.Equal(after, allowed) {
		t.Errorf("a refused Pin changed the affinity: %v, was %v", after, allowed)
	}
}
