package summary

import "github.com/glmbench/glmbench/reports/schema"

// The rule that calls a stream buffered. A record dates each content event
// by the kernel's receive time of the read that delivered it (rxstamp;
// time.Now where no stamp is kept), so the events of one read share one
// time exactly, and the distinct times of a record's events are the reads
// that delivered them: its arrivals. A proxy that buffers the stream
// (nginx with proxy_buffering on, its default, forwards a proxy_buffers
// block of 4 or 8 KiB at a time; a gateway that holds the whole answer
// forwards it once) delivers tens of chat chunks in every read, or all of
// them in one; a server streaming to glmbench directly delivers about one
// a read (the built-in engine's decode_medium, 512 streams at once: 1.07
// events a read at most, measured; each personality, a token a
// millisecond: 1.07 at most). A client that falls behind coalesces
// several events into one read now and then, but most of its reads still
// carry one, so the rule asks what most reads carried (at least half of
// them 8 events or more), not the mean, which a few late reads can lift.
// Several tokens packed into one event (speculative decoding, SGLang's
// stream_interval) are one event: they do not count.
const (
	// BufferedMinEvents is the fewest content events a stream needs to be
	// judged: a short answer may fit one read of any server.
	BufferedMinEvents = 16
	// BufferedPerRead is the content events from which a read is a
	// block: a 4 KiB block holds 12 to 30 chat chunks of 130 to 330 bytes.
	BufferedPerRead = 8
	// BufferedMinSpan is the seconds from t0 to the last content event
	// below which a stream is not judged: a stream over that soon hides at
	// most that long in any buffer, and a server that writes every token
	// at once (a fake without a gap between tokens) is told from a
	// buffering proxy by nothing in its times; under a loaded test run
	// such a fake's whole stream came at once 21 ms after t0 (measured).
	// At 100 ms it still judges 16 tokens of a server streaming 160 a
	// second, and any longer stream of a faster one.
	BufferedMinSpan = 0.1
)

// Arrivals counts the distinct times among events (seconds from t0, in
// the order they came): the reads that delivered them.
func Arrivals(events []float64) int {
	n := 0
	eachRead(events, func(int) { n++ })
	return n
}

// eachRead calls f with the size of each run of equal times in events:
// the content events of each read, in order.
func eachRead(events []float64, f func(size int)) {
	for k := 0; k < len(events); {
		j := k + 1
		for j < len(events) && events[j] == events[k] {
			j++
		}
		f(j - k)
		k = j
	}
}

// BufferedEvents reports whether content events timed events (seconds
// from t0) arrived buffered by the rule above: at least BufferedMinEvents
// of them, the last at least BufferedMinSpan after t0, and at least half
// of the reads that delivered them BufferedPerRead events or more each.
func BufferedEvents(events []float64) bool {
	n := len(events)
	if n < BufferedMinEvents || events[n-1] < BufferedMinSpan {
		return false
	}
	reads, blocks := 0, 0
	eachRead(events, func(size int) {
		reads++
		if size >= BufferedPerRead {
			blocks++
		}
	})
	return 2*blocks >= reads
}

// Buffered reports whether the record's content events arrived buffered
// (BufferedEvents): its TTFT then is the time to fill a proxy's block, or
// the whole answer, and its ITL mostly 0, neither of them the server's.
func Buffered(rec *schema.Record) bool { return BufferedEvents(rec.Events) }
