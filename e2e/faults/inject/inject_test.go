package inject

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	cases := []struct {
		reason, in string
		want       Config
		err        string
	}{
		{reason: "every key", in: "seed=7, write=0.25,watch=0.5,watch-delay=2s,stop=/tmp/x",
			want: Config{Seed: 7, Write: 0.25, Watch: 0.5, WatchDelay: 2 * time.Second, Stop: "/tmp/x"}},
		{reason: "defaults", in: "", want: Config{WatchDelay: 5 * time.Second}},
		{reason: "a fraction above 1", in: "write=2", err: "write: 2 is not between 0 and 1"},
		{reason: "an unknown key", in: "writes=0.1", err: "unknown key"},
		{reason: "no value", in: "seed", err: `"seed" is not key=value`},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.reason)
			continue
		}
		require.NoError(t, err, c.reason)
		assert.Equal(t, c.want, got, c.reason)
	}
}

func TestRoundTrip(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	stop := filepath.Join(t.TempDir(), "stop")
	var log bytes.Buffer
	c := &http.Client{Transport: New(Config{Seed: 1, Write: 1, Stop: stop}, &log).Wrap(http.DefaultTransport)}

	codes := map[int]int{}
	for range 40 {
		resp, err := c.Post(srv.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		codes[resp.StatusCode]++
		_ = resp.Body.Close()
	}
	assert.Len(t, codes, 3, "every write fails with 500, 429 or 409: %v", codes)
	assert.Zero(t, codes[http.StatusOK])
	assert.Positive(t, hits.Load(), "some failed writes were sent first")
	assert.Less(t, hits.Load(), int32(40), "some failed writes were never sent")
	assert.Equal(t, 40, strings.Count(log.String(), Logged), "each fault is logged")

	resp, err := c.Get(srv.URL + "/api/v1/namespaces/default/configmaps")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "reads pass")
	_ = resp.Body.Close()

	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	resp, err = c.Post(srv.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the stop file turns injection off")
	_ = resp.Body.Close()
}
