package cmd

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain/key.txt", "plain/key.txt"},
		{"ünïcödé/ключ", "ünïcödé/ключ"},
		{"in the middle", "in the middle"},
		{"a\nwould fetch: evil (1 bytes)", `a\nwould fetch: evil (1 bytes)`},
		{"cr\rtab\tesc\x1b[31m", `cr\rtab\tesc\x1b[31m`},
		{"del\x7f nel\u0085", `del\x7f nel\u0085`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"a\u202ab\u202bc\u202cd\u202de", `a\u202ab\u202bc\u202cd\u202de`},
		{"x\u2066y\u2067z\u2068w\u2069", `x\u2066y\u2067z\u2068w\u2069`},
		{"m\u200en\u200fo\u061c", `m\u200en\u200fo\u061c`},
		{"z\u200bw", `z\u200bw`},
		{"\ufeffbom", `\ufeffbom`},
		{"soft\u00adhyphen", `soft\u00adhyphen`},
		{"nb\u00a0sp ideo\u3000sp", `nb\u00a0sp ideo\u3000sp`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"heart\u2764\ufe0f", "heart\u2764\\ufe0f"},
		{"hangul\u3164filler", `hangul\u3164filler`},
		{"repl\ufffdchar", `repl\ufffdchar`},
		{"sp ", `sp\x20`},
		{" lead", `\x20lead`},
		{" ", `\x20`},
		{`a\x41`, `a\\x41`},
		{`dir\file`, `dir\\file`},
		{"", ""},
	} {
		if got := printable(c.in); got != c.want {
			t.Errorf("printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Two different keys never print the same, and what printable writes
// holds no character it escapes (but the ASCII spaces inside), however
// hostile the keys.
func TestPrintableIsOneToOne(t *testing.T) {
	alphabet := []string{"a", "A", "/", " ", "\t", "\n", "\\", "x", "4", "1", "%", "+", "\u200b", "\ufeff", "\u00a0",
		"\u202e", "\x00", "\x7f", "\xff", "\xe2\x80", "é", "e\u0301", "\ufffd", "u", "{", "}"}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]string{}
	for range 200_000 {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		k := b.String()
		p := printable(k)
		if other, ok := seen[p]; ok && other != k {
			t.Fatalf("%q and %q both print as %q", other, k, p)
		}
		seen[p] = k
		if !utf8.ValidString(p) || strings.HasPrefix(p, " ") || strings.HasSuffix(p, " ") {
			t.Fatalf("printable(%q) = %q: not valid UTF-8, or a blank at an end", k, p)
		}
		for _, r := range p {
			if hidden(r) {
				t.Fatalf("printable(%q) = %q holds %s", k, p, strconv.QuoteRune(r))
			}
		}
	}
}

// A message keeps its backslashes and the keys it quotes (escaped by
// %q already) as they are; what a terminal hides is escaped.
func TestOneLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`unsafe key "a\u200b": x`, `unsafe key "a\u200b": x`},
		{"get s3://b/z\u200bw:\n  404", `get s3://b/z\u200bw: 404`},
		{"evil\x1b[2J", `evil\x1b[2J`},
	} {
		if got := oneLine(c.in); got != c.want {
			t.Errorf("oneLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStoresWarningsEscapeKeys: the lines a store warns of (an upload
// it aborted, a local sink's warning) name keys, and go to the terminal
// through the logger, which escapes control characters but not the
// bidirectional ones: they are escaped as every other key is.
func TestStoresWarningsEscapeKeys(t *testing.T) {
	for name, warn := range map[string]func(*runEnv) func(string){"upload": uploadReport, "sink": sinkWarn} {
		var buf bytes.Buffer
		l, err := newLogger(&buf, "info", "console")
		if err != nil {
			t.Fatal(err)
		}
		warn(&runEnv{Logger: l})("aborted the incomplete upload 1 of s3://b/a\u202ecod.exe")
		if got := buf.String(); strings.ContainsRune(got, '\u202e') || !strings.Contains(got, `a\u202ecod.exe`) {
			t.Errorf("%s: %q, want the key's U+202E escaped", name, got)
		}
	}
}
