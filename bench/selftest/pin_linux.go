//go:build linux

package selftest

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinProcess restricts every thread of process pid to cpus. Linux keeps an
// affinity per thread; a thread started later inherits its creator's, so
// after two passes over /proc/PID/task (the second catches threads started
// during the first) the whole process stays on cpus.
func pinProcess(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	for range 2 {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH { // ESRCH: the thread ended
				return fmt.Errorf("pinning thread %d of process %d to CPUs %v: %w", tid, pid, cpus, err)
			}
		}
	}
	return nil
}

// threadCPUs returns the CPUs thread tid may run on.
func threadCPUs(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
