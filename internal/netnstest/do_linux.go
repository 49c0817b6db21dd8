package netnstest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on an OS thread moved into namespace ns with setns, and moves
// the thread back afterwards (or lets it die if that fails). Sockets fn
// creates stay in ns for their whole life, so a listener made in Do serves
// from any goroutine. Goroutines fn starts do not run in ns, and /sys still
// shows the namespace it was mounted in; use Command for those.
func (e *Env) Do(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Locked and never unlocked on failure: the runtime then ends the
		// thread with the goroutine instead of reusing it in ns.
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open own namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(filepath.Join("/run/netns", ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open namespace %s: %w", ns, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter namespace %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// Listen opens a listener inside namespace ns.
func (e *Env) Listen(ns, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := e.Do(ns, func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// DialContext returns a dial function (for http.Transport.DialContext or a
// decorator such as nics.SpreadDialer) that creates each socket inside
// namespace ns. dial must connect from the calling goroutine: dial IP
// addresses, or names that SpreadDialer turns into addresses.
func (e *Env) DialContext(ns string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := e.Do(ns, func() error {
			var err error
			c, err = dial(ctx, network, addr)
			return err
		})
		return c, err
	}
}
