package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// Python string semantics used by filters, methods and the lexer.

// isSpace is Python's str.isspace for one character (also what re's \s matches in str
// patterns): Unicode White_Space plus the information separators U+001C..U+001F.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// isPrintable is Python's str.isprintable for one character: everything except categories
// Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than the ASCII space.
func isPrintable(r rune) bool {
	return unicode.IsPrint(r)
}

func pyStripSet(s string, chars *string, left, right bool) string {
	in := func(r rune) bool {
		if chars == nil {
			return isSpace(r)
		}
		return strings.ContainsRune(*chars, r)
	}
	if left {
		s = strings.TrimLeftFunc(s, in)
	}
	if right {
		s = strings.TrimRightFunc(s, in)
	}
	return s
}

// partBytes is what one piece of a split costs: its string header and its list item.
const partBytes = 16 + itemBytes

// pySplit is str.split(sep, maxsplit); sep == nil splits on runs of whitespace.
func pySplit(b *budget, s string, sep *string, maxsplit int) (List, error) {
	var parts []string
	if sep == nil {
		rest := strings.TrimLeftFunc(s, isSpace)
		for rest != "" {
			if err := b.grow(mul(int64(len(parts)+1), partBytes), partBytes); err != nil {
				return nil, err
			}
			if maxsplit >= 0 && len(parts) == maxsplit {
				parts = append(parts, rest)
				break
			}
			i := strings.IndexFunc(rest, isSpace)
			if i < 0 {
				parts = append(parts, rest)
				break
			}
			parts = append(parts, rest[:i])
			rest = strings.TrimLeftFunc(rest[i:], isSpace)
		}
	} else {
		if *sep == "" {
			return nil, valueError("empty separator")
		}
		n := int64(strings.Count(s, *sep)) + 1
		if maxsplit >= 0 {
			n = min(n, int64(maxsplit)+1)
		}
		if err := b.alloc(mul(n, partBytes)); err != nil {
			return nil, err
		}
		parts = strings.SplitN(s, *sep, int(n))
	}
	out := make(List, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// pyRsplit is str.rsplit(sep, maxsplit).
func pyRsplit(b *budget, s string, sep *string, maxsplit int) (List, error) {
	if maxsplit < 0 {
		return pySplit(b, s, sep, -1)
	}
	var parts []string
	if sep == nil {
		rest := strings.TrimRightFunc(s, isSpace)
		for rest != "" {
			if err := b.grow(mul(int64(len(parts)+1), partBytes), partBytes); err != nil {
				return nil, err
			}
			if len(parts) == maxsplit {
				parts = append(parts, rest)
				break
			}
			i := strings.LastIndexFunc(rest, isSpace)
			if i < 0 {
				parts = append(parts, rest)
				break
			}
			_, w := utf8.DecodeRuneInString(rest[i:])
			parts = append(parts, rest[i+w:])
			rest = strings.TrimRightFunc(rest[:i], isSpace)
		}
	} else {
		if *sep == "" {
			return nil, valueError("empty separator")
		}
		rest := s
		for len(parts) < maxsplit {
			if err := b.grow(mul(int64(len(parts)+1), partBytes), partBytes); err != nil {
				return nil, err
			}
			i := strings.LastIndex(rest, *sep)
			if i < 0 {
				break
			}
			parts = append(parts, rest[i+len(*sep):])
			rest = rest[:i]
		}
		parts = append(parts, rest)
	}
	out := make(List, len(parts))
	for i, p := range parts {
		out[len(parts)-1-i] = p
	}
	return out, nil
}

var (
	upperCaser = cases.Upper(language.Und)
	lowerCaser = cases.Lower(language.Und)
)

// pyUpper and pyLower use full Unicode case mappings, as Python does ("ß".upper() == "SS").
func pyUpper(s string) string { return upperCaser.String(s) }
func pyLower(s string) string { return lowerCaser.String(s) }

func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
}

// titleRune upper-cases r to its title case, using full mappings where one rune expands.
func titleRune(b *strings.Builder, r rune) {
	if t := unicode.ToTitle(r); t != r || !unicode.IsLower(r) {
		b.WriteRune(t)
		return
	}
	b.WriteString(upperCaser.String(string(r)))
}

// pyTitle is str.title: a cased character after an uncased one starts a word.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if isCased(r) {
			if prevCased {
				b.WriteString(lowerCaser.String(string(r)))
			} else {
				titleRune(&b, r)
			}
			prevCased = true
		} else {
			b.WriteRune(r)
			prevCased = false
		}
	}
	return b.String()
}

// pyCapitalize is str.capitalize: first character title-cased, the rest lower-cased.
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, w := utf8.DecodeRuneInString(s)
	var b strings.Builder
	titleRune(&b, r)
	b.WriteString(pyLower(s[w:]))
	return b.String()
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// pyIsX implements str.isdigit / isalpha / isalnum / isspace / isupper / islower.
func pyIsX(s, which string) bool {
	if s == "" {
		return false
	}
	switch which {
	case "isupper", "islower":
		cased := false
		for _, r := range s {
			if unicode.IsLower(r) || unicode.IsTitle(r) {
				if which == "isupper" {
					return false
				}
				cased = true
			}
			if unicode.IsUpper(r) || unicode.IsTitle(r) {
				if which == "islower" {
					return false
				}
				cased = true
			}
		}
		return cased
	}
	for _, r := range s {
		ok := false
		switch which {
		case "isdigit", "isdecimal", "isnumeric":
			ok = unicode.IsDigit(r) || (which == "isnumeric" && unicode.IsNumber(r))
		case "isalpha":
			ok = unicode.IsLetter(r)
		case "isalnum":
			ok = unicode.IsLetter(r) || unicode.IsNumber(r)
		case "isspace":
			ok = isSpace(r)
		}
		if !ok {
			return false
		}
	}
	return true
}
