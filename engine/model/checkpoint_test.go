package model

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	w := Synth(cfg, 42)
	dir := t.TempDir()
	if err := Save(dir, cfg, w); err != nil {
		t.Fatal(err)
	}
	cfg2, w2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg2.HiddenSize != cfg.HiddenSize || cfg2.NGroup != cfg.NGroup {
		t.Fatalf("config changed: %+v", cfg2)
	}
	a, b := w.Tensors(), w2.Tensors()
	if len(a) != len(b) || len(a) != len(Manifest(cfg)) {
		t.Fatalf("%d tensors saved, %d loaded, %d in the manifest", len(a), len(b), len(Manifest(cfg)))
	}
	for name, ta := range a {
		tb := b[name]
		for i := range ta.Data {
			if ta.Data[i] != tb.Data[i] {
				t.Fatalf("%s[%d]: %v vs %v", name, i, ta.Data[i], tb.Data[i])
			}
		}
	}
}

func TestSynthIsDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	a, b, c := Synth(cfg, 1).Tensors(), Synth(cfg, 1).Tensors(), Synth(cfg, 2).Tensors()
	name := "model.layers.1.mlp.experts.3.up_proj.weight"
	if a[name].Data[5] != b[name].Data[5] || a[name].Data[5] == c[name].Data[5] {
		t.Fatal("synthetic weights do not follow the seed")
	}
}

func TestLoaderNamesTheFirstBadTensor(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	good := Synth(cfg, 1).Tensors()
	clone := func() map[string]Tensor {
		m := map[string]Tensor{}
		for k, v := range good {
			m[k] = v
		}
		return m
	}
	missing := clone()
	delete(missing, "model.layers.1.mlp.experts.7.down_proj.weight")
	if _, err := FromTensors(cfg, missing); err == nil || !strings.Contains(err.Error(), "lacks tensor model.layers.1.mlp.experts.7.down_proj.weight") {
		t.Fatalf("err = %v", err)
	}
	wrong := clone()
	wrong["model.layers.0.self_attn.kv_b_proj.weight"] = Tensor{Shape: []int{56, 15}, Data: make([]float32, 56*15)}
	if _, err := FromTensors(cfg, wrong); err == nil || !strings.Contains(err.Error(), "kv_b_proj.weight has shape [56 15], want [56 16]") {
		t.Fatalf("err = %v", err)
	}
	// A GLM-5 checkpoint repeats embed_tokens under the MTP layer: ignored.
	extra := clone()
	extra["model.layers.2.embed_tokens.weight"] = good["model.embed_tokens.weight"]
	if _, err := FromTensors(cfg, extra); err != nil {
		t.Fatal(err)
	}
}

func TestReadSafetensorsConvertsBF16AndChecksOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, hdr map[string]any, data []byte) string {
		h, _ := json.Marshal(hdr)
		p := filepath.Join(dir, name)
		f, _ := os.Create(p)
		binary.Write(f, binary.LittleEndian, uint64(len(h)))
		f.Write(h)
		f.Write(data)
		f.Close()
		return p
	}
	// 1.5 and -2 in bfloat16 are the top halves of their float32 bits.
	bf := func(v float32) []byte {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], uint16(math.Float32bits(v)>>16))
		return b[:]
	}
	data := append(bf(1.5), bf(-2)...)
	p := write("bf16.safetensors", map[string]any{"x": map[string]any{"dtype": "BF16", "shape": []int{2}, "data_offsets": []int{0, 4}}}, data)
	ts, err := ReadSafetensors(p)
	if err != nil || ts["x"].Data[0] != 1.5 || ts["x"].Data[1] != -2 {
		t.Fatalf("%v %v", ts, err)
	}
	bad := write("bad.safetensors", map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int{0, 16}}}, data)
	if _, err := ReadSafetensors(bad); err == nil || !strings.Contains(err.Error(), "tensor x") {
		t.Fatalf("offsets beyond the file accepted: %v", err)
	}
	i8 := write("i8.safetensors", map[string]any{"x": map[string]any{"dtype": "I8", "shape": []int{4}, "data_offsets": []int{0, 4}}}, data)
	if _, err := ReadSafetensors(i8); err == nil || !strings.Contains(err.Error(), "dtype I8") {
		t.Fatalf("I8 accepted: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nano", "tiny"} {
		cfg, err := Preset(name)
		if err != nil || cfg.Validate() != nil {
			t.Fatalf("%s: %v %v", name, err, cfg.Validate())
		}
	}
	cfg, _ := Preset("nano")
	cfg.ModelType = "llama"
	cfg.NGroup = 3
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "glm_moe_dsa") || !strings.Contains(err.Error(), "n_group 3") {
		t.Fatalf("err = %v", err)
	}
	cfg, _ = Preset("nano")
	cfg.RopeInterleave = false
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "rope_interleave false") {
		t.Fatalf("half-split rope accepted: %v", err)
	}
	if _, err := Preset("huge"); err == nil || !strings.Contains(err.Error(), "nano, tiny") {
		t.Fatalf("err = %v", err)
	}
}

func TestTinyHasAbout27MParameters(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	n := 0
	for _, s := range Manifest(cfg) {
		n += Numel(s.Shape)
	}
	if n < 26e6 || n > 29e6 {
		t.Fatalf("tiny has %d parameters", n)
	}
}
