package bench

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

func TestAReportCanBeRecomputedFromItsRecords(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.I%3 == 2 {
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 500, Body: "boom"}
		}
		return endpointstest.Behavior{Gap: time.Millisecond, TokensPerEvent: 2}
	})
	defer srv.Close()
	spec := Spec{Name: "p", N: 9, In: 32, Out: 6}
	run := RunPhase(context.Background(), testOptions(t, srv, "beef0001"), Plan{Spec: spec, Cal: Calibration{Chars: 80, PromptTokens: -1}})
	b, err := json.Marshal(run.Records)
	if err != nil {
		t.Fatal(err)
	}
	var back []schema.Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again := summary.Phase(spec.Name, spec.In, spec.Out, back, run.Result.Status)
	again.Concurrency, again.RequestRate, again.CalibratedInputLen = run.Result.Concurrency, run.Result.RequestRate, run.Result.CalibratedInputLen
	if !reflect.DeepEqual(again, run.Result) {
		t.Fatalf("recomputed from JSON records:\n%+v\nwant\n%+v", again, run.Result)
	}
}
