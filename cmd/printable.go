package cmd

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable returns s for a line of human output: control characters
// (a newline, a carriage return, an escape sequence) and bytes that are
// not UTF-8 are written as Go escapes (\n, \x1b, \xff), so a key cannot
// print fake lines or drive the terminal. Other text is unchanged. JSON
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
		case unicode.IsControl(r):
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
		if r == utf8.RuneError || unicode.IsControl(r) {
			return true
		}
	}
	return false
}
