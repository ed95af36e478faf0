package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer follows jinja2's Lexer.tokeniter with trim_blocks=True, lstrip_blocks=True and the
// default delimiters; comments are dropped, raw blocks become data.

type tokKind int

const (
	tData tokKind = iota
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
	tEOF
)

type token struct {
	kind tokKind
	val  string // data text, name, string value, operator
	ival int64
	fval float64
	line int
}

// String describes the token for error messages, as jinja2 does.
func (t token) String() string {
	switch t.kind {
	case tData:
		return "template data"
	case tVarBegin:
		return "begin of print statement"
	case tVarEnd:
		return "end of print statement"
	case tBlockBegin:
		return "begin of statement block"
	case tBlockEnd:
		return "end of statement block"
	case tEOF:
		return "end of template"
	case tString:
		return "string"
	case tInt, tFloat:
		return "number"
	}
	return t.val
}

func syntaxError(line int, format string, args ...any) error {
	return &Error{Kind: "TemplateSyntaxError", Msg: fmt.Sprintf(format, args...), Line: line}
}

type lexer struct {
	src          string
	pos          int
	line         int
	toks         []token
	lineStarting bool
}

// normalizeNewlines turns \r\n and \r into \n and drops one trailing newline
// (keep_trailing_newline=False).
func normalizeNewlines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.TrimSuffix(s, "\n")
}

func lex(src string) ([]token, error) {
	l := &lexer{src: normalizeNewlines(src), line: 1, lineStarting: true}
	if err := l.run(); err != nil {
		return nil, err
	}
	l.toks = append(l.toks, token{kind: tEOF, line: l.line})
	return l.toks, nil
}

func (l *lexer) emitData(text string) {
	if text != "" {
		l.toks = append(l.toks, token{kind: tData, val: text, line: l.line})
	}
	l.line += strings.Count(text, "\n")
}

// findTag returns the position of the next "{{", "{%" or "{#" at or after pos, or -1.
func (l *lexer) findTag(pos int) int {
	for {
		i := strings.IndexByte(l.src[pos:], '{')
		if i < 0 || pos+i+1 >= len(l.src) {
			return -1
		}
		p := pos + i
		if c := l.src[p+1]; c == '{' || c == '%' || c == '#' {
			return p
		}
		pos = p + 1
	}
}

// rawBegin matches `{%(-|+|)\s*raw\s*(-%}\s*|%})` at p and returns the end of the match.
func (l *lexer) rawBegin(p int) (end int, ok bool) {
	s := l.src
	i := p + 2
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	i = skipSpace(s, i)
	if !strings.HasPrefix(s[i:], "raw") {
		return 0, false
	}
	i = skipSpace(s, i+3)
	if strings.HasPrefix(s[i:], "-%}") {
		return skipSpace(s, i+3), true
	}
	if strings.HasPrefix(s[i:], "%}") {
		return i + 2, true
	}
	return 0, false
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isSpace(r) {
			break
		}
		i += w
	}
	return i
}

// lstrip applies jinja2's whitespace control to the text before a tag.
func (l *lexer) lstrip(text string, sign byte, isVariable bool) string {
	if sign == '-' {
		return strings.TrimRightFunc(text, isSpace)
	}
	if sign != '+' && !isVariable {
		lpos := strings.LastIndexByte(text, '\n') + 1
		if lpos > 0 || l.lineStarting {
			rest := text[lpos:]
			if rest != "" && strings.TrimLeftFunc(rest, isSpace) == "" {
				return text[:lpos]
			}
		}
	}
	return text
}

func (l *lexer) run() error {
	s := l.src
	for l.pos < len(s) {
		p := l.findTag(l.pos)
		if p < 0 {
			l.emitData(s[l.pos:])
			return nil
		}
		text := s[l.pos:p]
		if end, ok := l.rawBegin(p); ok {
			sign := s[p+2]
			l.emitData(l.lstrip(text, sign, false))
			l.line += strings.Count(s[p:end], "\n")
			if err := l.raw(end); err != nil {
				return err
			}
			continue
		}
		kind := s[p+1]
		q := p + 2
		var sign byte
		if q < len(s) && (s[q] == '-' || s[q] == '+') {
			sign = s[q]
			q++
		}
		l.emitData(l.lstrip(text, sign, kind == '{'))
		l.lineStarting = false
		l.pos = q
		var err error
		switch kind {
		case '#':
			err = l.comment()
		case '%':
			l.toks = append(l.toks, token{kind: tBlockBegin, line: l.line})
			err = l.expr(true)
		case '{':
			l.toks = append(l.toks, token{kind: tVarBegin, line: l.line})
			err = l.expr(false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// endTag matches a block/comment end at i: "+X}", "-X}\s*" or "X}\n?" (trim_blocks); for
// variables "-}}\s*" or "}}". It returns the end of the match.
func (l *lexer) endTag(i int, mark byte, trim bool) (int, bool) {
	s := l.src
	close := string([]byte{mark, '}'})
	switch {
	case trim && strings.HasPrefix(s[i:], "+"+close):
		return i + 3, true
	case strings.HasPrefix(s[i:], "-"+close):
		return skipSpace(s, i+3), true
	case strings.HasPrefix(s[i:], close):
		if trim && i+2 < len(s) && s[i+2] == '\n' {
			return i + 3, true
		}
		return i + 2, true
	}
	return 0, false
}

func (l *lexer) finishTag(end int) {
	l.line += strings.Count(l.src[l.pos:end], "\n")
	l.lineStarting = end > 0 && l.src[end-1] == '\n'
	l.pos = end
}

func (l *lexer) comment() error {
	s := l.src
	for i := l.pos; i < len(s); i++ {
		if end, ok := l.endTag(i, '#', true); ok {
			l.finishTag(end)
			return nil
		}
	}
	return syntaxError(l.line, "Missing end of comment tag")
}

func (l *lexer) raw(start int) error {
	s := l.src
	for i := start; i < len(s); i++ {
		if s[i] != '{' || i+1 >= len(s) || s[i+1] != '%' {
			continue
		}
		j := i + 2
		var sign byte
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			sign = s[j]
			j++
		}
		j = skipSpace(s, j)
		if !strings.HasPrefix(s[j:], "endraw") {
			continue
		}
		j = skipSpace(s, j+6)
		end, ok := l.endTag(j, '%', true)
		if !ok {
			continue
		}
		l.emitData(l.lstrip(s[start:i], sign, false))
		l.pos = i
		l.finishTag(end)
		return nil
	}
	return syntaxError(l.line, "Missing end of raw directive")
}

var operators = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// expr lexes the inside of {% %} (block) or {{ }} until the matching end tag.
func (l *lexer) expr(block bool) error {
	s := l.src
	var balance []byte
	for {
		if l.pos >= len(s) {
			return syntaxError(l.line, "unexpected end of template, expected end of tag")
		}
		if len(balance) == 0 {
			mark, endKind := byte('}'), tVarEnd
			if block {
				mark, endKind = '%', tBlockEnd
			}
			if end, ok := l.endTag(l.pos, mark, block); ok {
				l.toks = append(l.toks, token{kind: endKind, line: l.line})
				l.finishTag(end)
				return nil
			}
		}
		r, w := utf8.DecodeRuneInString(s[l.pos:])
		switch {
		case isSpace(r):
			end := skipSpace(s, l.pos)
			l.line += strings.Count(s[l.pos:end], "\n")
			l.pos = end
		case r < utf8.RuneSelf && r >= '0' && r <= '9':
			if err := l.number(); err != nil {
				return err
			}
		case r == '_' || unicode.IsLetter(r):
			j := l.pos + w
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) && !unicode.Is(unicode.Mn, r2) && !unicode.Is(unicode.Mc, r2) {
					break
				}
				j += w2
			}
			l.toks = append(l.toks, token{kind: tName, val: s[l.pos:j], line: l.line})
			l.pos = j
		case r == '\'' || r == '"':
			if err := l.str(byte(r)); err != nil {
				return err
			}
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(s[l.pos:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return syntaxError(l.line, "unexpected char %s at %d", StrRepr(string(r)), l.pos)
			}
			switch op {
			case "(", "[", "{":
				balance = append(balance, map[string]byte{"(": ')', "[": ']', "{": '}'}[op])
			case ")", "]", "}":
				if len(balance) == 0 {
					return syntaxError(l.line, "unexpected '%s'", op)
				}
				if want := balance[len(balance)-1]; want != op[0] {
					return syntaxError(l.line, "unexpected '%s', expected '%c'", op, want)
				}
				balance = balance[:len(balance)-1]
			}
			l.toks = append(l.toks, token{kind: tOp, val: op, line: l.line})
			l.pos += len(op)
		}
	}
}

// number lexes jinja2's float_re or integer_re at l.pos.
func (l *lexer) number() error {
	s := l.src
	digits := func(i int) int { // (\d+_)*\d+
		j := i
		for j < len(s) {
			if s[j] >= '0' && s[j] <= '9' {
				j++
			} else if s[j] == '_' && j > i && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' {
				j++
			} else {
				break
			}
		}
		return j
	}
	start := l.pos
	// float_re does not start right after a '.', so "x.0.1" lexes integers.
	afterDot := start > 0 && s[start-1] == '.'
	if !afterDot {
		i := digits(start)
		end := -1
		j := i
		frac := false
		if j < len(s) && s[j] == '.' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' {
			j = digits(j + 1)
			frac = true
		}
		if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
			k := j + 1
			if k < len(s) && (s[k] == '+' || s[k] == '-') {
				k++
			}
			if k < len(s) && s[k] >= '0' && s[k] <= '9' {
				end = digits(k)
			}
		}
		if end < 0 && frac {
			end = j
		}
		if end > 0 {
			f, err := strconv.ParseFloat(strings.ReplaceAll(s[start:end], "_", ""), 64)
			if err != nil {
				return syntaxError(l.line, "bad float %q", s[start:end])
			}
			l.toks = append(l.toks, token{kind: tFloat, fval: f, line: l.line})
			l.pos = end
			return nil
		}
	}
	// Integers: 0b/0o/0x prefixes, [1-9](_?\d)*, or 0(_?0)*.
	i := start
	base := 10
	if s[i] == '0' && i+1 < len(s) {
		switch s[i+1] | 0x20 {
		case 'b':
			base = 2
		case 'o':
			base = 8
		case 'x':
			base = 16
		}
	}
	var text string
	if base != 10 {
		j := i + 2
		for j < len(s) && (isDigitIn(s[j], base) || (s[j] == '_' && j+1 < len(s) && isDigitIn(s[j+1], base))) {
			j++
		}
		if j == i+2 {
			base = 10
		} else {
			text = s[i+2 : j]
			l.pos = j
		}
	}
	if base == 10 {
		j := i + 1
		if s[i] == '0' {
			for j < len(s) && (s[j] == '0' || (s[j] == '_' && j+1 < len(s) && s[j+1] == '0')) {
				j++
			}
		} else {
			for j < len(s) && ((s[j] >= '0' && s[j] <= '9') || (s[j] == '_' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9')) {
				j++
			}
		}
		text = s[i:j]
		l.pos = j
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), base, 64)
	if err != nil {
		return syntaxError(l.line, "integer %q out of range", text)
	}
	l.toks = append(l.toks, token{kind: tInt, ival: v, line: l.line})
	return nil
}

func isDigitIn(c byte, base int) bool {
	switch base {
	case 2:
		return c == '0' || c == '1'
	case 8:
		return c >= '0' && c <= '7'
	}
	return (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// str lexes a quoted string and applies Python's unicode-escape decoding to its body.
func (l *lexer) str(q byte) error {
	s := l.src
	i := l.pos + 1
	for i < len(s) && s[i] != q {
		if s[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(s) {
		return syntaxError(l.line, "unexpected char %s at %d", StrRepr(string(q)), l.pos)
	}
	body := s[l.pos+1 : i]
	val, err := unescape(body)
	if err != nil {
		return syntaxError(l.line, "%v", err)
	}
	l.toks = append(l.toks, token{kind: tString, val: val, line: l.line})
	l.line += strings.Count(body, "\n")
	l.pos = i + 1
	return nil
}

// unescape decodes Python string-literal escapes (\n, \t, \\, \', \", \xhh, \uXXXX, \UXXXXXXXX,
// octal, \a \b \f \v, backslash-newline); unknown escapes keep their backslash.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+1+n > len(s) {
				return "", fmt.Errorf("truncated \\%cXX escape", e)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil || v > unicode.MaxRune || (v >= 0xD800 && v < 0xE000) {
				return "", fmt.Errorf("invalid \\%c escape %q", e, s[i+1:i+1+n])
			}
			b.WriteRune(rune(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 32)
			b.WriteRune(rune(v))
			i = j - 1
		case 'N':
			return "", fmt.Errorf(`\N{...} escapes are not supported`)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}
