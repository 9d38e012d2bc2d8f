package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// JUnit XML, as CI systems read it: one test case per --fail-if condition, failed when the
// condition held.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the checks of one run (suite: what was measured, e.g. "path shop/a → shop/b").
func WriteJUnit(w io.Writer, suite, class string, start time.Time, t report.Timing, checks []v1alpha1.CheckResult) error {
	s := junitSuite{Name: suite, Tests: len(checks), Time: fmt.Sprintf("%.1f", t.WallSeconds), Timestamp: start.UTC().Format(time.RFC3339)}
	for _, c := range checks {
		tc := junitCase{Name: c.Condition, ClassName: class, Time: "0", SystemOut: c.Message}
		if c.Violated {
			s.Failures++
			tc.Failure = &junitFailure{Message: "fail-if " + c.Condition + ": " + c.Message, Type: "fail-if", Text: c.Message}
		}
		s.Cases = append(s.Cases, tc)
	}
	out := junitSuites{Name: "kubectl-netbench", Tests: s.Tests, Failures: s.Failures, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
