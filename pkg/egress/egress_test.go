package egress

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/errclass"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		reason string
		cfg    Config
		host   string
		addr   string
		want   string // "" allowed
	}{
		{reason: "a public address", addr: "93.184.216.34:443"},
		{reason: "a private address (in-cluster services)", addr: "10.96.0.10:80"},
		{reason: "cloud metadata", addr: "169.254.169.254:80", want: "169.254.169.254:80 is a link-local address; oamflow does not connect to it unless an admin allow-lists it (--outbound-allow)"},
		{reason: "IPv6 link-local", addr: "[fe80::1]:80", want: "is a link-local address"},
		{reason: "loopback", addr: "127.0.0.1:8080", want: "127.0.0.1:8080 is a loopback address"},
		{reason: "IPv6 loopback", addr: "[::1]:8080", want: "is a loopback address"},
		{reason: "IPv4-mapped loopback", addr: "[::ffff:127.0.0.1]:8080", want: "127.0.0.1:8080 is a loopback address"},
		{reason: "unspecified reaches this host", addr: "0.0.0.0:80", want: "is the unspecified address"},
		{reason: "allow-listed network", cfg: Config{Allow: []string{"127.0.0.0/8"}}, addr: "127.0.0.5:80"},
		{reason: "allow-listed address", cfg: Config{Allow: []string{"169.254.169.254"}}, addr: "169.254.169.254:80"},
		{reason: "allow-listed host name", cfg: Config{Allow: []string{"Registry.Local"}}, host: "registry.local", addr: "127.0.0.1:5000"},
		{reason: "another host name is not allow-listed", cfg: Config{Allow: []string{"registry.local"}}, host: "evil.example", addr: "127.0.0.1:5000", want: "is a loopback address"},
		{reason: "own listener on all interfaces, reached on loopback", cfg: Config{Allow: []string{"127.0.0.0/8"}, Listeners: []string{":8080"}}, addr: "127.0.0.1:8080",
			want: "127.0.0.1:8080 is one of the controller's own listeners; oamflow does not connect to it"},
		{reason: "own listener on all interfaces, reached on the pod's address", cfg: Config{Listeners: []string{":9443"}}, addr: "10.1.2.3:9443", want: "is one of the controller's own listeners"},
		{reason: "another port of the pod's address", cfg: Config{Listeners: []string{":9443"}}, addr: "10.1.2.3:9444"},
		{reason: "own listener on one address", cfg: Config{Listeners: []string{"10.1.2.3:8080"}}, addr: "10.1.2.3:8080", want: "is one of the controller's own listeners"},
		{reason: "disabled listener", cfg: Config{Listeners: []string{"0"}}, addr: "10.1.2.3:8080"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p, err := New(tc.cfg)
			require.NoError(t, err)
			p.localAddrs = func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil }
			err = p.Check(tc.host, netip.MustParseAddrPort(tc.addr))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var d *DeniedError
			assert.True(t, errors.As(err, &d))
			assert.True(t, errclass.IsTerminal(err), "a refusal is not retried")
		})
	}
}

func TestNewRefusesBadFlags(t *testing.T) {
	cases := []struct {
		reason string
		cfg    Config
		want   string
	}{
		{reason: "bad CIDR", cfg: Config{Allow: []string{"10.0.0.0/33"}}, want: `--outbound-allow: "10.0.0.0/33" is not a CIDR`},
		{reason: "URL instead of a host", cfg: Config{Allow: []string{"http://x"}}, want: `--outbound-allow: "http://x" is neither a CIDR, an address nor a host name`},
		{reason: "negative size", cfg: Config{MaxResponseBytes: -1}, want: "--outbound-max-response-bytes must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
