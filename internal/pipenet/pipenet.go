// Package pipenet is a network in memory for tests: a net.Listener whose
// connections are net.Pipe pairs. Inside a testing/synctest bubble their
// reads, writes and deadlines block durably and run on the bubble's fake
// clock, so a test of timeouts and backoff over a real http.Server and
// http.Transport takes no real time.
package pipenet

import (
	"context"
	"net"
	"sync"
)

// Listener is a net.Listener of in-memory connections, made by its Dial.
type Listener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// Listen returns a new Listener.
func Listen() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Dial connects to the listener: the one end is returned, the other is
// given to Accept. It has the signature of http.Transport.DialContext.
func (l *Listener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
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
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and Dial.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr names the listener.
func (l *Listener) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipenet" }
