// Package benchinfo is what the benchmark generators (hack/bench, hack/benchlab) print about the
// run itself — date, machine, versions, the command line — and the helpers their tests use to
// check that every number in a generated file's prose comes from the run or from the code.
package benchinfo

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Machine is where a run happened, read from the machine itself.
type Machine struct {
	Cores  int
	CPU    string // model name
	Kernel string // uname -r
	Load   string // the 1-minute load average when the run started: other work shares the cores
}

// LoadAverage is the machine's 1-minute load average now, as /proc/loadavg gives it.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// ReadMachine reads this machine's cores, CPU model, kernel release and load average.
func ReadMachine() Machine {
	return Machine{Cores: runtime.NumCPU(), CPU: cpuModel(), Kernel: FirstLine("uname", "-r"), Load: LoadAverage()}
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// FirstLine is the first line a command prints (a version), or "NAME: could not be run".
func FirstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return name + ": could not be run"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// ModuleVersion is the version of module path this binary was built with, from its build
// information (go run and go build both record it), or "version unknown".
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "version unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version + " (replacing " + d.Version + ")"
			}
			return d.Version
		}
	}
	return "version unknown"
}

// Command is the command line this process was started with, as a user would type it: a
// binary that `go run` built in a temporary directory is shown as `go run PKG`.
func Command(pkg string) string {
	prog := os.Args[0]
	if strings.Contains(prog, "go-build") {
		prog = "go run " + pkg
	}
	args := []string{prog}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// Lines is everything a command prints, one line after another joined by "; ", or
// "NAME: could not be run".
func Lines(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return name + ": could not be run"
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// ViaMake is " (by `make TARGET`)" when make started this process, else "": to be printed after
// the command's code span, not inside it.
func ViaMake(target string) string {
	if os.Getenv("MAKELEVEL") == "" {
		return ""
	}
	return " (by `make " + target + "`)"
}

// Stamp is how the generated files print a time.
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }

// Prose is the markdown without its tables (lines starting with "|"): the text whose numbers
// the tests check.
func Prose(md string) string {
	var b strings.Builder
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "|") {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	// manSection is a man page reference such as write(2): not a figure.
	manSection = regexp.MustCompile(`\b[a-z_]+\([1-8]\)`)
	// number is a run of digits (with a decimal point or thousands separator inside) that does
	// not continue a word: "p50", "go1", "iperf3" and "x86_64" are names, not figures.
	number = regexp.MustCompile(`(^|[^\p{L}\p{N}_.])(\d+(?:[.,]\d+)*)`)
)

// Numbers lists the numeric tokens of text, in order, man page sections left out.
func Numbers(text string) []string {
	text = manSection.ReplaceAllString(text, "")
	var out []string
	for _, m := range number.FindAllStringSubmatch(text, -1) {
		out = append(out, m[2])
	}
	return out
}
