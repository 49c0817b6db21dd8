package s3emu

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "100", want: 100},
		{in: "0", want: 0},
		{in: "64KiB", want: 64 << 10},
		{in: "1MiB", want: 1 << 20},
		{in: "4GiB", want: 4 << 30},
		{in: "16MB", want: 16 << 20}, // as the AWS CLI reads it
		{in: "90mb", want: 90 << 20},
		{in: " 16 MiB ", want: 16 << 20},
		// Refused as every s3pd flag refuses them (config.ParseSize).
		{in: "16M", bad: true},
		{in: "1.5KiB", bad: true},
		{in: "7B", bad: true},
		{in: "-5", bad: true},
		{in: "", bad: true},
		{in: "MiB", bad: true},
		{in: "12XB", bad: true},
		{in: "99999999999TiB", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
}

// TestParseSizeSuggests: a one-letter unit is refused with the spelling
// meant, as the flags say it.
func TestParseSizeSuggests(t *testing.T) {
	if _, err := ParseDataset("x:1:16M"); err == nil || !strings.Contains(err.Error(), "did you mean 16MiB?") {
		t.Errorf("ParseDataset(x:1:16M): %v, want a refusal suggesting 16MiB", err)
	}
}

func TestParseDataset(t *testing.T) {
	d, err := ParseDataset("model:163:4GiB, small:10000:64KiB,deep/dir:3:0")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.String(), "model:163:4294967296,small:10000:65536,deep/dir:3:0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := d.Objects(), int64(10166); got != want {
		t.Errorf("Objects() = %d, want %d", got, want)
	}
	if got, want := d.Bytes(), int64(163)<<32+10000*65536; got != want {
		t.Errorf("Bytes() = %d, want %d", got, want)
	}
	lookups := []struct {
		key  string
		size int64
		ok   bool
	}{
		{"model/00000000", 4 << 30, true},
		{"model/00000162", 4 << 30, true},
		{"model/00000163", 0, false},
		{"model/0000001", 0, false},
		{"small/00009999", 64 << 10, true},
		{"deep/dir/00000002", 0, true},
		{"deep/00000000", 0, false},
		{"nope/00000000", 0, false},
		{"model/0000000x", 0, false},
	}
	for _, l := range lookups {
		size, ok := d.Lookup(l.key)
		if size != l.size || ok != l.ok {
			t.Errorf("Lookup(%q) = %d, %v, want %d, %v", l.key, size, ok, l.size, l.ok)
		}
	}
	wide, err := ParseDataset("w:123456789:1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wide.Groups[0].Key(5), "w/000000005"; got != want {
		t.Errorf("Key(5) = %q, want %q", got, want)
	}
	for _, bad := range []string{"a:1", "a:0:1", "a:x:1", "a:1:1,a:2:2", "/a:1:1", "a/:1:1", "a:1:zz", ":1:1"} {
		if _, err := ParseDataset(bad); err == nil {
			t.Errorf("ParseDataset(%q) succeeded, want an error", bad)
		}
	}
}

func TestKeyIterMergesGroupsInOrder(t *testing.T) {
	// "a/1x" sorts inside group "a"'s keys: the merge must interleave.
	d, err := ParseDataset("a:20000000:1,a/1x:2:1,A:1:1")
	if err != nil {
		t.Fatal(err)
	}
	it := d.iter()
	it.seekGE("a/19999998")
	var got []string
	for {
		k, _, ok := it.next()
		if !ok {
			break
		}
		got = append(got, k)
	}
	want := []string{"a/19999998", "a/19999999", "a/1x/00000000", "a/1x/00000001"}
	if len(got) != len(want) {
		t.Fatalf("keys from a/19999998 = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("keys from a/19999998 = %v, want %v", got, want)
		}
	}
}

func TestKeyIterAgreesWithASortedList(t *testing.T) {
	// Interleaving groups ("a/1x" inside "a", "a/2" among "a"'s digits)
	// and a group whose name prefixes others: every seek, then the walk
	// from it, must match a sorted list of every key.
	d, err := ParseDataset("a:300:1,a/1x:3:1,a/2:4:1,ab:5:1,a/150:2:1,z/y:12:1")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, g := range d.Groups {
		for i := range g.Count {
			all = append(all, g.Key(i))
		}
	}
	slices.Sort(all)
	targets := []string{"", "a", "a/", "a/0", "a/00000299", "a/000002990", "a/00000300", "a/1", "a/1x", "a/1x/", "a/2/", "a/\xff", "a/0000005\x00", "a/0000005:", "ab", "z", "zz"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		k := all[r.IntN(len(all))]
		targets = append(targets, k, k[:r.IntN(len(k)+1)], k+"\x00", k[:len(k)-1]+string(rune('0'+r.IntN(12)-1)))
	}
	for _, target := range targets {
		want := all[sort.SearchStrings(all, target):]
		it := d.iter()
		it.next() // a run in progress is dropped by the seek
		it.seekGE(target)
		var got []string
		for k, _, ok := it.next(); ok; k, _, ok = it.next() {
			got = append(got, k)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("from %q: got %d keys %.5q..., want %d keys %.5q...", target, len(got), got, len(want), want)
		}
	}
}

func TestSyntheticBytesAnyOffset(t *testing.T) {
	const n = 3*blockSize + 777
	whole := synthetic("k/00000001", 0, n)
	for _, c := range []struct{ off, len int64 }{
		{0, 1}, {1, 7}, {5, 600}, {511, 2}, {512, 8}, {513, 1030}, {blockSize - 3, 10}, {2*blockSize + 1, blockSize}, {n - 1, 1},
	} {
		got := synthetic("k/00000001", c.off, c.len)
		if !bytes.Equal(got, whole[c.off:c.off+c.len]) {
			t.Errorf("SyntheticBytes at %d+%d differs from the whole object's bytes", c.off, c.len)
		}
	}
	// Every 512-byte piece is distinct, within an object and across objects.
	seen := map[string]bool{}
	for off := 0; off+stampEvery <= len(whole); off += stampEvery {
		seen[string(whole[off:off+stampEvery])] = true
	}
	if got, want := len(seen), len(whole)/stampEvery; got != want {
		t.Errorf("distinct 512-byte pieces = %d, want %d", got, want)
	}
	other := synthetic("k/00000002", 0, 4096)
	if bytes.Equal(other, whole[:4096]) {
		t.Error("two keys have the same content")
	}
}
