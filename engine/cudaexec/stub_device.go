package cudaexec

import (
	"errors"
	"fmt"
)

// DeviceOptions choose and set up the GPU.
type DeviceOptions struct {
	// Ordinal is the CUDA device number (0: the first).
	Ordinal int
	// CacheDir keeps compiled cubins ("": the user cache dir's glmbench/cubin).
	CacheDir string
}

// ErrNoDevice is what OpenDevice's error wraps when there is no CUDA driver
// or no device: the case `--device auto` falls back from.
var ErrNoDevice = errors.New("no CUDA device")

// OpenDevice opens a GPU and returns the Ops that run kernels.cu on it.
// CONTRACT STUB (owner: the device author, who deletes this file and keeps the names).
func OpenDevice(o DeviceOptions) (Ops, error) {
	return nil, fmt.Errorf("%w: the CUDA path is not built yet", ErrNoDevice)
}
