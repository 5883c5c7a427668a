package localcluster

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPickPorts(t *testing.T) {
	cases := map[string]struct {
		reason  string
		n       int
		exclude func(t *testing.T) map[int]bool
	}{
		"One":   {reason: "a single port", n: 1},
		"Six":   {reason: "one cluster's worth of ports", n: 6},
		"Sixty": {reason: "ten clusters' worth, all distinct", n: 60},
		"Exclude": {
			reason: "excluded ports are never returned",
			n:      6,
			exclude: func(t *testing.T) map[int]bool {
				ex := map[int]bool{}
				p, err := pickPorts(20, nil)
				require.NoError(t, err)
				for _, x := range p {
					ex[x] = true
				}
				return ex
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ex map[int]bool
			if tc.exclude != nil {
				ex = tc.exclude(t)
			}
			ports, err := pickPorts(tc.n, ex)
			require.NoError(t, err, tc.reason)
			require.Len(t, ports, tc.n, tc.reason)
			lo, hi := portRange()
			seen := map[int]bool{}
			for _, p := range ports {
				assert.True(t, p >= lo && p < hi, "port %d is below the ephemeral range [%d, …): outgoing connections never take it", p, hi)
				assert.False(t, seen[p], "port %d returned twice", p)
				seen[p] = true
				assert.False(t, ex[p], "excluded port %d returned", p)
				assert.NoError(t, checkPortFree(p), "picked ports are free on 127.0.0.1")
			}
		})
	}
}

func TestCheckPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	err = checkPortFree(port)
	require.Error(t, err, "a port someone listens on is not free")
	assert.Contains(t, err.Error(), strconv.Itoa(port), "the message names the port")
	require.NoError(t, l.Close())
	assert.NoError(t, checkPortFree(port), "free again once closed")
}
