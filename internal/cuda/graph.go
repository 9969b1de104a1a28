package cuda

import (
	"errors"
	"runtime"
)

// Capture modes (CUstreamCaptureMode) and stream flags glmbench uses.
const (
	// captureModeGlobal is CU_STREAM_CAPTURE_MODE_GLOBAL: while the capture
	// is on, a potentially unsafe call (a synchronous copy, a sync, an
	// allocation) from any thread fails and invalidates it.
	captureModeGlobal = 0
	// streamDefault is CU_STREAM_DEFAULT: a blocking stream, which orders
	// with the legacy default stream's work (the synchronous copies).
	streamDefault = 0
)

// Stream is a stream created on a context (cuStreamCreate with
// CU_STREAM_DEFAULT): work on it runs after the legacy default stream's
// work queued before it and before the legacy stream's work queued after
// it, so a kernel on it sees a synchronous copy made before and a copy
// after sees its results. Only a created stream can be captured.
type Stream struct {
	ctx       *Context
	handle    uintptr
	capturing bool
}

// NewStream creates a stream on c.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{ctx: c}
	err := c.do(func() error { return c.drv.check("cuStreamCreate", c.drv.cuStreamCreate(&s.handle, streamDefault)) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Synchronize waits for the stream's work (cuStreamSynchronize).
func (s *Stream) Synchronize() error {
	return s.ctx.do(func() error { return s.ctx.drv.check("cuStreamSynchronize", s.ctx.drv.cuStreamSynchronize(s.handle)) })
}

// Destroy destroys the stream (cuStreamDestroy_v2) once its work is done.
func (s *Stream) Destroy() error {
	if s == nil || s.handle == 0 {
		return nil
	}
	err := s.ctx.do(func() error { return s.ctx.drv.check("cuStreamDestroy_v2", s.ctx.drv.cuStreamDestroy(s.handle)) })
	s.handle = 0
	return err
}

// BeginCapture starts capturing s (cuStreamBeginCapture_v2): the launches
// queued on it from here are recorded into a graph, not run, until
// EndCapture. The mode is CU_STREAM_CAPTURE_MODE_GLOBAL, so that a
// synchronous copy or a sync made during the capture, from any thread,
// fails (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) instead of slipping into
// the graph's time unseen: glmbench's goroutines move between OS threads,
// so the thread-local mode's check would depend on which thread each call
// ran on. A non-relaxed capture must end on the thread it began on, so
// BeginCapture locks the calling goroutine to its OS thread until
// EndCapture (the same goroutine must call it).
func (s *Stream) BeginCapture() error {
	if s.capturing {
		return errors.New("cuda: BeginCapture of a stream capturing already")
	}
	runtime.LockOSThread()
	err := s.ctx.do(func() error {
		return s.ctx.drv.check("cuStreamBeginCapture_v2", s.ctx.drv.cuStreamBeginCapture(s.handle, captureModeGlobal))
	})
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	s.capturing = true
	return nil
}

// EndCapture ends BeginCapture's capture and returns its graph
// (cuStreamEndCapture). A capture a forbidden call invalidated returns
// the driver's CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph.
func (s *Stream) EndCapture() (*Graph, error) {
	if !s.capturing {
		return nil, errors.New("cuda: EndCapture of a stream not capturing")
	}
	g := &Graph{ctx: s.ctx}
	err := s.ctx.do(func() error {
		return s.ctx.drv.check("cuStreamEndCapture", s.ctx.drv.cuStreamEndCapture(s.handle, &g.handle))
	})
	s.capturing = false
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Graph is a captured graph (CUgraph).
type Graph struct {
	ctx    *Context
	handle uintptr
}

// Instantiate makes an executable graph of g (cuGraphInstantiateWithFlags,
// CUDA 12's signature, no flags).
func (g *Graph) Instantiate() (*GraphExec, error) {
	x := &GraphExec{ctx: g.ctx}
	err := g.ctx.do(func() error {
		return g.ctx.drv.check("cuGraphInstantiateWithFlags", g.ctx.drv.cuGraphInstantiateWithFlags(&x.handle, g.handle, 0))
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// Destroy destroys the graph (cuGraphDestroy); its executable graphs stay.
func (g *Graph) Destroy() error {
	if g == nil || g.handle == 0 {
		return nil
	}
	err := g.ctx.do(func() error { return g.ctx.drv.check("cuGraphDestroy", g.ctx.drv.cuGraphDestroy(g.handle)) })
	g.handle = 0
	return err
}

// GraphExec is an executable graph (CUgraphExec).
type GraphExec struct {
	ctx    *Context
	handle uintptr
}

// Launch queues the graph's work on s (cuGraphLaunch), in order with s's
// other work: the kernels it captured, with the parameter values they
// were captured with.
func (x *GraphExec) Launch(s *Stream) error {
	return x.ctx.do(func() error { return x.ctx.drv.check("cuGraphLaunch", x.ctx.drv.cuGraphLaunch(x.handle, s.handle)) })
}

// Destroy destroys the executable graph (cuGraphExecDestroy).
func (x *GraphExec) Destroy() error {
	if x == nil || x.handle == 0 {
		return nil
	}
	err := x.ctx.do(func() error { return x.ctx.drv.check("cuGraphExecDestroy", x.ctx.drv.cuGraphExecDestroy(x.handle)) })
	x.handle = 0
	return err
}
