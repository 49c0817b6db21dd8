package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH         = 880, 240
	padL, padR, padT, padB = 64, 16, 28, 36
	plotW, plotH           = chartW - padL - padR, chartH - padT - padB
	maxHistogramBars       = 64
	percentileLabelSpacing = 14
)

// palette colours the series of a chart, in order.
var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"}

// line is one series of a line chart.
type line struct {
	name string
	ys   []float64
	bars bool // drawn as bars instead of a line
}

// svgBuilder accumulates one chart's markup.
type svgBuilder struct{ b strings.Builder }

func (s *svgBuilder) add(format string, a ...any) { fmt.Fprintf(&s.b, format, a...) }

// open starts a chart: its frame, title and y axis from 0 to ymax.
func (s *svgBuilder) open(id, title, yUnit string, ymax float64, points int) {
	s.add(`<svg class="chart" id="%s" data-points="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		id, points, chartW, chartH, esc(title))
	// The unit follows the title on its line, where no tick label or
	// title can run into it.
	s.add(`<text class="title" x="%d" y="18">%s <tspan class="unit">(%s)</tspan></text>`, padL, esc(title), esc(yUnit))
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		y := float64(padT+plotH) - float64(plotH)*float64(i)/4
		s.add(`<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, padL+plotW, y, y)
		s.add(`<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y+4, esc(number(v)))
	}
}

// xTick labels the x axis at x, centred unless that would run into the
// y axis's labels or out of the chart.
func (s *svgBuilder) xTick(x float64, text string) {
	half := labelWidth(text) / 2
	anchor := "middle"
	switch {
	case x-half < padL:
		x, anchor = math.Max(x-half, padL), "start"
	case x+half > chartW-2:
		x, anchor = math.Min(x+half, chartW-2), "end"
	}
	s.add(`<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x, padT+plotH+16, anchor, esc(text))
}

func (s *svgBuilder) close() template.HTML {
	s.add(`</svg>`)
	return template.HTML(s.b.String())
}

// timeChart draws series over the run's time: x is the samples' end time.
func timeChart(id, title, yUnit string, samples []transfer.Sample, lines []line) template.HTML {
	var s svgBuilder
	ymax := 0.0
	for _, l := range lines {
		for _, y := range l.ys {
			ymax = math.Max(ymax, y)
		}
	}
	ymax = niceCeil(ymax)
	s.open(id, title, yUnit, ymax, len(samples))
	if len(samples) == 0 {
		s.add(`<text class="empty" x="%d" y="%d">no samples</text>`, padL+20, padT+plotH/2)
		return s.close()
	}
	end := samples[len(samples)-1].At.Seconds()
	if end <= 0 {
		end = 1
	}
	x := func(t float64) float64 { return padL + float64(plotW)*t/end }
	y := func(v float64) float64 { return float64(padT+plotH) - float64(plotH)*v/ymax }
	for i := 0; i <= 4; i++ {
		t := end * float64(i) / 4
		s.xTick(x(t), number(t)+" s")
	}
	for li, l := range lines {
		color := palette[li%len(palette)]
		if l.bars {
			for i, smp := range samples {
				x0, x1 := x((smp.At - smp.Length).Seconds()), x(smp.At.Seconds())
				w := math.Max(x1-x0-1, 1) / float64(len(lines))
				s.add(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s at %.1f s: %s</title></rect>`,
					x0+w*float64(li), y(l.ys[i]), w, float64(padT+plotH)-y(l.ys[i]), color, esc(l.name), smp.At.Seconds(), number(l.ys[i]))
			}
		} else {
			var pts strings.Builder
			for i, smp := range samples {
				fmt.Fprintf(&pts, "%.1f,%.1f ", x(smp.At.Seconds()), y(l.ys[i]))
			}
			s.add(`<polyline class="series" fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`,
				color, strings.TrimSpace(pts.String()), esc(l.name))
		}
		s.add(`<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text class="legend" x="%d" y="%d">%s</text>`,
			padL+plotW-200, padT+4+li*15, color, padL+plotW-186, padT+13+li*15, esc(l.name))
	}
	return s.close()
}

// mark is a vertical line at a value of a histogram: a percentile.
type mark struct {
	name string
	at   time.Duration
}

// histogramChart draws a latency histogram on a logarithmic time axis
// (its buckets' own scale), with marks for the percentiles.
func histogramChart(id, title string, h transfer.Histogram, marks []mark) template.HTML {
	var s svgBuilder
	lo, hi := -1, -1
	for i, c := range h.Counts {
		if c > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		s.open(id, title, "requests", 1, 0)
		s.add(`<text class="empty" x="%d" y="%d">no requests</text>`, padL+20, padT+plotH/2)
		return s.close()
	}
	// Merge buckets so at most maxHistogramBars bars are drawn.
	group := 1
	for (hi-lo+1+group-1)/group > maxHistogramBars {
		group *= 2
	}
	lo -= lo % group
	var bars []int64
	for i := lo; i <= hi; i += group {
		var n int64
		for j := i; j < i+group && j < len(h.Counts); j++ {
			n += h.Counts[j]
		}
		bars = append(bars, n)
	}
	var ymax int64
	for _, n := range bars {
		ymax = max(ymax, n)
	}
	top := niceCeil(float64(ymax))
	s.open(id, title, "requests", top, len(bars))
	w := float64(plotW) / float64(len(bars))
	y := func(v float64) float64 { return float64(padT+plotH) - float64(plotH)*v/top }
	for i, n := range bars {
		first := lo + i*group
		upper := h.Upper(min(first+group-1, len(h.Counts)-1))
		lower := time.Duration(0)
		if first > 0 {
			lower = h.Upper(first - 1)
		}
		s.add(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s to %s: %d</title></rect>`,
			float64(padL)+w*float64(i)+0.5, y(float64(n)), math.Max(w-1, 0.5), float64(padT+plotH)-y(float64(n)), palette[0], round(lower), round(upper), n)
	}
	// The x axis: a label every few bars, at the bars' upper edges.
	step := max(1, len(bars)/6)
	for i := 0; i < len(bars); i += step {
		upper := h.Upper(min(lo+i*group+group-1, len(h.Counts)-1))
		s.xTick(float64(padL)+w*(float64(i)+0.5), round(upper).String())
	}
	// A percentile falls in the bar whose range holds it.
	xs := make([]float64, len(marks))
	for mi, m := range marks {
		pos := -1
		for i := range bars {
			if m.at <= h.Upper(min(lo+i*group+group-1, len(h.Counts)-1)) {
				pos = i
				break
			}
		}
		if pos < 0 {
			pos = len(bars) - 1
		}
		xs[mi] = float64(padL) + w*(float64(pos)+0.5)
		s.add(`<line class="mark" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s"/>`, xs[mi], xs[mi], padT, padT+plotH, palette[1+mi%3])
	}
	var placed []labelBox
	for mi, m := range marks {
		text := m.name + " " + round(m.at).String()
		b := placeLabel(xs[mi], labelWidth(text), xs, placed)
		placed = append(placed, b)
		lx, anchor := b.x0, "start"
		if b.left {
			lx, anchor = b.x1, "end"
		}
		s.add(`<text class="marklabel" x="%.1f" y="%d" fill="%s" text-anchor="%s">%s</text>`, lx, padT+10+b.row*percentileLabelSpacing, palette[1+mi%3], anchor, esc(text))
	}
	return s.close()
}

// labelBox is where a percentile's label goes: a row under the top of
// the plot and the span it covers, right (or left) of its mark.
type labelBox struct {
	row    int
	x0, x1 float64
	left   bool
}

// labelWidth estimates the width of a label at the marks' 11 px
// (DejaVu Sans: digits and most letters 0.64 em, "." and " " 0.32, "m"
// 0.97), with a tenth to spare for a wider fallback font.
func labelWidth(text string) float64 {
	w := 0.0
	for _, r := range text {
		switch r {
		case '.', ' ':
			w += 0.32
		case 'm', 'w':
			w += 0.97
		default:
			w += 0.64
		}
	}
	return w * 11 * 1.1
}

// placeLabel finds a place for a label of width w by the mark at x:
// the first row, right of the mark or else left of it, inside the plot
// and clear of every label placed; among the first rows, one also clear
// of the other marks' lines if there is one (a line that crosses a
// label leaves it readable: labels have a white outline).
func placeLabel(x, w float64, marks []float64, placed []labelBox) labelBox {
	const gap = 3
	try := func(rows int, lines []float64) (labelBox, bool) {
		for row := 0; row < rows; row++ {
			for _, left := range []bool{false, true} {
				b := labelBox{row: row, x0: x + gap, x1: x + gap + w, left: left}
				if left {
					b.x0, b.x1 = x-gap-w, x-gap
				}
				if b.x0 >= padL && b.x1 <= padL+plotW && labelClear(b, lines, placed) {
					return b, true
				}
			}
		}
		return labelBox{}, false
	}
	if b, ok := try(len(marks), marks); ok {
		return b
	}
	if b, ok := try(len(marks)+len(placed)+1, nil); ok {
		return b
	}
	// Wider than the plot on either side of the mark: a row of its own.
	return labelBox{row: len(placed), x0: x + gap, x1: x + gap + w}
}

// labelClear reports whether b is clear of the labels placed and of the
// lines at xs.
func labelClear(b labelBox, xs []float64, placed []labelBox) bool {
	for _, p := range placed {
		if p.row == b.row && b.x0 < p.x1+4 && p.x0 < b.x1+4 {
			return false
		}
	}
	for _, x := range xs {
		if x > b.x0-1 && x < b.x1+1 {
			return false
		}
	}
	return true
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// number formats a chart label.
func number(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func esc(s string) string { return html.EscapeString(s) }
