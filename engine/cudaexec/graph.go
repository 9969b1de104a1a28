package cudaexec

import (
	"errors"
	"fmt"

	"github.com/glmbench/glmbench/internal/cuda"
)

// Graph is a recorded sequence of an Ops' kernel launches (a CUDA graph on
// the GPU), made by a Grapher and replayed by it. What it is, is the
// Grapher's business.
type Graph interface{}

// Grapher is what an Ops implements when it can record the ops queued
// on it into a graph and replay them: the GPU's (OpenDevice), where a
// replay is one cuGraphLaunch instead of hundreds of launches from Go. The
// host's and the emulator's Ops do not implement it, and the Executor
// launches directly there.
//
// A graph holds every argument as it was when captured: the addresses of
// the tensors, the shapes and the scalars. Whoever replays one keeps every
// allocation it reads or writes alive and in place, and changes only the
// contents (uploaded between replays, outside the graph).
type Grapher interface {
	// BeginCapture makes the ops queued from here be recorded, not run,
	// until EndCapture: kernel launches only (an upload, a download, an
	// allocation or a free during the capture fails it, as the driver
	// refuses them). The goroutine that began it ends it.
	BeginCapture()
	// EndCapture ends the capture and returns its graph (nil after an error).
	EndCapture() Graph
	// Replay queues g's launches, in order with the ops around it.
	Replay(g Graph)
	// DestroyGraph releases g.
	DestroyGraph(g Graph)
	// GraphScratch switches the Ops' own scratch (the indexer's scores,
	// the MLPs' intermediates) to a set kept for graphs (on) or back to
	// the one of direct launches (off), so that a direct pass growing its
	// scratch never moves what a graph uses. The graph set is freed only
	// by Close.
	GraphScratch(on bool)
	// GraphScratchMoves counts the reallocations of the graph set: a graph
	// captured before the count changed reads freed memory.
	GraphScratchMoves() int
}

// graphCaller is a Caller that records its launches into graphs (the GPU
// device's); NewLaunchOps over one returns a Grapher.
type graphCaller interface {
	Caller
	beginCapture()
	endCapture() Graph
	replay(g Graph)
	destroyGraph(g Graph)
}

// graphOps is NewLaunchOps' Ops over a graphCaller: launchOps and the
// Grapher methods.
type graphOps struct {
	*launchOps
	gc graphCaller
}

func (o *graphOps) BeginCapture()        { o.gc.beginCapture() }
func (o *graphOps) EndCapture() Graph    { return o.gc.endCapture() }
func (o *graphOps) Replay(g Graph)       { o.gc.replay(g) }
func (o *graphOps) DestroyGraph(g Graph) { o.gc.destroyGraph(g) }

func (o *graphOps) GraphScratch(on bool) {
	if on == o.inGraph {
		return
	}
	o.direct, o.scratchSet = o.scratchSet, o.direct
	o.inGraph = on
}

func (o *graphOps) GraphScratchMoves() int { return o.graphMoves }

// gpuGraph is a captured graph's executable form on the device.
type gpuGraph struct{ exec *cuda.GraphExec }

// beginCapture starts capturing the device's stream.
func (d *gpuDevice) beginCapture() {
	if d.err != nil {
		return
	}
	if d.capturing {
		d.fail(errors.New("cudaexec: BeginCapture during a capture"))
		return
	}
	if err := d.stream.BeginCapture(); err != nil {
		d.fail(err)
		return
	}
	d.capturing = true
}

// endCapture ends the capture and instantiates its graph.
func (d *gpuDevice) endCapture() Graph {
	if !d.capturing {
		d.fail(errors.New("cudaexec: EndCapture without BeginCapture"))
		return nil
	}
	d.capturing = false
	g, err := d.stream.EndCapture()
	if err != nil {
		d.fail(fmt.Errorf("cudaexec: capturing a graph: %w", err))
		return nil
	}
	x, err := g.Instantiate()
	if derr := g.Destroy(); err == nil {
		err = derr
	}
	if err != nil {
		if x != nil {
			x.Destroy()
		}
		d.fail(err)
		return nil
	}
	gg := &gpuGraph{exec: x}
	if d.graphs == nil {
		d.graphs = map[*gpuGraph]struct{}{}
	}
	d.graphs[gg] = struct{}{}
	return gg
}

// graph is g as this device's graph.
func (d *gpuDevice) graph(g Graph) *gpuGraph {
	gg, ok := g.(*gpuGraph)
	if !ok || gg == nil {
		panic(fmt.Sprintf("cudaexec: a %T is not a graph of this device", g))
	}
	if _, live := d.graphs[gg]; !live {
		panic("cudaexec: a graph destroyed, or not made here")
	}
	return gg
}

// replay launches g on the device's stream.
func (d *gpuDevice) replay(g Graph) {
	if d.err != nil {
		return
	}
	gg := d.graph(g)
	d.fail(gg.exec.Launch(d.stream))
}

// destroyGraph destroys g.
func (d *gpuDevice) destroyGraph(g Graph) {
	gg := d.graph(g)
	delete(d.graphs, gg)
	if !d.closed {
		d.fail(gg.exec.Destroy())
	}
}
