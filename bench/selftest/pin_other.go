//go:build !linux

package selftest

import "errors"

func pinProcess(pid int, cpus []int) error {
	return errors.New("pinning to CPUs needs Linux")
}

func threadCPUs(tid int) ([]int, error) { return nil, errors.New("CPU affinity needs Linux") }
