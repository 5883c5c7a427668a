// Package egress is the policy of the HTTP requests oamflow makes on behalf
// of an Application: workflow steps calling vela/http's #Do or op.#HTTPDo
// (KubeVela's request, webhook and notification steps) and Helm chart
// sources (repositories, chart URLs, OCI registries).
//
// Such a request goes where the Application's author says, from inside the
// controller's network. By default a Policy refuses to connect to loopback
// (127.0.0.0/8, ::1), link-local (169.254.0.0/16, fe80::/10: cloud metadata
// endpoints live there) and unspecified addresses, and to the controller's
// own listeners (its metrics, probe and webhook ports, on any of the host's
// addresses). The check runs when a connection is dialled (net.Dialer's
// Control), on the address actually connected to, so a host name resolving
// to a refused address (DNS rebinding) and a redirect to one are refused the
// same way. Proxies from the environment are not used: the policy would see
// only the proxy.
//
// Admins allow-list networks or host names (--outbound-allow) for targets
// that must be reached anyway, e.g. a loopback server in a local demo; the
// controller's own listeners stay refused.
//
// A Policy also bounds what one request may cost: its time (request.timeout,
// at most MaxTimeout) and the size of the response body read.
package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Flags of the controller that configure the policy, named in errors.
const (
	FlagAllow            = "outbound-allow"
	FlagMaxResponseBytes = "outbound-max-response-bytes"
	FlagMaxTimeout       = "outbound-max-timeout"
)

// Defaults of Config.
const (
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxTimeout       = 30 * time.Second
)

// Config is what the controller's flags say about outbound requests.
type Config struct {
	// Allow lists what may be reached although the policy refuses it by
	// default: networks (CIDRs), addresses, or host names (matched, case
	// insensitively, with the host of the URL before it is resolved).
	Allow []string
	// Listeners are the controller's own listen addresses (host:port, the
	// host possibly empty or unspecified: every address of this host).
	// They are refused even when allow-listed.
	Listeners []string
	// MaxResponseBytes bounds a response body (DefaultMaxResponseBytes
	// when 0).
	MaxResponseBytes int64
	// MaxTimeout bounds the time of one request, redirects and body
	// included (DefaultMaxTimeout when 0).
	MaxTimeout time.Duration
}

// Policy decides which addresses outbound requests may connect to. Build
// it with New; the zero Policy is not usable. It is safe for concurrent use.
type Policy struct {
	allowNets  []netip.Prefix
	allowHosts map[string]bool
	listeners  []netip.AddrPort
	// MaxResponseBytes bounds a response body.
	MaxResponseBytes int64
	// MaxTimeout bounds one request.
	MaxTimeout time.Duration
	// localAddrs returns the addresses of this host (net.InterfaceAddrs;
	// a seam for tests).
	localAddrs func() ([]netip.Addr, error)
}

// New returns the policy of c, or an error naming the flag of a value that
// does not parse.
func New(c Config) (*Policy, error) {
	p := &Policy{allowHosts: map[string]bool{}, MaxResponseBytes: c.MaxResponseBytes, MaxTimeout: c.MaxTimeout, localAddrs: interfaceAddrs}
	if p.MaxResponseBytes == 0 {
		p.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if p.MaxTimeout == 0 {
		p.MaxTimeout = DefaultMaxTimeout
	}
	var errs []error
	if p.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("--%s must not be negative, got %d", FlagMaxResponseBytes, p.MaxResponseBytes))
	}
	if p.MaxTimeout < 0 {
		errs = append(errs, fmt.Errorf("--%s must not be negative, got %s", FlagMaxTimeout, p.MaxTimeout))
	}
	for _, a := range c.Allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "://"):
			errs = append(errs, fmt.Errorf("--%s: %q is neither a CIDR, an address nor a host name", FlagAllow, a))
		case strings.Contains(a, "/"):
			pfx, err := netip.ParsePrefix(a)
			if err != nil {
				errs = append(errs, fmt.Errorf("--%s: %q is not a CIDR: %w", FlagAllow, a, err))
				continue
			}
			p.allowNets = append(p.allowNets, pfx.Masked())
		default:
			if ip, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
				ip = ip.Unmap()
				p.allowNets = append(p.allowNets, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			if strings.ContainsAny(a, ":@ ") {
				errs = append(errs, fmt.Errorf("--%s: %q is neither a CIDR, an address nor a host name", FlagAllow, a))
				continue
			}
			p.allowHosts[strings.ToLower(strings.TrimSuffix(a, "."))] = true
		}
	}
	for _, l := range c.Listeners {
		host, port, err := net.SplitHostPort(l)
		if err != nil {
			continue // "0" and other disabled listeners
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			continue
		}
		ip := netip.IPv4Unspecified()
		if host != "" && host != "localhost" {
			if ip, err = netip.ParseAddr(host); err != nil {
				// A host name: resolved once, now.
				addrs, rerr := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
				if rerr != nil {
					continue
				}
				for _, a := range addrs {
					p.listeners = append(p.listeners, netip.AddrPortFrom(a.Unmap(), uint16(n)))
				}
				continue
			}
		} else if host == "localhost" {
			ip = netip.MustParseAddr("127.0.0.1")
		}
		p.listeners = append(p.listeners, netip.AddrPortFrom(ip.Unmap(), uint16(n)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Default returns the policy of the zero Config: nothing allow-listed, no
// listeners known.
func Default() *Policy {
	p, _ := New(Config{}) // cannot fail
	return p
}

// DeniedError is the refusal of a connection by the policy. It is terminal
// (errclass): the same request is refused again.
type DeniedError struct {
	// Addr is the address the connection would have gone to.
	Addr netip.AddrPort
	// Reason says what Addr is ("a link-local address", …).
	Reason string
	// Listener is true for the controller's own listeners (which the
	// allow-list does not open).
	Listener bool
}

func (e *DeniedError) Error() string {
	if e.Listener {
		return fmt.Sprintf("%s is %s; oamflow does not connect to it", e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s is %s; oamflow does not connect to it unless an admin allow-lists it (--%s)", e.Addr, e.Reason, FlagAllow)
}

// Terminal implements errclass's terminal errors.
func (e *DeniedError) Terminal() bool { return true }

var linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")

// Check returns a *DeniedError when the policy refuses to connect to addr
// (host is the name dialled, before resolution, for the host allow-list;
// "" when unknown).
func (p *Policy) Check(host string, addr netip.AddrPort) error {
	ip := addr.Addr().Unmap()
	addr = netip.AddrPortFrom(ip, addr.Port())
	if err := p.checkListener(addr); err != nil {
		return err
	}
	var reason string
	switch {
	case ip.IsLoopback():
		reason = "a loopback address"
	case ip.IsLinkLocalUnicast() || linkLocal4.Contains(ip) || ip.IsLinkLocalMulticast():
		reason = "a link-local address"
	case ip.IsUnspecified():
		reason = "the unspecified address (this host)"
	default:
		return nil
	}
	if p.allowHosts[strings.ToLower(strings.TrimSuffix(host, "."))] {
		return nil
	}
	for _, n := range p.allowNets {
		if n.Contains(ip) {
			return nil
		}
	}
	return &DeniedError{Addr: addr, Reason: reason}
}

func (p *Policy) checkListener(addr netip.AddrPort) error {
	var local []netip.Addr
	for _, l := range p.listeners {
		if l.Port() != addr.Port() {
			continue
		}
		if l.Addr() == addr.Addr() || (addr.Addr().IsLoopback() && l.Addr().IsLoopback()) {
			return &DeniedError{Addr: addr, Reason: "one of the controller's own listeners", Listener: true}
		}
		if !l.Addr().IsUnspecified() {
			continue
		}
		if addr.Addr().IsLoopback() || addr.Addr().IsUnspecified() {
			return &DeniedError{Addr: addr, Reason: "one of the controller's own listeners", Listener: true}
		}
		if local == nil {
			local, _ = p.localAddrs()
		}
		for _, a := range local {
			if a == addr.Addr() {
				return &DeniedError{Addr: addr, Reason: "one of the controller's own listeners", Listener: true}
			}
		}
	}
	return nil
}

func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// DialContext dials like net.Dialer.DialContext, refusing what the policy
// refuses at the moment of connecting (every address tried).
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(address)
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, a string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(a)
			if err != nil {
				return fmt.Errorf("outbound policy: cannot parse address %q: %w", a, err)
			}
			return p.Check(host, ap)
		},
	}
	return d.DialContext(ctx, network, address)
}

// Transport returns a new HTTP transport dialling through the policy, with
// tc as its TLS settings (nil: the defaults) and no proxy.
func (p *Policy) Transport(tc *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.DialContext
	t.DialTLSContext = nil
	if tc != nil {
		t.TLSClientConfig = tc
	}
	return t
}

// Client returns an HTTP client of the policy's transport with TLS
// settings tc and a timeout: timeout when positive, else def, in both
// cases at most MaxTimeout.
func (p *Policy) Client(tc *tls.Config, timeout, def time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = def
	}
	if p.MaxTimeout > 0 && (timeout <= 0 || timeout > p.MaxTimeout) {
		timeout = p.MaxTimeout
	}
	return &http.Client{Transport: p.Transport(tc), Timeout: timeout}
}

// TooLargeError is a response body over MaxResponseBytes. It is terminal.
type TooLargeError struct {
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the response body is larger than %d bytes, the limit (--%s)", e.What, e.Limit, FlagMaxResponseBytes)
}

// Terminal implements errclass's terminal errors.
func (e *TooLargeError) Terminal() bool { return true }

// ReadBody reads r up to MaxResponseBytes (what names the request in the
// error of a larger body).
func (p *Policy) ReadBody(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, p.MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > p.MaxResponseBytes {
		return nil, &TooLargeError{What: what, Limit: p.MaxResponseBytes}
	}
	return b, nil
}
