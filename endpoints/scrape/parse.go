package scrape

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// Parse decodes one exposition body, choosing the decoder by its
// Content-Type (text 0.0.4, OpenMetrics 1.0 or 0.0.1, delimited protobuf;
// no Content-Type is read as text), and maps its families onto the common
// names through Table. It fills Source, Values and Hists, or Error where the
// body is not an exposition or has no known series; never T, Unix, Phase,
// Point or When.
func Parse(body []byte, contentType string) schema.MetricsSample {
	fams, err := decode(body, contentType)
	if err != nil {
		return schema.MetricsSample{Error: err.Error()}
	}
	return mapFamilies(fams)
}

// expfmt's OpenMetrics decoder matches each line against the ABNF grammar,
// at a cost that grows faster than the line: measured here, 7 ms for a
// 300-byte line of twelve labels, 180 ms for a 512-byte label value, 23 s
// for 2,000 bytes (the text parser reads a whole vLLM exposition in 0.5
// ms). So glmbench asks for the text format (Accept), and reads
// OpenMetrics only from a server that insists and within these bounds.
const (
	omBodyLimit = 256 << 10
	omLineLimit = 512
)

// decode returns the body's families by name.
func decode(body []byte, contentType string) (map[string]*dto.MetricFamily, error) {
	h := map[string][]string{"Content-Type": {contentType}}
	format := expfmt.ResponseFormat(h)
	switch format.FormatType() {
	case expfmt.TypeOpenMetrics:
		if len(body) > omBodyLimit || longestLine(body) > omLineLimit {
			return nil, fmt.Errorf("OpenMetrics body over %d KiB or with a line over %d bytes: too slow for expfmt's OpenMetrics parser (the server should answer Accept: text/plain with the text format)", omBodyLimit>>10, omLineLimit)
		}
		fallthrough
	case expfmt.TypeProtoDelim:
		fams := map[string]*dto.MetricFamily{}
		dec := expfmt.NewDecoder(bytes.NewReader(body), format)
		for {
			mf := &dto.MetricFamily{}
			err := dec.Decode(mf)
			if errors.Is(err, io.EOF) {
				return fams, nil
			}
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", formatName(format), err)
			}
			if old, ok := fams[mf.GetName()]; ok {
				old.Metric = append(old.Metric, mf.Metric...)
			} else {
				fams[mf.GetName()] = mf
			}
		}
	}
	if contentType != "" {
		media, _, err := mime.ParseMediaType(contentType)
		if err == nil && media == "application/json" {
			// trtllm-serve's /metrics (serve/openai_server.py
			// get_iteration_stats).
			return nil, errors.New("a JSON body, not a Prometheus exposition (trtllm-serve's /metrics is its iteration statistics as JSON; it serves Prometheus text at /prometheus/metrics, and only with return_perf_metrics)")
		}
		if err != nil || media != "text/plain" {
			return nil, fmt.Errorf("not an exposition glmbench reads: Content-Type %q", text.Clip(contentType, 80, "…"))
		}
	}
	// The text format, 0.0.4 or unversioned. A TextParser must be made by
	// NewTextParser: its zero value has no validation scheme and fails.
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse text: %w", err)
	}
	return fams, nil
}

// mapFamilies reads the families through the table rows of the server they
// come from.
func mapFamilies(fams map[string]*dto.MetricFamily) schema.MetricsSample {
	source, prefixed := pickServer(fams)
	if source == "" {
		if prefixed == "" {
			return schema.MetricsSample{Error: fmt.Sprintf("no known series: %d families, none named %s", len(fams), prefixList())}
		}
		return schema.MetricsSample{Source: prefixed, Error: "no known series among the " + prefixed + " families"}
	}
	s := schema.MetricsSample{Source: source, Values: map[string]float64{}, Hists: map[string]schema.Histogram{}}
	done := map[string]bool{}
	for _, row := range Table {
		if row.Server != source || done[row.Common] {
			continue
		}
		if row.Kind == Histogram {
			if h, ok := readHistogram(fams[row.Name]); ok {
				s.Hists[row.Common] = h
				done[row.Common] = true
			}
			continue
		}
		v, ok := readValue(fams[row.Name], row.Kind, row.Mean)
		if !ok {
			continue
		}
		if row.Plus != "" {
			if p, ok := readValue(fams[row.Plus], row.Kind, row.Mean); ok {
				v += p
			}
		}
		if row.Per != "" {
			d, ok := readValue(fams[row.Per], Gauge, row.Mean)
			if !ok || d == 0 {
				continue
			}
			v /= d
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		s.Values[row.Common] = v
		done[row.Common] = true
	}
	if len(s.Values) == 0 {
		s.Values = nil
	}
	if len(s.Hists) == 0 {
		s.Hists = nil
	}
	return s
}

// pickServer returns the server with the most known series in fams (ties
// go to the earlier in Servers), or "" with the first server whose prefix
// some family carries where none has a known series.
func pickServer(fams map[string]*dto.MetricFamily) (source, prefixed string) {
	best := 0
	for _, srv := range Servers {
		n := 0
		for _, row := range Table {
			if row.Server == srv.Name && fams[row.Name] != nil {
				n++
			}
		}
		if n > best {
			source, best = srv.Name, n
		}
	}
	if source != "" {
		return source, ""
	}
	names := make([]string, 0, len(fams))
	for name := range fams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, srv := range Servers {
		for _, name := range names {
			if strings.HasPrefix(name, srv.Prefix) {
				return "", srv.Name
			}
		}
	}
	return "", ""
}

// prefixList is the known prefixes in words.
func prefixList() string {
	ps := make([]string, len(Servers))
	for i, srv := range Servers {
		ps[i] = srv.Prefix
	}
	return strings.Join(ps[:len(ps)-1], ", ") + " or " + ps[len(ps)-1]
}

// readValue is a counter's or gauge's value summed (or averaged, with mean)
// over the family's label sets; for HistogramSum, the sums of its
// histograms or summaries. ok is false where the family is absent or has
// no sample of that kind.
func readValue(mf *dto.MetricFamily, kind Kind, mean bool) (v float64, ok bool) {
	if mf == nil {
		return 0, false
	}
	n := 0
	for _, m := range mf.GetMetric() {
		var x float64
		switch {
		case kind == HistogramSum && m.GetHistogram() != nil:
			x = m.GetHistogram().GetSampleSum()
		case kind == HistogramSum && m.GetSummary() != nil:
			x = m.GetSummary().GetSampleSum()
		case kind == HistogramSum:
			continue
		case m.GetCounter() != nil:
			x = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			x = m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			x = m.GetUntyped().GetValue()
		default:
			continue
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		v += x
		n++
	}
	if n == 0 {
		return 0, false
	}
	if mean {
		v /= float64(n)
	}
	return v, true
}

// readHistogram merges the family's histograms by upper bound: at each
// bound of any of them, the sum over label sets of each one's cumulative
// count at its highest bound not above it (so label sets with different
// bounds merge into counts that still only grow). The +Inf bucket is kept
// as Count, not in LE (JSON has no +Inf). ok is false where the family has
// no histogram.
func readHistogram(mf *dto.MetricFamily) (schema.Histogram, bool) {
	if mf == nil {
		return schema.Histogram{}, false
	}
	type bucket struct{ le, n float64 }
	var series [][]bucket
	var out schema.Histogram
	bounds := map[float64]bool{}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		var bs []bucket
		count, inf := h.GetSampleCountFloat(), math.NaN()
		if count == 0 {
			count = float64(h.GetSampleCount())
		}
		for _, b := range h.GetBucket() {
			n := b.GetCumulativeCountFloat()
			if n == 0 {
				n = float64(b.GetCumulativeCount())
			}
			le := b.GetUpperBound()
			switch {
			case math.IsNaN(le) || math.IsNaN(n) || math.IsInf(n, 0) || math.IsInf(le, -1):
			case math.IsInf(le, 1):
				inf = n
			default:
				bs = append(bs, bucket{le, n})
				bounds[le] = true
			}
		}
		sum := h.GetSampleSum()
		if math.IsNaN(sum) || math.IsInf(sum, 0) || math.IsNaN(count) || math.IsInf(count, 0) {
			continue
		}
		slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
		// The +Inf bucket is the count of all observations; where it is
		// missing, _count is.
		if !math.IsNaN(inf) {
			count = inf
		}
		out.Sum += sum
		out.Count += count
		series = append(series, bs)
	}
	if len(series) == 0 {
		return schema.Histogram{}, false
	}
	for le := range bounds {
		out.LE = append(out.LE, le)
	}
	sort.Float64s(out.LE)
	out.Counts = make([]float64, len(out.LE))
	for _, bs := range series {
		j, at := 0, 0.0
		for i, le := range out.LE {
			for j < len(bs) && bs[j].le <= le {
				at = bs[j].n
				j++
			}
			out.Counts[i] += at
		}
	}
	if out.LE == nil {
		out.LE, out.Counts = []float64{}, []float64{}
	}
	return out, true
}

// longestLine is the length of b's longest line.
func longestLine(b []byte) int {
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		n = max(n, i)
		b = b[min(i+1, len(b)):]
	}
	return n
}

// formatName names a decoder's format in an error.
func formatName(f expfmt.Format) string {
	if f.FormatType() == expfmt.TypeOpenMetrics {
		return "openmetrics"
	}
	return "protobuf"
}
