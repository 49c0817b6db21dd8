package cmd

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
)

// printable returns s for a line of human output, so that what a
// terminal shows of a key tells it from every other key and cannot do
// anything but show it. One rule, for every place a key or a name
// reaches the terminal (ls, each object's line, errors, the failures'
// recap, --dry-run): written as Go escapes are
//
//   - control characters (a newline, a carriage return, a tab, an
//     escape sequence) and bytes that are not UTF-8: \n, \x1b, \xff, so
//     a key cannot print fake lines or drive the terminal;
//   - format characters (Unicode Cf: the zero-width space U+200B, the
//     byte order mark U+FEFF, the soft hyphen, the bidirectional
//     controls that reorder what a terminal shows of a line, "Trojan
//     Source"), other default-ignorable code points, variation
//     selectors, line and paragraph separators, spaces other than the
//     ASCII one (U+00A0, U+3000, ...) and U+FFFD itself: \u200b, so two
//     keys that differ in them do not look the same;
//   - an ASCII space at the start or the end: \x20, so "sp " is not
//     shown as "sp";
//   - the backslash itself: \\, so an escape shown is never a key's own
//     text ("a\x41" and "aA" print apart).
//
// Other text is unchanged. --json needs none of this: it carries the
// exact key, which encoding/json escapes as JSON does.
func printable(s string) string { return escape(s, true) }

// printableText is printable for a message rather than a name: the
// characters a terminal hides or acts on are escaped, but not a
// backslash nor the blanks at the ends, so that a key a message quotes
// (%q, escaped already) is not escaped twice.
func printableText(s string) string { return escape(s, false) }

// escape writes s as printable does; name adds the backslash and the
// blanks at its ends.
func escape(s string, name bool) string {
	if !needsEscape(s, name) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case name && r == '\\':
			b.WriteString(`\\`)
		case name && r == ' ' && (i == 0 || i+size == len(s)):
			b.WriteString(`\x20`)
		case hidden(r):
			q := fmt.Sprintf("%+q", string(r)) // "\n", "\x1b", "\u0085", "\u200b"
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, name bool) bool {
	if name && (strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ")) {
		return true
	}
	for _, r := range s {
		if r == utf8.RuneError || name && r == '\\' || hidden(r) {
			return true
		}
	}
	return false
}

// hidden reports the characters a terminal shows as nothing, as
// something else, or acts on: control and format characters, default
// ignorables, variation selectors, separators and spaces other than
// U+0020, and U+FFFD.
func hidden(r rune) bool {
	switch {
	case r < 0x80:
		return r < 0x20 || r == 0x7f
	case r == utf8.RuneError:
		return true
	}
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Zs,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// logKey is a key as a log field: as printable shows it, so a log line
// on a terminal cannot be reordered or driven by the key either (zap
// escapes control characters, not the bidirectional ones).
func logKey(key string) zap.Field { return zap.String("key", printable(key)) }
