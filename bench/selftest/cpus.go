package selftest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseCPUList reads a Linux CPU list as taskset and cpuset write it
// ("0", "0-3", "0,2,4-7") into sorted, distinct CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= 1024 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range (e.g. 0-1,3)", s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// CheckCPUs says whether this process may run on every one of cpus (its
// own affinity: a CPU outside it, or one the machine lacks, cannot be
// pinned to).
func CheckCPUs(cpus []int) error {
	have, err := threadCPUs(0)
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if !slices.Contains(have, c) {
			return fmt.Errorf("CPU %d is not one this process may use (%s)", c, FormatCPUList(have))
		}
	}
	return nil
}

// FormatCPUList writes sorted CPU numbers as a CPU list ("0-3,6").
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
