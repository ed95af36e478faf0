package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A bundle's names, a Hub repo's file names and a chat template's error messages are written by
// whoever made them, and a terminal obeys the control sequences in what it is sent: ESC ] 0 ;
// sets the window title, ESC [ 2 J clears the screen, a carriage return or a newline writes a
// line that looks like the tool's own. Text from outside goes through Printable (one field) or
// PrintableLines (a message that may span lines) before it reaches a terminal.

// Printable returns s with every character a terminal would act on instead of showing written
// as an escape: the C0 controls (newline and tab included), DEL, the C1 controls (U+0080 to
// U+009F, which some terminals take as CSI and OSC), the bidirectional overrides and isolates
// (text that reads differently from what it is), and bytes that are not UTF-8: "\x1b", "\u202e".
func Printable(s string) string { return printable(s, false) }

// PrintableLines is Printable keeping newlines and tabs: for a message of several lines, whose
// lines then cannot hide anything but their own text.
func PrintableLines(s string) string { return printable(s, true) }

func printable(s string, lines bool) string {
	if !needsEscape(s, lines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether printable would change s.
func needsEscape(s string, lines bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || (r < 0x20 || r == 0x7f) && !(lines && (r == '\n' || r == '\t')) || unsafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// unsafeRune reports the C1 controls and the bidirectional formatting characters.
func unsafeRune(r rune) bool {
	return r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
