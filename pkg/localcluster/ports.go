package localcluster

import (
	"fmt"
	"net"
	"strconv"
)

// loopback is the only address clusters listen on.
const loopback = "127.0.0.1"

// pickPorts returns n distinct TCP ports that are free on 127.0.0.1 at the
// time of the call, chosen by the kernel, none of them in exclude. All
// listeners are held until every port is chosen, so the ports differ; they
// are released before returning, so a port can be taken by someone else
// before it is used (the start then fails and names the component).
func pickPorts(n int, exclude map[int]bool) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 10*n+10 {
			return nil, fmt.Errorf("could not find %d free ports on %s", n, loopback)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("finding a free port on %s: %w", loopback, err)
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if exclude[p] {
			continue
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// checkPortFree returns an error when nothing can listen on 127.0.0.1:port.
func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on %s is in use: %w", port, loopback, err)
	}
	return l.Close()
}
