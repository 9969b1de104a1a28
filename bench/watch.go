package bench

import (
	"context"
	"sync"
	"time"

	"github.com/glmbench/glmbench/reports/schema"
)

// Scraper takes one sample of the endpoint's own metrics
// (endpoints/scrape.Scraper); a failed scrape is a sample with its Error,
// never a Go error.
type Scraper interface {
	Scrape(ctx context.Context) schema.MetricsSample
}

// DefaultMetricsInterval is how often a phase's metrics are scraped while
// it runs, when Options.MetricsInterval is 0.
const DefaultMetricsInterval = 2 * time.Second

// Watcher is the scraping of one phase (or sweep point): a sample before
// it, one every interval during it, one after.
type Watcher struct {
	phase   string
	point   int
	s       Scraper
	stop    context.CancelFunc
	done    sync.WaitGroup
	mu      sync.Mutex
	samples []schema.MetricsSample
}

// Watch starts scraping the phase: it takes the sample before it at once
// (the phase's load has not begun), then one every interval until End. It
// returns nil when the run scrapes nothing. The runner watches its own
// phases; a distributed phase's coordinator watches the phase its agents
// run.
func (o *Options) Watch(ctx context.Context, phase string, point int) *Watcher {
	if o.Metrics == nil {
		return nil
	}
	w := &Watcher{phase: phase, point: point, s: o.Metrics}
	w.take(ctx, "before")
	every := o.MetricsInterval
	if every <= 0 {
		every = DefaultMetricsInterval
	}
	wctx, stop := context.WithCancel(ctx)
	w.stop = stop
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				w.take(wctx, "during")
			}
		}
	}()
	return w
}

// take scrapes once and keeps the sample, marked when.
func (w *Watcher) take(ctx context.Context, when string) {
	s := w.s.Scrape(ctx)
	if ctx.Err() != nil && s.Error != "" {
		return // cut off by the phase's end: not the server's failure
	}
	s.Phase, s.Point, s.When = w.phase, w.point, when
	w.mu.Lock()
	w.samples = append(w.samples, s)
	w.mu.Unlock()
}

// End stops the scraping during the phase, takes the sample after it (the
// requests have all ended, so the server's counters hold them all), and
// returns every sample, each with its time from start, the phase's clock.
// The after sample is taken even when ctx was cancelled (Ctrl-C): what the
// server counted up to then is kept with what the client measured.
func (w *Watcher) End(start time.Time) []schema.MetricsSample {
	if w == nil {
		return nil
	}
	w.stop()
	w.done.Wait()
	actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.take(actx, "after")
	t0 := float64(start.UnixNano()) / 1e9
	for i := range w.samples {
		if w.samples[i].Unix != 0 {
			w.samples[i].T = w.samples[i].Unix - t0
		}
	}
	return w.samples
}
