package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pinned mode gives each side one core of a 2-core machine: the broker's
// threads run on CPU 1 and the harness's (the load generator's) on CPU 0,
// so the generator cannot take CPU from the broker nor the broker from the
// generator. It measures records per broker core, the same core for both
// brokers.
const (
	generatorCPU = 0
	brokerCPU    = 1
)

// canPin reports whether the machine has the two CPUs pinned mode uses.
func canPin() bool { return runtime.NumCPU() >= 2 }

// pinProcess sets the CPU affinity of every thread of pid to cpus (all
// CPUs when cpus is empty). Threads started later inherit the mask of the
// thread that starts them; the second pass catches threads started while
// the first ran.
func pinProcess(pid int, cpus ...int) error {
	var set unix.CPUSet
	if len(cpus) == 0 {
		for c := range runtime.NumCPU() {
			set.Set(c)
		}
	}
	for _, c := range cpus {
		set.Set(c)
	}
	for range 2 {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return fmt.Errorf("pin %d: %w", pid, err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			// A thread may exit between the listing and the call.
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pin thread %d of %d: %w", tid, pid, err)
			}
		}
	}
	return nil
}
