package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// InterruptContext returns a context that a first interrupt (Ctrl-C) or
// SIGTERM cancels, with the signal as its cause. The signals have their
// default action again before the context ends, so that a second one ends
// the process at once, even while it waits on something that does not
// heed the context. Call stop when done.
func InterruptContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			cancel(fmt.Errorf("%v signal received", sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(context.Canceled) }
}
