package server

import (
	"fmt"
	"testing"
)

func TestServerInfoReportsTheCheckpointItWasGiven(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ck   *Checkpoint // nil: SetCheckpoint not called
		want map[string]any
	}{
		{"no checkpoint set: the model path's fp32 weights", nil,
			map[string]any{"checkpoint": "map[path:preset:nano]", "weight_dtype": "fp32", "weight_dtype_tensors": "0", "quantization": "<nil>", "device": "cpu"}},
		{"a preset in bf16: SGLang says no quantization", &Checkpoint{Preset: "nano", Seed: 5, WeightDType: "bf16", Rounded: 12},
			map[string]any{"checkpoint": "map[preset:nano seed:5]", "weight_dtype": "bf16", "weight_dtype_tensors": "12", "quantization": "<nil>"}},
		{"a folder in fp8", &Checkpoint{Path: "/ckpt/a", WeightDType: "fp8_e4m3", Rounded: 3},
			map[string]any{"checkpoint": "map[path:/ckpt/a]", "weight_dtype": "fp8_e4m3", "weight_dtype_tensors": "3", "quantization": "fp8"}},
		{"a preset in nvfp4", &Checkpoint{Preset: "tiny", Seed: 0, WeightDType: "nvfp4", Rounded: 9},
			map[string]any{"checkpoint": "map[preset:tiny seed:0]", "weight_dtype": "nvfp4", "weight_dtype_tensors": "9", "quantization": "modelopt_fp4"}},
		{"on a GPU: SGLang's device key", &Checkpoint{Preset: "nano", Device: "cuda", DeviceName: "cuda:0 NVIDIA H200 sm_90"},
			map[string]any{"checkpoint": "map[preset:nano seed:0]", "device": "cuda", "device_name": "cuda:0 NVIDIA H200 sm_90"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envConfig{opts: Options{ModelPath: "preset:nano"}})
			if c.ck != nil {
				e.srv.SetCheckpoint(*c.ck)
				if got := e.srv.Checkpoint(); got != *c.ck {
					t.Errorf("Checkpoint() = %+v, want %+v", got, *c.ck)
				}
			}
			code, b := e.get("/get_server_info")
			info := decode[map[string]any](t, b)
			for k, v := range c.want {
				if got, ok := info[k]; code != 200 || !ok || fmt.Sprint(got) != v {
					t.Errorf("/get_server_info %s = %v (present %v), want %v", k, got, ok, v)
				}
			}
		})
	}
}

func TestTheLaterCheckpointWins(t *testing.T) {
	t.Parallel()
	s := &Server{}
	s.SetCheckpoint(Checkpoint{Preset: "nano", WeightDType: "bf16"})
	s.SetCheckpoint(Checkpoint{Preset: "nano", WeightDType: "nvfp4"}) // the later wins
	if got := s.Checkpoint(); got.WeightDType != "nvfp4" {
		t.Fatalf("checkpoint %+v", got)
	}
}
