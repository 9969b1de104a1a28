package reports

import (
	"io"
	"strconv"
)

// The few text helpers of the report writers that package reports/gate
// prints with too, so a gate line and a report table say a value, a method
// or a shape the same way.

// MethodName is an eval method as a note says it: an empty one (a report
// that does not say) is "no stated method".
func MethodName(m string) string { return methodName(m) }

// ShapeString is a shape (Shape) as requests/input/output: "64/256/64".
func ShapeString(s [3]int) string { return shapeString(s) }

// SignedPct writes a percent change with its sign: "+1.2%", "-9.6%".
func SignedPct(v float64) string { return signedPct(v) }

// MDCell keeps a Markdown table cell on one line and its pipes from
// splitting the row.
func MDCell(s string) string { return mdCell(s) }

// Plural is n and what, with an s unless n is 1: "1 run", "3 runs".
func Plural(n int, what string) string { return plural(n, what) }

// WriteCompactTable writes a Markdown table without padding.
func WriteCompactTable(w io.Writer, head []string, rows [][]string) error {
	p := &printer{w: w}
	p.compactTable(head, rows)
	return p.err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
