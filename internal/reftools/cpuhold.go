package reftools

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// HoldCPUs keeps every CPU this process may run on out of idle until release is called: one
// thread pinned to each CPU spins at the kernel's lowest priority (SCHED_IDLE), which any other
// task's wake-up preempts at once and which gets almost no CPU while others want it.
//
// Why: a request/response loop waits for each answer asleep, and a CPU with nothing to run
// halts; waking a halted virtual CPU costs tens of µs where the guest does not poll before
// halting (cpuidle-haltpoll with guest_halt_poll_ns 0). How often a tool's waits pay that
// depends on what else keeps the CPUs busy meanwhile (a Go process has runtime threads of its
// own; sockperf has none), not on the path: held, neither pays it.
func HoldCPUs() (release func(), err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("the CPUs this process may use: %w", err)
	}
	var cpus []int
	for cpu := 0; len(cpus) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(procs + len(cpus)) // the spinners hold a P each; the rest keep theirs
	var quit atomic.Bool
	var wg sync.WaitGroup
	ready := make(chan error, len(cpus))
	for _, cpu := range cpus {
		wg.Add(1)
		go func() { defer wg.Done(); spinOn(cpu, set, &quit, ready) }()
	}
	release = func() {
		quit.Store(true)
		wg.Wait()
		runtime.SetDefaultGOMAXPROCS() // it follows the CPUs again, if it did
		if runtime.GOMAXPROCS(0) != procs {
			runtime.GOMAXPROCS(procs) // it had been set
		}
	}
	var errs []error
	for range cpus {
		errs = append(errs, <-ready)
	}
	if err := errors.Join(errs...); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// spinOn pins its thread to cpu at SCHED_IDLE, says so on ready, and spins until quit; then it
// gives the thread back as it found it (its scheduling attributes, the process's CPUs in all).
func spinOn(cpu int, all unix.CPUSet, quit *atomic.Bool, ready chan<- error) {
	runtime.LockOSThread()
	was, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		ready <- fmt.Errorf("spinner on CPU %d: %w", cpu, err)
		return // the thread stays locked, and ends with the goroutine
	}
	var one unix.CPUSet
	one.Set(cpu)
	err = unix.SchedSetaffinity(0, &one)
	if err == nil {
		err = unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
	}
	if err == nil {
		ready <- nil
		for !quit.Load() { // asynchronous preemption stops it for the garbage collector
		}
	} else {
		ready <- fmt.Errorf("spinner on CPU %d: %w", cpu, err)
	}
	if unix.SchedSetAttr(0, was, 0) == nil && unix.SchedSetaffinity(0, &all) == nil {
		runtime.UnlockOSThread() // else the thread stays locked, and ends with the goroutine
	}
}

// IdleSettings says how this machine's CPUs idle: the cpuidle driver and, for haltpoll, how
// long a CPU polls before it halts.
func IdleSettings() string {
	driver := readTrimmed("/sys/devices/system/cpu/cpuidle/current_driver")
	if driver == "" {
		return "cpuidle driver unknown"
	}
	s := "cpuidle driver " + driver
	if ns := readTrimmed("/sys/module/haltpoll/parameters/guest_halt_poll_ns"); ns != "" {
		s += ", guest_halt_poll_ns " + ns
	}
	return s
}

func readTrimmed(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}
