package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/server"
	"github.com/glmbench/glmbench/internal/badinput"
)

// setting is one value --server-config can write and a flag can set.
type setting struct {
	key  string // the SGLang server-arg name
	flag string
	// get reads the setting from the options.
	get func(*engine.Options) reflect.Value
}

// settings are sched.Config's fields by their JSON tags (the SGLang names,
// the flag the same name with dashes), so that a field added there is in the
// table, and the server's own host, port, served_model_name and
// weight_dtype.
func settings(t *testing.T) []setting {
	t.Helper()
	var out []setting
	typ := reflect.TypeFor[sched.Config]()
	for i := range typ.NumField() {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if key == "" || key == "-" {
			t.Fatalf("sched.Config.%s has no SGLang name", typ.Field(i).Name)
		}
		out = append(out, setting{key, strings.ReplaceAll(key, "_", "-"),
			func(o *engine.Options) reflect.Value { return reflect.ValueOf(&o.Sched).Elem().Field(i) }})
	}
	for _, s := range []struct{ key, field string }{{"host", "Host"}, {"port", "Port"}, {"served_model_name", "ServedModelName"}, {"weight_dtype", "WeightDType"}} {
		out = append(out, setting{s.key, strings.ReplaceAll(s.key, "_", "-"),
			func(o *engine.Options) reflect.Value { return reflect.ValueOf(o).Elem().FieldByName(s.field) }})
	}
	return out
}

// unlike is a value of v's type that differs from v.
func unlike(t *testing.T, key string, v reflect.Value) any {
	t.Helper()
	switch v.Kind() {
	case reflect.Int:
		return v.Int() + 7
	case reflect.Float64:
		return v.Float() + 0.25
	case reflect.Bool:
		return !v.Bool()
	case reflect.String:
		return "file-" + key
	}
	t.Fatalf("%s: a %s setting; give this test a value of that kind", key, v.Kind())
	return nil
}

// parse runs serve's flags over args and applies --server-config as Run
// does, returning the options and stderr.
func parse(t *testing.T, args ...string) (*Options, string) {
	t.Helper()
	var stderr bytes.Buffer
	f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &stderr}}
	var got *Options
	cmd := NewCmdServe(f, func(o *Options) error {
		got = o
		return o.applyServerConfig()
	})
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return got, stderr.String()
}

func TestAFlagGivenWinsOverTheServerConfigAndAFlagNotGivenTakesTheFile(t *testing.T) {
	t.Parallel()
	defaults := engine.DefaultOptions()
	all := settings(t)
	// The file sets every setting to a value unlike serve's default; each
	// flag, when given, restates the default, so a flag that lost to the
	// file, and a flag not given that kept its default, both show.
	file := map[string]any{}
	for _, s := range all {
		file[s.key] = unlike(t, s.key, s.get(&defaults))
	}
	b, _ := json.Marshal(file)
	path := filepath.Join(t.TempDir(), "server_args.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, given string, args ...string) {
		t.Helper()
		o, stderr := parse(t, append([]string{"--server-config", path}, args...)...)
		if stderr != "" {
			t.Errorf("stderr %q: every key of the file is one the engine uses", stderr)
		}
		for _, s := range all {
			want := file[s.key]
			if s.flag == given {
				want = s.get(&defaults).Interface()
			}
			if got := s.get(&o.Engine); fmt.Sprint(got.Interface()) != fmt.Sprint(want) {
				t.Errorf("%s = %v, want %v", s.key, got.Interface(), want)
			}
		}
	}
	t.Run("no flag given: every setting is the file's", func(t *testing.T) { check(t, "") })
	for _, s := range all {
		t.Run("--"+s.flag+" given wins over the file, the others are the file's", func(t *testing.T) {
			fl, _ := parse(t)
			if fl.flags.Lookup(s.flag) == nil {
				t.Fatalf("%s has no flag --%s", s.key, s.flag)
			}
			check(t, s.flag, fmt.Sprintf("--%s=%v", s.flag, s.get(&defaults).Interface()))
		})
	}
}

func TestFlagsTheServerConfigDoesNotSetKeepTheirValues(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server_args.json")
	if err := os.WriteFile(path, []byte(`{"page_size": 16, "tp_size": 8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o, stderr := parse(t, "--fault", "no-usage", "--server-config", path, "--fault", "stall=0.5",
		"--sim-step-overhead", "1.5ms", "--schedule-conservativeness", "0.1")
	// A repeatable flag is not given its values twice by being set back.
	if !slices.Equal(o.Faults, []string{"no-usage", "stall=0.5"}) {
		t.Errorf("faults %q", o.Faults)
	}
	e := o.Engine
	if e.SimCost.StepOverhead != 1500*time.Microsecond || e.Sched.ScheduleConservativeness != 0.1 || e.Sched.PageSize != 16 {
		t.Errorf("step overhead %v, conservativeness %v, page size %d", e.SimCost.StepOverhead, e.Sched.ScheduleConservativeness, e.Sched.PageSize)
	}
	if !strings.Contains(stderr, "ignored 1 keys the engine does not use: tp_size") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestTheFaultFlagsHelpNamesExactlyTheFaultKinds(t *testing.T) {
	t.Parallel()
	o, _ := parse(t)
	usage := o.flags.Lookup("fault").Usage
	list, ok := strings.CutPrefix(usage, "misbehave on purpose: ")
	list, _, cut := strings.Cut(list, " (repeatable")
	if !ok || !cut {
		t.Fatalf("usage %q", usage)
	}
	var kinds []string
	for _, form := range strings.Split(list, ", ") {
		k, _, _ := strings.Cut(form, "=")
		kinds = append(kinds, k)
	}
	if !slices.Equal(kinds, server.FaultKinds()) {
		t.Errorf("--fault's help names %v, the fault table %v", kinds, server.FaultKinds())
	}
	cmd := NewCmdServe(&cmdutil.Factory{IO: &cmdutil.IOStreams{}}, nil)
	for _, k := range server.FaultKinds() {
		if !strings.Contains(cmd.Long, "\n  "+k) {
			t.Errorf("serve --help has no line for the fault %s", k)
		}
	}
}

func TestBadSpeculativeSettingsAreRefusedBeforeTheServerStarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--speculative-algorithm", "EAGLE3"}, `speculative_algorithm "EAGLE3"`},
		{[]string{"--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "4"}, "speculative_eagle_topk 4: only 1 is supported"},
		{[]string{"--speculative-algorithm", "NEXTN", "--speculative-num-steps", "-2"}, "speculative_num_steps -2"},
		{[]string{"--executor", "sim", "--sim-accept-length", "0.5"}, "--sim-accept-length 0.5"},
	} {
		wantRefusedBeforeStart(t, tc.args, tc.want)
	}
}

func TestTheSpeculativeFlagsReachTheScheduler(t *testing.T) {
	t.Parallel()
	o, _ := parse(t, "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "5", "--speculative-eagle-topk", "1",
		"--speculative-num-draft-tokens", "6", "--sim-accept-length", "2.5")
	s := o.Engine.Sched
	if s.SpeculativeAlgorithm != "NEXTN" || s.SpeculativeNumSteps != 5 || s.SpeculativeEagleTopK != 1 || s.SpeculativeNumDraftTokens != 6 || o.Engine.SimAcceptLength != 2.5 {
		t.Fatalf("sched %+v, sim accept length %v", s, o.Engine.SimAcceptLength)
	}
	var stderr bytes.Buffer
	o.F.IO.ErrOut = &stderr
	if err := o.checkSpeculative(); err != nil || stderr.Len() != 0 {
		t.Fatalf("err %v, stderr %q", err, stderr.String())
	}
	// SGLang adjusts an inconsistent draft token count with a warning.
	o.Engine.Sched.SpeculativeNumDraftTokens = 9
	if err := o.checkSpeculative(); err != nil || !strings.Contains(stderr.String(), "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1 (6, not 9)") {
		t.Fatalf("err %v, stderr %q", err, stderr.String())
	}
}

func TestABadWeightDTypeIsRefusedBeforeTheServerStarts(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "server_args.json")
	if err := os.WriteFile(config, []byte(`{"weight_dtype": "fp16"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--weight-dtype", "int4"}, `--weight-dtype: weight dtype "int4": want one of fp32, bf16, fp8_e4m3, nvfp4`},
		{[]string{"--weight-dtype", "BF16"}, `weight dtype "BF16"`},
		{[]string{"--server-config", config}, `weight dtype "fp16"`},
		{[]string{"--executor", "sim", "--weight-dtype", "nvfp4"}, "--weight-dtype nvfp4: --executor sim has no weights to round"},
	} {
		wantRefusedBeforeStart(t, tc.args, tc.want)
	}
}

func TestServeWithAWeightDTypeServesRoundedWeightsAndSaysSo(t *testing.T) {
	t.Parallel()
	if o, _ := parse(t); o.Engine.WeightDType != "fp32" {
		t.Errorf("default --weight-dtype %q, want fp32", o.Engine.WeightDType)
	}
	var stdout, stderr cmdutil.SyncBuffer
	stop := serveSim(t, &stdout, &stderr, "--executor", "model", "--weight-dtype", "fp8_e4m3", "--seed", "3",
		"--max-total-tokens", "65536", "--ready-file", "-")
	r := await(t, "stdout", stdout.String)
	resp, err := http.Get(strings.TrimSuffix(r.BaseURL, "/v1") + "/get_server_info")
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if info["weight_dtype"] != "fp8_e4m3" || fmt.Sprint(info["checkpoint"]) != "map[preset:nano seed:3]" || info["quantization"] != "fp8" {
		t.Errorf("/get_server_info weight_dtype %v, checkpoint %v, quantization %v", info["weight_dtype"], info["checkpoint"], info["quantization"])
	}
	n, _ := info["weight_dtype_tensors"].(float64)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(", weights fp8_e4m3 (%d tensors rounded)", int(n)); n < 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// wantRefusedBeforeStart runs serve with args and fails t unless it is
// refused with one line of bad input saying want, before it starts: port
// -1 cannot be listened on, so a run that got past the check fails there
// instead.
func wantRefusedBeforeStart(t *testing.T, args []string, want string) {
	t.Helper()
	var stderr bytes.Buffer
	f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &stderr}}
	cmd := NewCmdServe(f, nil)
	cmd.SetArgs(append(args, "--port", "-1"))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") || stderr.Len() != 0 {
		t.Errorf("%v: err %v (stderr %q), want one line of bad input with %q", args, err, stderr.String(), want)
	}
}
