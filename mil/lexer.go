package mil

import (
	"fmt"
	"strings"
)

// Pos is a position in MIL text, 1-based.
type Pos struct{ Line, Col int }

// String formats the position as line:col.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokPunct // one of ( ) [ ] { } < > , = ; and the two-byte ->
)

type token struct {
	kind tokKind
	text string // identifier, number text, unquoted string, or punctuation
	pos  Pos
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of text"
	case tokString:
		return fmt.Sprintf("string %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// SyntaxError reports MIL text that does not parse.
type SyntaxError struct {
	Pos Pos
	Msg string
}

// Error formats the error as "mil: line:col: message".
func (e *SyntaxError) Error() string { return fmt.Sprintf("mil: %s: %s", e.Pos, e.Msg) }

// lex splits MIL text into tokens. `//` starts a comment running to the end of the line.
func lex(src []byte) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for k := 0; k < n; k++ {
			if src[i] == '\n' {
				line++
				col = 1
			} else {
				col++
			}
			i++
		}
	}
	for i < len(src) {
		c := src[i]
		pos := Pos{line, col}
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			adv(1)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				adv(1)
			}
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, token{tokIdent, string(src[i:j]), pos})
			adv(j - i)
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := scanNumber(src, i)
			toks = append(toks, token{tokNumber, string(src[i:j]), pos})
			adv(j - i)
		case c == '"':
			s, n, err := scanString(src[i:])
			if err != "" {
				return nil, &SyntaxError{pos, err}
			}
			toks = append(toks, token{tokString, s, pos})
			adv(n)
		case c == '-' && i+1 < len(src) && src[i+1] == '>':
			toks = append(toks, token{tokPunct, "->", pos})
			adv(2)
		case strings.IndexByte("()[]{}<>,=;-", c) >= 0:
			toks = append(toks, token{tokPunct, string(c), pos})
			adv(1)
		default:
			return nil, &SyntaxError{pos, fmt.Sprintf("unexpected character %q", c)}
		}
	}
	toks = append(toks, token{tokEOF, "", Pos{line, col}})
	return toks, nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

// scanNumber returns the end of a number starting at i: decimal (1, 1.5, 1e-5, .5) or
// hexadecimal, including hex floats (0x1p-3).
func scanNumber(src []byte, i int) int {
	j := i
	if src[j] == '0' && j+1 < len(src) && (src[j+1] == 'x' || src[j+1] == 'X') {
		j += 2
		for j < len(src) {
			c := src[j]
			switch {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == '.':
				j++
			case c == 'p' || c == 'P':
				j++
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
			default:
				return j
			}
		}
		return j
	}
	for j < len(src) {
		c := src[j]
		switch {
		case c >= '0' && c <= '9', c == '.':
			j++
		case c == 'e' || c == 'E':
			j++
			if j < len(src) && (src[j] == '+' || src[j] == '-') {
				j++
			}
		default:
			return j
		}
	}
	return j
}

// scanString reads a double-quoted string with \" \\ \n \t escapes; it returns the value, the
// bytes consumed and an error message.
func scanString(src []byte) (string, int, string) {
	var b strings.Builder
	for j := 1; j < len(src); j++ {
		switch c := src[j]; c {
		case '"':
			return b.String(), j + 1, ""
		case '\n':
			return "", 0, "newline in string"
		case '\\':
			j++
			if j >= len(src) {
				return "", 0, "unterminated string"
			}
			switch src[j] {
			case '"', '\\':
				b.WriteByte(src[j])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return "", 0, fmt.Sprintf("unknown escape \\%c in string", src[j])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, "unterminated string"
}
