package enginetest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/sim"
)

func TestOptionsApplyInOrderOverTheTestDefaults(t *testing.T) {
	t.Parallel()
	o := engine.DefaultOptions()
	for _, opt := range []Option{Preset("tiny"), Sim(sim.DefaultCost), Faults("drop-done", "rate-limit=4"),
		Sched(func(c *sched.Config) { c.MaxRunningRequests = 3 }), With(func(o *engine.Options) { o.Seed = 7 })} {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.Preset != "tiny" || o.Executor != "sim" || o.SimCost != sim.DefaultCost || o.Sched.MaxRunningRequests != 3 || o.Seed != 7 {
		t.Errorf("options %+v", o)
	}
	if o.Faults == nil || !o.Faults.DropDone || o.Faults.RateLimit != 4 {
		t.Errorf("faults %+v, want drop-done and rate-limit=4", o.Faults)
	}
	healthy := engine.DefaultOptions()
	if err := Faults()(&healthy); err != nil || healthy.Faults != nil {
		t.Errorf("no fault specs: faults %+v, err %v; want none", healthy.Faults, err)
	}
	if err := Faults("no-such-fault")(&healthy); err == nil || !strings.Contains(err.Error(), "no-such-fault") {
		t.Errorf("an unknown fault: err %v, want one naming it", err)
	}
}

func TestAStartedEngineServesItsModelUntilStopped(t *testing.T) {
	t.Parallel()
	e := Start(t, Sim(sim.DefaultCost))
	if !strings.HasPrefix(e.BaseURL(), "http://127.0.0.1:") || strings.HasSuffix(e.BaseURL(), ":0/v1") {
		t.Fatalf("base URL %q, want a free port of 127.0.0.1", e.BaseURL())
	}
	if got := e.Sched.Config().MaxTotalTokens; got != Pool {
		t.Errorf("KV pool of %d tokens, want %d", got, Pool)
	}
	resp, err := http.Get(e.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != e.ModelName() {
		t.Fatalf("/v1/models: %+v (%v), want only %q", models, err, e.ModelName())
	}
	e.Stop()
	e.Stop() // the second, and the one at cleanup, do nothing
	if resp, err := http.Get(e.BaseURL() + "/models"); err == nil {
		resp.Body.Close()
		t.Errorf("after Stop: HTTP %d, want the connection refused", resp.StatusCode)
	}
}
