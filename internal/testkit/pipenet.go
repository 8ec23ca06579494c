package testkit

import (
	"context"
	"net"
	"sync"
)

// PipeListener is a network in memory: a net.Listener whose connections
// are net.Pipe pairs, made by its Dial. Inside a testing/synctest bubble
// their reads, writes and deadlines block durably and run on the bubble's
// fake clock, so a test of timeouts and backoff over a real http.Server
// and http.Transport takes no real time.
type PipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// ListenPipes returns a new PipeListener.
func ListenPipes() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Dial connects to the listener: the one end is returned, the other is
// given to Accept. It has the signature of http.Transport.DialContext.
func (l *PipeListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept waits for the next Dial.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and Dial.
func (l *PipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr names the listener.
func (l *PipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipenet" }
