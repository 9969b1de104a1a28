package serve

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/cudaexec"
)

func TestTheDeviceFlagReachesTheEngineAndDefaultsToTheCPU(t *testing.T) {
	t.Parallel()
	if o, _ := parse(t); o.Engine.Device != engine.DeviceCPU {
		t.Errorf("default --device %q, want cpu", o.Engine.Device)
	}
	for _, d := range engine.DeviceNames {
		if o, _ := parse(t, "--device", d); o.Engine.Device != d {
			t.Errorf("--device %s gave %q", d, o.Engine.Device)
		}
	}
	if o, _ := parse(t); o.flags.Lookup("device").Usage != engine.DeviceHelp {
		t.Errorf("--device's help is not engine.DeviceHelp")
	}
}

func TestTheCUDAGraphFlagsReachTheEngineAsSGLangNamesThem(t *testing.T) {
	t.Parallel()
	// Graphs are on by default with SGLang's default largest batch (0
	// here); the two flags carry SGLang's names and meanings.
	if o, _ := parse(t); o.Engine.DisableCUDAGraph || o.Engine.CUDAGraphMaxBS != 0 {
		t.Errorf("defaults: disable %v, max bs %d; want graphs on and 0 (%d)", o.Engine.DisableCUDAGraph, o.Engine.CUDAGraphMaxBS, cudaexec.DefaultCUDAGraphMaxBS)
	}
	o, _ := parse(t, "--device", "cuda", "--disable-cuda-graph", "--cuda-graph-max-bs", "64")
	if !o.Engine.DisableCUDAGraph || o.Engine.CUDAGraphMaxBS != 64 {
		t.Errorf("--disable-cuda-graph --cuda-graph-max-bs 64 gave disable %v, max bs %d", o.Engine.DisableCUDAGraph, o.Engine.CUDAGraphMaxBS)
	}
	wantRefusedBeforeStart(t, []string{"--cuda-graph-max-bs", "-1"}, "--cuda-graph-max-bs -1: want a batch size")
}

func TestABadDeviceIsRefusedBeforeTheServerStarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "gpu"}, `--device: device "gpu": want one of cpu, cuda, auto, cpu-ops`},
		{[]string{"--device", "CUDA"}, `device "CUDA"`},
		{[]string{"--executor", "sim", "--device", "cuda"}, "--device cuda: --executor sim runs no model to put on a device"},
		{[]string{"--executor", "sim", "--device", "cpu-ops"}, "--device cpu-ops: --executor sim runs no model"},
		{[]string{"--executor", "sim", "--device", "auto"}, "--device auto: --executor sim runs no model"},
	} {
		wantRefusedBeforeStart(t, tc.args, tc.want)
	}
}

func TestServeOnCUDAWithoutAGPUIsRefusedInOneLineBeforeListening(t *testing.T) {
	t.Parallel()
	cmdtest.NoGPU(t)
	// wantRefusedBeforeStart's port -1 would say "listening on" had the
	// device been passed.
	wantRefusedBeforeStart(t, []string{"--device", "cuda"}, "device cuda: no CUDA device")
}

func TestServeOnAutoWithoutAGPUServesOnTheCPUAndSaysWhy(t *testing.T) {
	t.Parallel()
	cmdtest.NoGPU(t)
	var stdout, stderr cmdutil.SyncBuffer
	stop := serveSim(t, &stdout, &stderr, "--executor", "model", "--device", "auto", "--max-total-tokens", "65536", "--ready-file", "-")
	r := await(t, "stdout", stdout.String)
	checkListens(t, r, stderr.String())
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	log := stderr.String()
	if n := strings.Count(log, "glmbench: --device auto: no GPU opened ("); n != 1 {
		t.Errorf("%d fallback lines, want 1: %q", n, log)
	}
	if !strings.Contains(log, ", device cpu (cpu-") {
		t.Errorf("the serving line does not name the CPU: %q", log)
	}
}
