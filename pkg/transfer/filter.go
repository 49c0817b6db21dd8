package transfer

import "strings"

// Rule is one --include or --exclude pattern.
type Rule struct {
	Include bool
	Pattern string
}

// Rules filter object names as the AWS CLI does: every name is included
// unless a rule says otherwise, rules apply in order and the last one that
// matches decides. Patterns are matched against the name relative to the
// source prefix; "*" matches any run of characters, "/" included, "?" one
// character, and "[...]" a class.
type Rules []Rule

// Match reports whether name passes the rules.
func (rs Rules) Match(name string) bool {
	in := true
	for _, r := range rs {
		if glob(r.Pattern, name) {
			in = r.Include
		}
	}
	return in
}

// Filter adapts the rules to Options.Filter.
func (rs Rules) Filter() func(Object) bool {
	if len(rs) == 0 {
		return nil
	}
	return func(o Object) bool { return rs.Match(o.Name) }
}

// glob matches name against pattern in fnmatch style without special
// treatment of "/".
func glob(pattern, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				px++
				nx++
				continue
			case '[':
				if end := strings.IndexByte(pattern[px+1:], ']'); end >= 0 {
					if classMatch(pattern[px+1:px+1+end], name[nx]) {
						px += end + 2
						nx++
						continue
					}
				} else if name[nx] == '[' {
					px++
					nx++
					continue
				}
			default:
				if c == name[nx] {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 {
			px = starPx + 1
			starNx++
			nx = starNx
			continue
		}
		return false
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

func classMatch(class string, c byte) bool {
	negate := false
	if len(class) > 0 && (class[0] == '!' || class[0] == '^') {
		negate, class = true, class[1:]
	}
	match := false
	for i := 0; i < len(class); i++ {
		if i+2 < len(class) && class[i+1] == '-' {
			if class[i] <= c && c <= class[i+2] {
				match = true
			}
			i += 2
			continue
		}
		if class[i] == c {
			match = true
		}
	}
	return match != negate
}
