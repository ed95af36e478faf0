package jinja

import (
	"strings"
	"unicode/utf8"
)

// sbuf is a strings.Builder that refuses to grow past its budget's largest value and charges
// what it writes, so text built piece by piece (the output, a repr, tojson, a join) can never
// outgrow the budget: the write that would cross the limit is dropped and the budget's error
// set. Callers check ok (or b.failed()) when done.
type sbuf struct {
	sb  strings.Builder
	bud *budget
}

func newSbuf(b *budget) *sbuf { return &sbuf{bud: b} }

// room reports whether n more bytes fit, charging them.
func (s *sbuf) room(n int) bool {
	if s.bud == nil {
		return true
	}
	if s.bud.err != nil {
		return false
	}
	return s.bud.grow(int64(s.sb.Len())+int64(n), int64(n)) == nil
}

func (s *sbuf) WriteString(x string) {
	if s.room(len(x)) {
		s.sb.WriteString(x)
	}
}

// WriteByte has io.ByteWriter's signature (vet insists); the error is always nil, a refused
// write shows in ok.
func (s *sbuf) WriteByte(c byte) error {
	if s.room(1) {
		s.sb.WriteByte(c)
	}
	return nil
}

func (s *sbuf) WriteRune(r rune) {
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.RuneLen(utf8.RuneError) // what WriteRune writes instead
	}
	if s.room(n) {
		s.sb.WriteRune(r)
	}
}

// Write lets fmt.Fprintf write into the buffer.
func (s *sbuf) Write(p []byte) (int, error) {
	if s.room(len(p)) {
		s.sb.Write(p)
	}
	return len(p), nil
}

func (s *sbuf) Len() int { return s.sb.Len() }

// String returns the text, or the budget's error if a write was refused.
func (s *sbuf) String() (string, error) {
	if err := s.bud.failed(); err != nil {
		return "", err
	}
	return s.sb.String(), nil
}

// ok reports whether every write so far fit.
func (s *sbuf) ok() bool { return s.bud.failed() == nil }
