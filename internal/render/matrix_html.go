package render

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

//go:embed matrix.html.tmpl
var matrixHTML string

// htmlGrid is one heatmap: rows of cells in column order.
type htmlGrid struct {
	Axis string
	// Family is said when the page has both families' grids.
	Family string
	Cols   []string
	Rows   []htmlRow
}

type htmlRow struct {
	Name  string
	Cells []htmlCellOf
}

type htmlCellOf struct {
	report.MatrixCell
	Colour template.CSS
}

// WriteMatrixHTML writes the matrix as one self-contained page: a heatmap per axis (zones, and
// nodes for --scope nodes), the per-node table and the outliers; no script, nothing fetched.
func WriteMatrixHTML(w io.Writer, r *report.MatrixReport) error {
	t, err := template.New("matrix").Funcs(template.FuncMap{"micros": report.Micros}).Parse(matrixHTML)
	if err != nil {
		return err
	}
	grids := familyGrids(r, "")
	if v6 := r.V6(); v6 != nil {
		grids = append(familyGrids(r, "IPv4"), familyGrids(v6, "IPv6")...)
	}
	return t.Execute(w, map[string]any{"R": r, "Grids": grids})
}

// familyGrids are one family's heatmaps: by node (--scope nodes), then by zone.
func familyGrids(r *report.MatrixReport, family string) []htmlGrid {
	grids := []htmlGrid{gridOf("zone", r.Zones)}
	if r.Scope == "nodes" {
		grids = append([]htmlGrid{gridOf("node", r.NodeGrid)}, grids...)
	}
	for i := range grids {
		grids[i].Family = family
	}
	return grids
}

func gridOf(axis string, cells []report.MatrixCell) htmlGrid {
	g := htmlGrid{Axis: axis}
	byKey := map[[2]string]report.MatrixCell{}
	rows, cols := axes(cells)
	g.Cols = cols
	lowest := math.Inf(1)
	for _, c := range cells {
		byKey[[2]string{c.From, c.To}] = c
		lowest = math.Min(lowest, c.P50Micros)
	}
	for _, name := range rows {
		row := htmlRow{Name: name}
		for _, col := range g.Cols {
			c := byKey[[2]string{name, col}]
			row.Cells = append(row.Cells, htmlCellOf{MatrixCell: c, Colour: heatCSS(c.P50Micros / lowest)})
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// heatCSS maps a ratio to the smallest cell (1 and up) to a colour from green to red at 4×.
func heatCSS(ratio float64) template.CSS {
	f := math.Max(0, math.Min(1, math.Log(math.Max(ratio, 1))/math.Log(4)))
	return template.CSS(fmt.Sprintf("hsl(%.0f, 70%%, 85%%)", 120*(1-f)))
}
