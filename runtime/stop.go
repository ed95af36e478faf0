package runtime

import "strings"

// stopMatcher cuts streamed text at the first user stop string. Text that might be the start of
// a stop string is held back until the next piece shows whether it is, so a stop string never
// reaches the output, not even in part.
type stopMatcher struct {
	stops   []string
	pending string // held-back text: a suffix that is a prefix of some stop string
}

func newStopMatcher(stops []string) *stopMatcher {
	m := &stopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// push adds text and returns what can be shown, and whether a stop string was found (then the
// returned text is everything before it and the rest is dropped).
func (m *stopMatcher) push(text string) (emit string, stopped bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	buf := m.pending + text
	cut := -1
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		m.pending = ""
		return buf[:cut], true
	}
	hold := 0
	for _, s := range m.stops {
		for k := min(len(s)-1, len(buf)); k > hold; k-- {
			if strings.HasSuffix(buf, s[:k]) {
				hold = k
				break
			}
		}
	}
	m.pending = buf[len(buf)-hold:]
	return buf[:len(buf)-hold], false
}

// flush returns the held-back text at the end of generation: it was not a stop string after all.
func (m *stopMatcher) flush() string {
	p := m.pending
	m.pending = ""
	return p
}
