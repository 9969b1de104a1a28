package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/cudaexec/fakecuda"
)

// The engine on Device cuda without a GPU: internal/cuda loads the fake
// driver, NVRTC and cuBLAS of engine/cudaexec/fakecuda, so Start opens
// the device through the real bindings, the scheduler's goroutine drives
// the executor from its locked OS thread, and every kernel of a request is
// a cuLaunchKernel. The truth is the CPU engine's greedy tokens wherever
// its top-2 margin is clear.
func TestFakeCUDAEngineServesTheCPUsGreedyTokensAndShutsDown(t *testing.T) {
	fakecuda.Use(t) // the fake libraries, and a cubin cache of the test's own

	cpu := startDevice(t, deviceOptions(DeviceCPU))
	o := deviceOptions(DeviceCUDA)
	o.Sched.MaxTotalTokens = 4096 // host memory stands in for the device's
	dev, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	shut := false
	defer func() {
		if !shut {
			dev.Shutdown(context.Background())
		}
	}()
	if d := dev.Device(); d.Kind != DeviceCUDA || d.Name != "cuda:0 "+fakecuda.DeviceName+" sm_90" {
		t.Errorf("device %+v, want cuda on the fake GPU", d)
	}
	compared := 0
	for _, prompt := range []string{"Hello", "The quick brown fox jumps over the lazy dog."} {
		want, got := greedy(t, cpu, prompt, 4, 2), greedy(t, dev, prompt, 4, 2)
		if len(got.tokens) != len(want.tokens) {
			t.Errorf("%q: cuda gave %d tokens, the CPU %d", prompt, len(got.tokens), len(want.tokens))
			continue
		}
		for i := range want.tokens {
			// Within the 1e-4 the logits agree, a top-2 margin under 1e-3
			// may swap: from there on the two may rightly diverge.
			if want.margins[i] < 1e-3 {
				break
			}
			compared++
			if got.tokens[i] != want.tokens[i] {
				t.Errorf("%q: token %d is %s on the fake GPU, %s on the CPU (margin %.3g)", prompt, i, got.tokens[i], want.tokens[i], want.margins[i])
				break
			}
		}
	}
	if compared == 0 {
		t.Error("no token had a clear CPU margin to compare")
	}

	resp, err := http.Get(strings.TrimSuffix(dev.BaseURL(), "/v1") + "/get_server_info")
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	name, _ := info["device_name"].(string)
	if err != nil || info["device"] != "cuda" || !strings.Contains(name, fakecuda.DeviceName) {
		t.Errorf("/get_server_info device %v (%v), %v: want cuda on the fake GPU", info["device"], info["device_name"], err)
	}

	// Shutdown stops the scheduler and closes the executor and the device
	// (freeing every allocation, the module, the pinned memory, the context).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut = true
	if err := dev.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
