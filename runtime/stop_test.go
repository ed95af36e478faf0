package runtime

import (
	"strings"
	"testing"
)

func TestStopMatcher(t *testing.T) {
	for _, tc := range []struct {
		stops   []string
		pieces  []string
		shown   []string // what each push returns
		stopped int      // index of the push that finds a stop string, or -1
		flushed string
	}{
		{[]string{"o w"}, []string{"Hel", "lo", " wo", "rld"}, []string{"Hel", "l", ""}, 2, ""},
		{[]string{"END"}, []string{"ab", "E", "N", "x"}, []string{"ab", "", "", "ENx"}, -1, ""},
		{[]string{"END"}, []string{"abE"}, []string{"ab"}, -1, "E"},
		{[]string{"\n\n", "User:"}, []string{"Hi\n", "Us", "er: x"}, []string{"Hi", "\n", ""}, 2, ""},
		{nil, []string{"a", "b"}, []string{"a", "b"}, -1, ""},
		{[]string{"é!"}, []string{"café", "!"}, []string{"caf", ""}, 1, ""},
	} {
		m := newStopMatcher(tc.stops)
		stoppedAt := -1
		for i, p := range tc.pieces {
			got, stopped := m.push(p)
			if i < len(tc.shown) && got != tc.shown[i] {
				t.Errorf("stops %q, push %d (%q): shown %q, want %q", tc.stops, i, p, got, tc.shown[i])
			}
			if stopped {
				stoppedAt = i
				break
			}
		}
		if stoppedAt != tc.stopped {
			t.Errorf("stops %q over %q: stopped at push %d, want %d", tc.stops, tc.pieces, stoppedAt, tc.stopped)
		}
		if tc.stopped < 0 {
			if got := m.flush(); got != tc.flushed {
				t.Errorf("stops %q over %q: flushed %q, want %q", tc.stops, tc.pieces, got, tc.flushed)
			}
		}
	}
}

// TestStopMatcherNeverShowsAStop streams a text in every split into two pieces and checks that
// the shown text is exactly the text before the first stop string.
func TestStopMatcherNeverShowsAStop(t *testing.T) {
	text := "one two <stop> three <stop>"
	want := text[:strings.Index(text, "<stop>")]
	for cut := 0; cut <= len(text); cut++ {
		m := newStopMatcher([]string{"<stop>", "zz"})
		var shown strings.Builder
		stopped := false
		for _, p := range []string{text[:cut], text[cut:]} {
			s, hit := m.push(p)
			shown.WriteString(s)
			if hit {
				stopped = true
				break
			}
		}
		if !stopped || shown.String() != want {
			t.Errorf("split at %d: shown %q (stopped %v), want %q", cut, shown.String(), stopped, want)
		}
	}
}
