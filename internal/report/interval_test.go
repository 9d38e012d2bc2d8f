package report

import (
	"math"
	"testing"
	"time"
)

// orderRanksBySum is the plain definition: the binomial distribution summed from 0 until it
// reaches 0.975, term by term (O(n)).
func orderRanksBySum(n int64, q float64) (l, u int64) {
	lgN, _ := math.Lgamma(float64(n) + 1)
	var cdf float64
	for k := int64(0); k <= n; k++ {
		a, _ := math.Lgamma(float64(k) + 1)
		b, _ := math.Lgamma(float64(n-k) + 1)
		cdf += math.Exp(lgN - a - b + float64(k)*math.Log(q) + float64(n-k)*math.Log1p(-q))
		if cdf <= 0.025 {
			l = k + 1
		}
		if cdf >= 0.975 {
			if k+1 > n {
				return l, 0
			}
			return l, k + 1
		}
	}
	return l, 0
}

// Where the ranks are summed term by term (a binomial standard deviation up to exactSigma),
// they are the plain definition's, exactly: every n up to 600 and a sweep of larger ones, for
// each percentile a figure carries.
func TestOrderRanksExactForSmallCounts(t *testing.T) {
	var ns []int64
	for n := int64(1); n <= 600; n++ {
		ns = append(ns, n)
	}
	for n := int64(601); n <= 100_000; n = n*3/2 + 7 {
		ns = append(ns, n)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		for _, n := range ns {
			if math.Sqrt(float64(n)*q*(1-q)) > exactSigma {
				continue
			}
			l, u := orderRanks(n, q)
			wl, wu := orderRanksBySum(n, q)
			if l != wl || u != wu {
				t.Errorf("n %d q %g: ranks %d, %d; the sum gives %d, %d", n, q, l, u, wl, wu)
			}
		}
	}
}

// Past exactSigma the normal approximation takes over: within one rank of the exact sum just
// past it, inside [1, n] around n·q for any count up to the largest, and computed at once.
func TestOrderRanksBoundedForLargeCounts(t *testing.T) {
	for _, c := range []struct {
		n int64
		q float64
	}{{4_100_000, 0.5}, {12_000_000, 0.9}, {102_000_000, 0.99}, {1_002_000_000, 0.999}} {
		mu := float64(c.n) * c.q
		sigma := math.Sqrt(mu * (1 - c.q))
		if sigma <= exactSigma {
			t.Fatalf("n %d q %g: σ %g is not past exactSigma", c.n, c.q, sigma)
		}
		l, u := orderRanks(c.n, c.q)
		wl, wu := binomialRanks(c.n, c.q, mu, sigma)
		if abs64(l-wl) > 1 || abs64(u-wu) > 1 {
			t.Errorf("n %d q %g: ranks %d, %d; the sum gives %d, %d", c.n, c.q, l, u, wl, wu)
		}
	}
	for _, n := range []int64{1e7, 1e9, 1e12, 1e15, 1e18, math.MaxInt64} {
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			start := time.Now()
			l, u := orderRanks(n, q)
			if took := time.Since(start); took > 50*time.Millisecond {
				t.Errorf("n %d q %g took %v", n, q, took)
			}
			mid := float64(n) * q
			if l < 1 || u > n || u == 0 || float64(l) > mid || float64(u) < mid {
				t.Errorf("n %d q %g: ranks %d, %d do not enclose %g", n, q, l, u, mid)
			}
		}
	}
}

// Counts no run has (zero, negative, a quantile outside (0, 1)) give no ranks.
func TestOrderRanksOutOfDomain(t *testing.T) {
	for _, c := range []struct {
		n int64
		q float64
	}{{0, 0.5}, {-5, 0.5}, {math.MinInt64, 0.99}, {100, 0}, {100, 1}, {100, math.NaN()}} {
		if l, u := orderRanks(c.n, c.q); l != 0 || u != 0 {
			t.Errorf("n %d q %g: ranks %d, %d", c.n, c.q, l, u)
		}
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func BenchmarkOrderRanksLargestExact(b *testing.B) {
	for i := 0; i < b.N; i++ {
		orderRanks(4_000_000, 0.5)
	}
}
