package pkbfhttp

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// readBody reads a request's body within the service's budget, or
// answers the error and reports false. Call release once done with the
// body (calling it again does nothing); the body's capacity is the room
// it holds. A body over the limit, or one the budget has no room for, is
// refused before a byte of it is read when its length is declared: no
// "100 Continue" goes to a client that asked, and the connection is
// closed rather than drained.
func (s *Service) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	n := r.ContentLength
	if n > s.limits.MaxBody {
		w.Header().Set("Connection", "close")
		s.httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is larger than %d bytes", n, s.limits.MaxBody))
		return nil, nil, false
	}
	s.receiving.Add(1)
	defer s.receiving.Add(-1)
	held := int64(0)
	release = func() { s.bodies.give(held); held = 0 }
	refuse := func(code int, msg string) ([]byte, func(), bool) {
		release()
		w.Header().Set("Connection", "close")
		if code == http.StatusServiceUnavailable {
			s.busy.Add(1)
			w.Header().Set("Retry-After", "1")
		}
		s.httpError(w, code, msg)
		return nil, nil, false
	}
	busy := fmt.Sprintf("the server holds as many request bodies as it may (%d bytes in all): try again shortly", s.limits.MaxBodyMemory)
	if n >= 0 { // the length is declared: take it all at once
		if !s.bodies.take(n, n > smallBody) {
			return refuse(http.StatusServiceUnavailable, busy)
		}
		held = n
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return refuse(http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		body = buf
	} else { // chunked: take the budget as the body grows, never past MaxBody
		lr := http.MaxBytesReader(w, r.Body, s.limits.MaxBody)
		var probe [1]byte
		for {
			if len(body) == cap(body) && held < s.limits.MaxBody {
				// Doubling keeps the copies linear in the body's size;
				// the budget is charged what is allocated.
				step := min(max(held, 64<<10), s.limits.MaxBody-held)
				if !s.bodies.take(step, held+step > smallBody) {
					return refuse(http.StatusServiceUnavailable, busy)
				}
				held += step
				body = append(make([]byte, 0, held), body...)
			}
			into := body[len(body):cap(body)]
			if len(into) == 0 { // MaxBody bytes read: one more is too many
				into = probe[:]
			}
			m, err := lr.Read(into)
			body = append(body, into[:m]...)
			if err == io.EOF {
				break
			}
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) || int64(len(body)) > s.limits.MaxBody {
				return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", s.limits.MaxBody))
			}
			if err != nil {
				return refuse(http.StatusBadRequest, "reading the request body: "+err.Error())
			}
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return refuse(http.StatusBadRequest, "the request body is empty: POST keys, certificates or requests")
	}
	return body, release, true
}

// budget is a number of bytes shared by all requests: a request takes
// its body's size before reading it, and its answer's as the answer is
// made, and gives them back when done. Requests holding more than
// smallBody bytes may take only largeShare of it, so that small requests
// find room while large uploads fill the rest; but never less than the
// most one request body may hold and a small answer (smallBody), so that
// such a request always fits once the others are done, and is never told
// to retry a request that could never succeed. (Where that most is more
// than largeShare of the budget, large requests may fill all of it.)
type budget struct {
	mu         sync.Mutex
	used, size int64
	large      int64
}

const (
	smallBody  = 64 << 10
	largeShare = 0.875
)

// newBudget returns a budget of size bytes for bodies of at most maxBody,
// and at least room for such a body and a small answer.
func newBudget(size, maxBody int64) *budget {
	size = max(size, maxBody+smallBody)
	return &budget{size: size, large: max(int64(float64(size)*largeShare), maxBody+smallBody)}
}

// take takes n bytes for a request, large if it holds more than smallBody
// bytes with them, and reports whether there was room.
func (b *budget) take(n int64, large bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.size
	if large {
		limit = b.large
	}
	if b.used+n > limit && n > 0 {
		return false
	}
	b.used += n
	return true
}

// most returns the most one request may hold.
func (b *budget) most() int64 { return b.large }

func (b *budget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// Listener wraps ln so that at most [Limits.MaxConns] connections it
// accepted are open at once. At the limit, the connection idle the
// longest is closed to let a new one in (a connection is idle from its
// acceptance until its first request, its TLS handshake included, and
// between requests); with none idle, the new one is
// refused at once (answered 503 over plain HTTP, closed over TLS, whose
// client could not read a plaintext answer), instead of waiting for a
// free one with its memory held. Near the limit, connections idle for
// [busyIdle] are closed as new ones arrive. Serve s through it, with the
// server [Service.Server] returns, which tells it which connections are
// idle.
func (s *Service) Listener(ln net.Listener) net.Listener {
	return &connLimiter{Listener: ln, s: s}
}

// busyIdle is how long a connection may stay idle while the connections
// open are near [Limits.MaxConns] (seven eighths of it): the server's
// idle timeout is longer.
const busyIdle = 5 * time.Second

type connLimiter struct {
	net.Listener
	s *Service
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		s, max := l.s, int64(l.s.limits.MaxConns)
		n := s.conns.Add(1)
		if n > max*7/8 {
			s.open.evictIdle(n > max)
			n = s.conns.Load()
		}
		if n <= max {
			cc := &countedConn{Conn: c, s: s}
			cc.idleSince.Store(time.Now().UnixNano()) // until its first request
			s.open.add(cc)
			return cc, nil
		}
		s.conns.Add(-1)
		s.connsRefused.Add(1)
		refuseConn(c, s.tlsSeen.Load())
	}
}

// tooManyConns is the whole answer to a connection over the limit.
var tooManyConns = func() string {
	body := `{"error":"too many connections: try again shortly"}` + "\n"
	return "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// refuseConn answers 503 on c and closes it, without waiting for the
// client: the write is small enough for the socket's buffer. Over TLS it
// only closes c: a TLS client would read plaintext as a broken handshake.
func refuseConn(c net.Conn, overTLS bool) {
	if !overTLS {
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		io.WriteString(c, tooManyConns)
	}
	c.Close()
}

// countedConn gives its place back when closed.
type countedConn struct {
	net.Conn
	s         *Service
	once      sync.Once
	idleSince atomic.Int64 // when it went idle, in Unix nanoseconds; 0 while not idle
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.s.open.remove(c)
		c.s.conns.Add(-1)
	})
	return c.Conn.Close()
}

// openConns are the connections a Listener holds, for eviction.
type openConns struct {
	mu    sync.Mutex
	conns map[*countedConn]struct{}
}

func (o *openConns) add(c *countedConn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conns == nil {
		o.conns = make(map[*countedConn]struct{})
	}
	o.conns[c] = struct{}{}
}

func (o *openConns) remove(c *countedConn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.conns, c)
}

// evictIdle closes the connections idle for busyIdle or more and, if
// full, the one idle the longest (if any is idle).
func (o *openConns) evictIdle(full bool) {
	now := time.Now().UnixNano()
	var victims []*countedConn
	var oldest *countedConn
	o.mu.Lock()
	for c := range o.conns {
		since := c.idleSince.Load()
		switch {
		case since == 0:
		case now-since >= int64(busyIdle):
			victims = append(victims, c)
		case oldest == nil || since < oldest.idleSince.Load():
			oldest = c
		}
	}
	o.mu.Unlock()
	if full && len(victims) == 0 && oldest != nil {
		victims = append(victims, oldest)
	}
	for _, c := range victims {
		c.s.connsEvicted.Add(1)
		c.Close()
	}
}

// connState tracks which connections are idle, for the Listener; the
// server calls it as each connection changes state (http.Server.ConnState).
func (s *Service) connState(c net.Conn, state http.ConnState) {
	if t, ok := c.(*tls.Conn); ok {
		s.tlsSeen.Store(true)
		c = t.NetConn()
	}
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	switch state {
	case http.StateNew: // idle since it was accepted
	case http.StateIdle:
		cc.idleSince.Store(time.Now().UnixNano())
	default:
		cc.idleSince.Store(0)
	}
}
