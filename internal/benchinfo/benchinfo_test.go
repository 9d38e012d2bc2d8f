package benchinfo

import (
	"slices"
	"testing"
)

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"spends 98 % of its CPU in write(2)", []string{"98"}},
		{"p50 and p99 of go1.26.8, iperf3 and x86_64", nil},
		{"iperf 3.12; 35,509 writes; 2026-12-01 02:33 UTC", []string{"3.12", "35,509", "2026", "12", "01", "02", "33"}},
		{"fortio v1.75.3, kernel 6.18.44-fc-v595", []string{"6.18.44"}},
		{"0.98–1.15×, 273 µs (agent)", []string{"0.98", "1.15", "273"}},
	} {
		if got := Numbers(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Numbers(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestProseLeavesTablesOut(t *testing.T) {
	md := "# t\n\n| a | 1 |\n|---|---|\n| b | 2 |\n\nnote 3\n"
	if got, want := Numbers(Prose(md)), []string{"3"}; !slices.Equal(got, want) {
		t.Errorf("Numbers(Prose) = %q, want %q", got, want)
	}
}
