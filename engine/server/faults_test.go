package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFaultsMakeTheServerMisbehaveOnPurpose(t *testing.T) {
	t.Parallel()
	stream := map[string]any{"prompt": "hello", "max_tokens": 8, "stream": true, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true}}
	echo := map[string]any{"prompt": "hello", "max_tokens": 1, "echo": true, "logprobs": 1}

	t.Run("echo=500 refuses echo requests only", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envConfig{opts: Options{Faults: &Faults{Echo: "500"}}})
		code, _, body := e.post("/v1/completions", echo)
		if code != 500 || !strings.Contains(string(body), "line_errors") {
			t.Fatalf("%d %s", code, body)
		}
		if code, _, _ := e.post("/v1/completions", map[string]any{"prompt": "hello", "max_tokens": 2}); code != 200 {
			t.Fatalf("plain generation: %d", code)
		}
	})
	t.Run("echo=ignored gives no prompt logprobs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envConfig{opts: Options{Faults: &Faults{Echo: "ignored"}}})
		code, _, body := e.post("/v1/completions", echo)
		var r struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs struct {
					Tokens []string `json:"tokens"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if code != 200 || json.Unmarshal(body, &r) != nil || len(r.Choices[0].Logprobs.Tokens) != 1 || strings.HasPrefix(r.Choices[0].Text, "hello") {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("drop-done and no-usage", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envConfig{opts: Options{Faults: &Faults{DropDone: true, NoUsage: true}}})
		resp := e.open(context.Background(), http.MethodPost, "/v1/completions", stream)
		defer resp.Body.Close()
		events := newSSEReader(t, resp.Body).all()
		for _, ev := range events {
			if ev == "[DONE]" || strings.Contains(ev, `"usage"`) {
				t.Fatalf("event %s despite the faults", ev)
			}
		}
		if len(events) < 2 {
			t.Fatalf("events %v", events)
		}
		code, _, body := e.post("/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_tokens": 2})
		if code != 200 || !strings.Contains(string(body), `"usage":null`) {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("stall=1 stops every stream after its first token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envConfig{opts: Options{Faults: &Faults{Stall: 1}}})
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		resp := e.open(ctx, http.MethodPost, "/v1/completions", stream)
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		first, _ := br.ReadString('\n')
		start := time.Now()
		var rest []string
		for { // until the context ends the request
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			if strings.HasPrefix(line, "data:") {
				rest = append(rest, line)
			}
		}
		if !strings.Contains(first, `"text"`) || len(rest) != 0 || time.Since(start) < 400*time.Millisecond {
			t.Fatalf("first %q, then %v after %v", first, rest, time.Since(start))
		}
	})
	t.Run("stall shares are exact", func(t *testing.T) {
		t.Parallel()
		f := &Faults{Stall: 0.25}
		n := 0
		for range 100 {
			if f.stallNext() {
				n++
			}
		}
		if n != 25 {
			t.Fatalf("%d of 100 streams stall", n)
		}
	})
	t.Run("rate-limit=1 answers 429 beyond one request in flight", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envConfig{opts: Options{Faults: &Faults{RateLimit: 1, Stall: 1}}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		held := e.open(ctx, http.MethodPost, "/v1/completions", stream) // stalls, holding its slot
		defer held.Body.Close()
		newSSEReader(t, held.Body).next()
		code, h, _ := e.post("/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1})
		if code != 429 || h.Get("Retry-After") == "" {
			t.Fatalf("%d %v", code, h)
		}
	})
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	var f Faults
	for _, ok := range []string{"echo=500", "echo=ignored", "stall=0.5", "drop-done", "no-usage", "rate-limit=3"} {
		if err := ParseFault(ok, &f); err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
	}
	if f.Echo != "ignored" || f.Stall != 0.5 || !f.DropDone || !f.NoUsage || f.RateLimit != 3 {
		t.Fatalf("%s %v %v %v %d", f.Echo, f.Stall, f.DropDone, f.NoUsage, f.RateLimit)
	}
	for _, bad := range []string{"echo", "echo=404", "stall=2", "stall=x", "stall=NaN", "drop-done=1", "rate-limit=0", "explode"} {
		if err := ParseFault(bad, &f); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}

// The help, the synopsis and the unknown-kind error are made from the table
// of kinds, so each names exactly the kinds ParseFault accepts, in order.
func TestTheFaultHelpAndErrorsNameExactlyTheTablesKinds(t *testing.T) {
	t.Parallel()
	kinds := FaultKinds()
	if len(kinds) != len(faultKinds) {
		t.Fatalf("FaultKinds %v for %d rows", kinds, len(faultKinds))
	}
	kindOf := func(form string) string { k, _, _ := strings.Cut(form, "="); return k }

	var helped []string
	column := -1
	for _, line := range strings.Split(FaultHelp, "\n") {
		form, _, _ := strings.Cut(line, " ")
		helped = append(helped, kindOf(form))
		// Every line's explanation starts in the same column.
		at := len(line) - len(strings.TrimLeft(line[len(form):], " "))
		if column >= 0 && at != column {
			t.Errorf("help line %q starts its text at column %d, the others at %d", line, at, column)
		}
		column = at
	}
	if !slices.Equal(helped, kinds) {
		t.Errorf("the help names %v, the table %v", helped, kinds)
	}

	var synopsis []string
	for _, form := range strings.Split(FaultSynopsis, ", ") {
		synopsis = append(synopsis, kindOf(form))
	}
	if !slices.Equal(synopsis, kinds) {
		t.Errorf("the synopsis names %v, the table %v", synopsis, kinds)
	}

	err := ParseFault("explode", &Faults{})
	if err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	_, list, _ := strings.Cut(err.Error(), "unknown kind (")
	list, closed := strings.CutSuffix(list, ")")
	if !closed || !slices.Equal(strings.Split(list, ", "), kinds) {
		t.Errorf("the error %q does not list the table's kinds %v", err, kinds)
	}

	// Each kind is one ParseFault knows: a value it refuses is named by kind,
	// never answered as an unknown kind.
	for _, k := range kinds {
		err := ParseFault(k+"=no-such-value", &Faults{})
		if err == nil || strings.Contains(err.Error(), "unknown kind") || !strings.Contains(err.Error(), k+" takes ") {
			t.Errorf("%s=no-such-value: %v", k, err)
		}
	}
}

func TestARefusedFaultLeavesTheFaultsAsTheyWere(t *testing.T) {
	t.Parallel()
	f := Faults{Echo: "500", Stall: 0.5, DropDone: true, NoUsage: true, RateLimit: 2}
	for _, bad := range []string{"echo=404", "stall=2", "drop-done=0", "no-usage=false", "rate-limit=0"} {
		if err := ParseFault(bad, &f); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
	if f.Echo != "500" || f.Stall != 0.5 || !f.DropDone || !f.NoUsage || f.RateLimit != 2 {
		t.Fatalf("after refused faults: %s %v %v %v %d", f.Echo, f.Stall, f.DropDone, f.NoUsage, f.RateLimit)
	}
}
