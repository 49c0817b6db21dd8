package fleet

import (
	"fmt"
	"testing"
)

// TestWrittenRangesMerge: parts marked in any order merge where they
// touch or overlap, and a range is covered only inside one merged span.
func TestWrittenRangesMerge(t *testing.T) {
	for _, tt := range []struct {
		adds  [][2]int64 // off, end
		spans string
		cover [][2]int64 // off, n: covered
		not   [][2]int64 // off, n: not covered
	}{
		{[][2]int64{{0, 10}}, "[{0 10}]", [][2]int64{{0, 10}, {9, 1}}, [][2]int64{{0, 11}, {10, 1}}},
		{[][2]int64{{20, 30}, {0, 10}}, "[{0 10} {20 30}]", [][2]int64{{20, 10}}, [][2]int64{{5, 20}, {10, 10}}},
		{[][2]int64{{20, 30}, {0, 10}, {10, 20}}, "[{0 30}]", [][2]int64{{0, 30}, {5, 20}}, [][2]int64{{29, 2}}},
		{[][2]int64{{0, 10}, {40, 50}, {20, 30}, {5, 45}}, "[{0 50}]", [][2]int64{{0, 50}}, nil},
		{[][2]int64{{0, 10}, {0, 10}, {30, 40}, {12, 20}}, "[{0 10} {12 20} {30 40}]", [][2]int64{{12, 8}}, [][2]int64{{9, 4}, {20, 10}}},
	} {
		var w writing
		for _, a := range tt.adds {
			w.add(a[0], a[1])
		}
		if got := fmt.Sprint(w.spans); got != tt.spans {
			t.Errorf("adds %v: spans %s, want %s", tt.adds, got, tt.spans)
		}
		for _, c := range tt.cover {
			if !w.covers(c[0], c[1]) {
				t.Errorf("adds %v: %d+%d not covered, want covered", tt.adds, c[0], c[1])
			}
		}
		for _, c := range tt.not {
			if w.covers(c[0], c[1]) {
				t.Errorf("adds %v: %d+%d covered, want not", tt.adds, c[0], c[1])
			}
		}
	}
}
