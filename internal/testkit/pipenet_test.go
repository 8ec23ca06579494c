package testkit

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// An HTTP server behind a PipeListener answers a client that dials it, and its
// timeouts run on the bubble's clock: a client that never sends its
// request is cut off after the server's 10 s, at once in real time.
func TestHTTPOverPipes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ListenPipes()
		srv := &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }),
			ReadHeaderTimeout: 10 * time.Second,
		}
		go srv.Serve(l)
		defer srv.Close()
		tr := &http.Transport{DialContext: l.Dial}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://pipenet/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hello" {
			t.Errorf("body %q, want hello", b)
		}

		conn, err := l.Dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		io.ReadAll(conn) // until the server closes it
		conn.Close()
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("a silent client was cut off after %v, want the server's 10 s", d)
		}
	})
}

func TestClosedListener(t *testing.T) {
	l := ListenPipes()
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	if _, err := l.Dial(context.Background(), "", ""); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Dial after Close: %v", err)
	}
}
