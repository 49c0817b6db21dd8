package cmd

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain/key.txt", "plain/key.txt"},
		{"ünïcödé/ключ", "ünïcödé/ключ"},
		{"a\nwould fetch: evil (1 bytes)", `a\nwould fetch: evil (1 bytes)`},
		{"cr\rtab\tesc\x1b[31m", `cr\rtab\tesc\x1b[31m`},
		{"del\x7f nel\u0085", `del\x7f nel\u0085`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := printable(c.in); got != c.want {
			t.Errorf("printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
