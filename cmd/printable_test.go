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
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"a\u202ab\u202bc\u202cd\u202de", `a\u202ab\u202bc\u202cd\u202de`},
		{"x\u2066y\u2067z\u2068w\u2069", `x\u2066y\u2067z\u2068w\u2069`},
		{"m\u200en\u200fo\u061c", `m\u200en\u200fo\u061c`},
		{"", ""},
	} {
		if got := printable(c.in); got != c.want {
			t.Errorf("printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
