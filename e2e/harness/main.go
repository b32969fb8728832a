package harness

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a bench program's body with a context that SIGINT and SIGTERM cancel, and exits
// with status 1 and the error, prefixed with name, when it fails.
func Main(name string, run func(context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
