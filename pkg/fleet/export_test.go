package fleet

import "net"

// SetListen makes s bind with listen instead of net.Listen: a test's,
// to play a name that resolves only after a while.
func SetListen(s *Server, listen func(network, addr string) (net.Listener, error)) {
	s.listen = listen
}
