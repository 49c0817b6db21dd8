package s3emu

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultBucket is the bucket every emulator serves; with the synthetic
// backend it holds the dataset.
const DefaultBucket = "bench"

// minKeyDigits is the least number of digits in a synthetic key's index.
const minKeyDigits = 8

// Group is one family of equally sized synthetic objects: Count objects of
// Size bytes, named "<Name>/<index>" with the index zero-padded to Digits.
type Group struct {
	Name  string
	Count int64
	Size  int64
	// Digits is the width of the zero-padded index (at least 8).
	Digits int
}

// Key returns the key of object i of the group, e.g. "model/00000007".
func (g Group) Key(i int64) string {
	var buf [64]byte
	b := append(buf[:0], g.Name...)
	b = append(b, '/')
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], i, 10)
	for n := len(d); n < g.Digits; n++ {
		b = append(b, '0')
	}
	return string(append(b, d...))
}

// Dataset describes the objects of the synthetic backend. Its zero value
// is an empty dataset.
type Dataset struct {
	Groups []Group
	byName map[string]int
}

// ParseDataset parses a dataset spec: comma-separated "name:count:size"
// groups, e.g. "model:163:4GiB,small:10000:64KiB". Sizes accept ParseSize's
// forms. A name may contain '/' but not ':' or ',' and must not start or end
// with '/'. An empty spec is an empty dataset.
func ParseDataset(spec string) (Dataset, error) {
	var d Dataset
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return d, nil
	}
	d.byName = map[string]int{}
	for _, part := range strings.Split(spec, ",") {
		fields := strings.Split(strings.TrimSpace(part), ":")
		if len(fields) != 3 {
			return Dataset{}, fmt.Errorf("parse dataset %q: group %q is not name:count:size", spec, part)
		}
		name := fields[0]
		if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
			return Dataset{}, fmt.Errorf("parse dataset %q: bad group name %q", spec, name)
		}
		if _, dup := d.byName[name]; dup {
			return Dataset{}, fmt.Errorf("parse dataset %q: group %q given twice", spec, name)
		}
		count, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || count < 1 {
			return Dataset{}, fmt.Errorf("parse dataset %q: bad count %q in group %q", spec, fields[1], name)
		}
		size, err := ParseSize(fields[2])
		if err != nil {
			return Dataset{}, fmt.Errorf("parse dataset %q: group %q: %w", spec, name, err)
		}
		digits := max(len(strconv.FormatInt(count-1, 10)), minKeyDigits)
		d.byName[name] = len(d.Groups)
		d.Groups = append(d.Groups, Group{Name: name, Count: count, Size: size, Digits: digits})
	}
	return d, nil
}

// String returns the dataset's spec in canonical form (sizes in bytes).
func (d Dataset) String() string {
	parts := make([]string, len(d.Groups))
	for i, g := range d.Groups {
		parts[i] = fmt.Sprintf("%s:%d:%d", g.Name, g.Count, g.Size)
	}
	return strings.Join(parts, ",")
}

// Objects returns how many objects the dataset holds.
func (d Dataset) Objects() int64 {
	var n int64
	for _, g := range d.Groups {
		n += g.Count
	}
	return n
}

// Bytes returns the dataset's total size in bytes.
func (d Dataset) Bytes() int64 {
	var n int64
	for _, g := range d.Groups {
		n += g.Count * g.Size
	}
	return n
}

// passMark separates a key from the pass it is read in (PassKey).
const passMark = '~'

// PassKey names the object key as a benchmark reads it in pass n of a
// dataset it reads again (n > 0): "model/00000007" in pass 2 is
// "model/00000007~2". Listings give only pass 0, the keys as they are;
// the emulator serves every pass's key with its base key's bytes, ETag
// and checksums (computed once, before a run's clock), under a name no
// cache keyed by name has seen.
func PassKey(key string, n int) string {
	if n <= 0 {
		return key
	}
	return key + string(passMark) + strconv.Itoa(n)
}

// baseKey is the key that a pass's key (PassKey) reads: key itself when
// it names no pass.
func baseKey(key string) string {
	i := strings.LastIndexByte(key, passMark)
	if i < 0 || i == len(key)-1 {
		return key
	}
	for _, c := range []byte(key[i+1:]) {
		if c < '0' || c > '9' {
			return key
		}
	}
	return key[:i]
}

// Lookup returns the size of the object named key, and whether it exists
// (a pass's key, PassKey, exists when its base key does).
func (d Dataset) Lookup(key string) (size int64, ok bool) {
	key = baseKey(key)
	slash := strings.LastIndexByte(key, '/')
	if slash < 0 {
		return 0, false
	}
	gi, ok := d.byName[key[:slash]]
	if !ok {
		return 0, false
	}
	g := d.Groups[gi]
	idx := key[slash+1:]
	if len(idx) != g.Digits {
		return 0, false
	}
	var i int64
	for _, c := range []byte(idx) {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int64(c-'0')
	}
	if i >= g.Count {
		return 0, false
	}
	return g.Size, true
}

// ParseSize parses a byte count as every s3pd flag reads one (the AWS
// CLI's syntax): a non-negative integer with an optional,
// case-insensitive KB, MB, GB, TB (or KiB, MiB, GiB, TiB) suffix, each a
// power of 1024 ("16MB" is 16 MiB). A one-letter unit ("16M") is refused,
// as the flags refuse it, with the spelling meant.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		hint := ""
		if num != "" && len(unit) == 1 && strings.Contains("kmgt", unit) {
			hint = fmt.Sprintf("; did you mean %s%siB?", num, strings.ToUpper(unit))
		}
		return 0, fmt.Errorf("parse size %q: want an integer with an optional KB, MB, GB, TB (or KiB, MiB, GiB, TiB) suffix%s", s, hint)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > (1<<63-1)/mult {
		return 0, fmt.Errorf("parse size %q: too large", s)
	}
	return n * mult, nil
}

var sizeUnits = map[string]int64{
	"":   1,
	"kb": 1 << 10, "kib": 1 << 10,
	"mb": 1 << 20, "mib": 1 << 20,
	"gb": 1 << 30, "gib": 1 << 30,
	"tb": 1 << 40, "tib": 1 << 40,
}

// keyIter walks a dataset's keys in lexical order without materialising
// them: one cursor per group, merged. Groups' keys mostly come in runs
// (a group's keys are contiguous unless its name prefixes another's), so
// after one scan of the cursors the iterator keeps taking from the same
// group while its keys stay below every other cursor's: a listing costs
// one comparison per key, not one per group.
type keyIter struct {
	groups []Group
	pos    []int64  // next index per group
	cur    []string // key at pos per group, "" when exhausted
	run    int      // the group being taken from, -1 for none
	runEnd string   // the least key of the other groups ("" for none)
}

func (d Dataset) iter() *keyIter {
	it := &keyIter{groups: d.Groups, pos: make([]int64, len(d.Groups)), cur: make([]string, len(d.Groups))}
	it.seekGE("")
	return it
}

// seekGE positions every cursor at its group's first key >= target.
func (it *keyIter) seekGE(target string) {
	it.run = -1
	for gi, g := range it.groups {
		i := g.search(target)
		it.pos[gi] = i
		it.cur[gi] = ""
		if i < g.Count {
			it.cur[gi] = g.Key(i)
		}
	}
}

// search returns the index of g's first key >= target (Count if none),
// comparing target with the group's name and digits without building
// keys.
func (g Group) search(target string) int64 {
	name := g.Name + "/"
	switch {
	case target <= name:
		return 0
	case !strings.HasPrefix(target, name):
		if target < name {
			return 0
		}
		return g.Count
	}
	rest := target[len(name):]
	// Keys are exactly Digits decimal digits: the first key >= target is
	// the least index whose zero-padded form is >= rest.
	var i int64
	for j := 0; j < g.Digits; j++ {
		if j >= len(rest) {
			break // rest is a proper prefix of the key at i: that key is greater
		}
		c := rest[j]
		switch {
		case c < '0':
			return min(i*pow10(g.Digits-j), g.Count)
		case c > '9':
			return min((i+1)*pow10(g.Digits-j), g.Count)
		}
		i = i*10 + int64(c-'0')
		if j == g.Digits-1 && len(rest) > g.Digits {
			i++ // rest extends the key at i: the key at i is less
		}
	}
	if len(rest) < g.Digits {
		i *= pow10(g.Digits - len(rest))
	}
	return min(i, g.Count)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// next returns the smallest remaining key and the group it belongs to.
func (it *keyIter) next() (key string, g Group, ok bool) {
	best := it.run
	if best < 0 || it.cur[best] == "" || (it.runEnd != "" && it.cur[best] >= it.runEnd) {
		best, it.runEnd = -1, ""
		for gi, k := range it.cur {
			switch {
			case k == "":
			case best < 0 || k < it.cur[best]:
				if best >= 0 {
					it.runEnd = it.cur[best]
				}
				best = gi
			case it.runEnd == "" || k < it.runEnd:
				it.runEnd = k
			}
		}
		it.run = best
	}
	if best < 0 {
		return "", Group{}, false
	}
	key, g = it.cur[best], it.groups[best]
	it.pos[best]++
	it.cur[best] = ""
	if it.pos[best] < g.Count {
		it.cur[best] = g.Key(it.pos[best])
	}
	return key, g, true
}
