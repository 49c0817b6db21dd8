package bench

import (
	"fmt"
	"slices"
	"testing"
)

// TestWilliams checks the design over its rounds: every row orders all n
// contenders, each takes every place equally often, and each ordered pair
// of neighbours occurs equally often.
func TestWilliams(t *testing.T) {
	for n := 1; n <= 7; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rows := n
			if n%2 == 1 {
				rows = 2 * n
			}
			place := map[[2]int]int{}
			pair := map[[2]int]int{}
			for k := range rows {
				row := williams(n, k)
				if sorted := slices.Sorted(slices.Values(row)); !slices.Equal(sorted, seq(n)) {
					t.Fatalf("row %d is %v, not an order of 0..%d", k, row, n-1)
				}
				if again := williams(n, k+rows); !slices.Equal(again, row) {
					t.Fatalf("round %d gives %v, round %d %v: the design must repeat", k, row, k+rows, again)
				}
				for i, c := range row {
					place[[2]int{c, i}]++
					if i > 0 {
						pair[[2]int{row[i-1], c}]++
					}
				}
			}
			for c := range n {
				for i := range n {
					if got := place[[2]int{c, i}]; got != rows/n {
						t.Errorf("contender %d at place %d %d times, want %d", c, i, got, rows/n)
					}
				}
			}
			if n < 2 {
				return
			}
			want := rows / n
			for a := range n {
				for b := range n {
					if a != b && pair[[2]int{a, b}] != want {
						t.Errorf("%d right before %d %d times, want %d", a, b, pair[[2]int{a, b}], want)
					}
				}
			}
		})
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
