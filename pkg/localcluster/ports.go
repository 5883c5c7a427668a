package localcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// loopback is the only address clusters listen on.
const loopback = "127.0.0.1"

// pickPorts returns n distinct TCP ports that are free on 127.0.0.1 at the
// time of the call, none of them in exclude. They are drawn at random from
// below the kernel's ephemeral range (ip_local_port_range): a port the
// kernel hands out for outgoing connections (and for listening on port 0)
// can be taken by any client's connection between this call and the
// component's start, and was (etcd: "bind: address already in use" while
// another test's clusters were busy). All listeners are held until every
// port is chosen, so the ports differ; they are released before returning,
// so a port can still be taken by someone listening on it (the start then
// fails and names the component).
func pickPorts(n int, exclude map[int]bool) ([]int, error) {
	lo, hi := portRange()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	chosen := map[int]bool{}
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 20*n+100 {
			return nil, fmt.Errorf("could not find %d free ports on %s between %d and %d", n, loopback, lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		if exclude[p] || chosen[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(p)))
		if err != nil {
			continue // in use
		}
		held = append(held, l)
		chosen[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// portRange is where pickPorts draws from: the 12,000 ports below the
// start of the ephemeral range (32768 when it cannot be read), never below
// 1024.
func portRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				hi = v
			}
		}
	}
	return max(1024, hi-12000), hi
}

// checkPortFree returns an error when nothing can listen on 127.0.0.1:port.
func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on %s is in use: %w", port, loopback, err)
	}
	return l.Close()
}
