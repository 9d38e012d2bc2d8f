package render

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// The ladder's HTML page, opened in a real headless Chromium: it renders (the screenshot is not
// blank), its text holds every measured rung's name and RTT p50 as the table prints it, and it
// references nothing outside itself.
func TestLadderHTMLInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	inputs, _ := filepath.Glob("testdata/ladder-*.json")
	if len(inputs) == 0 {
		t.Fatal("no ladder reports in testdata/")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var r report.LadderReport
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			var page bytes.Buffer
			if err := WriteLadder(&page, "html", &r); err != nil {
				t.Fatal(err)
			}
			text := renderInChromium(t, chromium, page.Bytes())
			words := strings.Join(strings.Fields(text), " ")
			for _, w := range familyTexts(&r) {
				if !strings.Contains(words, w) {
					t.Errorf("the rendered page lacks %q", w)
				}
			}
			for _, rung := range r.Rungs {
				if rung.Skipped != "" {
					continue
				}
				want := []string{rung.Name}
				for _, f := range []string{"icmp.p50", "tcp-rtt.p50"} {
					if fig, ok := rung.Figures[f]; ok {
						want = append(want, formatValue(fig.Median, fig.Unit))
					}
				}
				for _, w := range want {
					if !strings.Contains(text, htmlText(w)) {
						t.Errorf("the rendered page lacks %q", w)
					}
				}
			}
		})
	}
}

// familyTexts are what a ladder page must say of the address families: the run's, and each
// ClusterIP a rung's spread went through.
func familyTexts(r *report.LadderReport) []string {
	var want []string
	if r.IPFamily != "" {
		want = append(want, htmlText(r.IPFamily))
	}
	for _, rung := range r.Rungs {
		for _, s := range []*report.RungSpread{rung.Spread, rung.SpreadSecondary} {
			if s != nil && s.ClusterIP != "" {
				want = append(want, s.ClusterIP+" "+s.IPFamily)
			}
		}
	}
	return want
}

// renderInChromium checks that page is self-contained, has headless Chromium draw it (the
// screenshot must not be blank) and returns the text of the DOM it built.
func renderInChromium(t *testing.T, chromium string, page []byte) string {
	t.Helper()
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\w+:`).FindString(string(page)); m != "" || bytes.Contains(page, []byte("<script")) {
		t.Errorf("the page is not self-contained: %q", m)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile")}
	shot := filepath.Join(dir, "shot.png")
	if out, err := exec.Command(chromium, append(args, "--window-size=1200,1600", "--screenshot="+shot, "file://"+file)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	checkNotBlank(t, shot)
	dom, err := exec.Command(chromium, append(args, "--dump-dom", "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(dom), " ")
}

// The matrix page of a real lab run (every node pair, lab-b1 made slow) draws, and its text holds
// every node, every node cell's p50 and the outliers.
func TestMatrixHTMLInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	data, err := os.ReadFile("testdata/matrix-nodes-slow-b1.json")
	if err != nil {
		t.Fatal(err)
	}
	var r report.MatrixReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := WriteMatrix(&page, "html", &r, false); err != nil {
		t.Fatal(err)
	}
	text := renderInChromium(t, chromium, page.Bytes())
	want := []string{"lab-b1 is slow"}
	for _, n := range r.Nodes {
		want = append(want, n.Name)
	}
	for _, c := range r.NodeGrid {
		want = append(want, report.Micros(c.P50Micros))
	}
	for _, w := range want {
		if !strings.Contains(text, htmlText(w)) {
			t.Errorf("the rendered page lacks %q", w)
		}
	}
}

// htmlText is s as it reads in the DOM Chromium dumps (its own escaping of text).
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// checkNotBlank fails unless the screenshot has a fair share of pixels that are not the
// background's colour.
func checkNotBlank(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	bg := img.At(b.Min.X, b.Min.Y)
	var other, all int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			all++
			if img.At(x, y) != bg {
				other++
			}
		}
	}
	t.Logf("screenshot %dx%d: %.1f %% of pixels drawn", b.Dx(), b.Dy(), 100*float64(other)/float64(all))
	if float64(other)/float64(all) < 0.02 {
		t.Errorf("the screenshot is (nearly) blank: %d of %d pixels differ from the background", other, all)
	}
}
