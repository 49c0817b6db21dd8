package cmd

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
)

// printable returns s for a line of human output: control characters
// (a newline, a carriage return, an escape sequence) and bytes that are
// not UTF-8 are written as Go escapes (\n, \x1b, \xff), so a key cannot
// print fake lines or drive the terminal; so are the bidirectional
// controls (U+202A-U+202E, U+2066-U+2069, and the marks U+200E, U+200F,
// U+061C), so a key cannot reorder what a terminal shows of a line
// ("Trojan Source"). Other text is unchanged. JSON
// output needs none of this: encoding/json escapes it.
func printable(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || bidi(r):
			q := fmt.Sprintf("%+q", string(r)) // "\n", "\x1b", "\u0085"
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || bidi(r) {
			return true
		}
	}
	return false
}

// bidi reports the Unicode controls that change the display order of
// the text after them.
func bidi(r rune) bool {
	return 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// logKey is a key as a log field: as printable shows it, so a log line
// on a terminal cannot be reordered or driven by the key either (zap
// escapes control characters, not the bidirectional ones).
func logKey(key string) zap.Field { return zap.String("key", printable(key)) }
