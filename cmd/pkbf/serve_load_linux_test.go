package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkbf/pkbf/internal/testkit"
)

// BenchmarkServeUploaders runs pkbf serve as a process, with its default
// flags, under clients that each upload a body just under --max-body
// slowly, over and over, and times a normal request (one key) meanwhile.
// It reports the server's peak memory (VmHWM) and the normal request's
// latency. Command:
//
//	go test -run '^$' -bench BenchmarkServeUploaders -benchtime 1x ./cmd/pkbf
func BenchmarkServeUploaders(b *testing.B) {
	for _, clients := range []int{150, 1000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			for range b.N {
				rss, p50, p99, ok, refused := serveUnderUploads(b, clients, 4*time.Second)
				b.ReportMetric(float64(rss)/(1<<20), "max-rss-MiB")
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(ok), "normal-ok")
				b.ReportMetric(float64(refused), "uploads-refused")
			}
		})
	}
}

// peakRSS reads a process's peak resident memory, in bytes.
func peakRSS(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skip("no /proc here:", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// serveUnderUploads runs the scenario for d and returns the server's peak
// memory, the normal requests' median and 99th percentile latency and
// count, and how many uploads the server refused.
func serveUnderUploads(tb testing.TB, clients int, d time.Duration) (rss int64, p50, p99 time.Duration, ok int, refused int64) {
	cmd, addr, _ := startServe(tb, exampleFilter)
	proc := cmd.Process
	const size = 8_000_000 // just under the default --max-body of 8 MiB
	chunk := bytes.Repeat([]byte("ssh-ed25519 AAAA\n"), (64<<10)/17)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var refusals atomic.Int64
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				fmt.Fprintf(conn, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
				answered := make(chan struct{})
				var refusedNow atomic.Bool
				go func() {
					defer close(answered)
					if line, _ := bufio.NewReader(conn).ReadString('\n'); strings.Contains(line, " 503 ") {
						refusals.Add(1)
						refusedNow.Store(true)
					}
				}()
				// The body, slowly: a chunk every 100 ms, held unfinished.
				for sent := 0; sent+len(chunk) < size; sent += len(chunk) {
					if _, err := conn.Write(chunk); err != nil {
						break
					}
					select {
					case <-stop:
						conn.Close()
						return
					case <-answered:
					case <-time.After(100 * time.Millisecond):
						continue
					}
					break
				}
				conn.Close()
				<-answered
				if refusedNow.Load() { // as the answer's Retry-After: 1 asks
					select {
					case <-stop:
						return
					case <-time.After(time.Second):
					}
				}
			}
		})
	}
	key := testkit.ReadFile(tb, key("p256.pub"))
	client := &http.Client{Timeout: 10 * time.Second}
	var lat []time.Duration
	deadline := time.Now().Add(d)
	time.Sleep(500 * time.Millisecond) // the uploads get going
	for time.Now().Before(deadline) {
		start := time.Now()
		resp, err := client.Post("http://"+addr+"/v1/check", "text/plain", bytes.NewReader(key))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				lat = append(lat, time.Since(start))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	rss = peakRSS(tb, proc.Pid)
	close(stop)
	wg.Wait()
	if len(lat) == 0 {
		tb.Fatal("no normal request succeeded")
	}
	slices.Sort(lat)
	return rss, lat[len(lat)/2], lat[len(lat)*99/100], len(lat), refusals.Load()
}
