package helm

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/egress"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// ociRegistry is an in-process OCI registry (go-containerregistry's
// pkg/registry) behind httptest, optionally requiring basic auth. It is
// plain HTTP: Helm's resolver (containerd's) always speaks plain HTTP to
// 127.0.0.1, so a TLS registry cannot be reached on the loopback address.
type ociRegistry struct {
	*httptest.Server
	host string // host:port, as in oci://host/...
}

func newOCIRegistry(t testing.TB, user, pass string) *ociRegistry {
	t.Helper()
	reg := registry.New(registry.Logger(nopLogger()))
	h := reg
	if user != "" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			reg.ServeHTTP(w, r)
		})
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return &ociRegistry{Server: s, host: strings.TrimPrefix(s.URL, "http://")}
}

// push uploads a packaged chart as oci://host/charts/<name>:<version>.
func (o *ociRegistry) push(t testing.TB, data []byte, creds *credentials) string {
	t.Helper()
	md := chartMeta(t, data)
	f := NewFetcher(nil, WithPlainHTTPRegistries())
	rc, cleanup, err := f.registryClient(o.host+"/charts/"+md.Name, creds)
	require.NoError(t, err)
	defer cleanup()
	ref := fmt.Sprintf("%s/charts/%s:%s", o.host, md.Name, md.Version)
	_, err = rc.Push(data, ref)
	require.NoError(t, err)
	return "oci://" + o.host + "/charts/" + md.Name
}

func TestFetchOCI(t *testing.T) {
	reg := newOCIRegistry(t, "", "")
	src := reg.push(t, packageChart(t, "simple", "0.1.0"), nil)
	reg.push(t, packageChart(t, "simple", "0.2.0"), nil)
	reg.push(t, packageChart(t, "simple", "1.0.0+build.1"), nil)

	cases := []struct {
		reason      string
		spec        helmspec.ChartSpec
		wantVersion string
		wantErr     string
		notFound    bool
	}{
		{reason: "an exact tag", spec: helmspec.ChartSpec{Source: src, Version: "0.1.0"}, wantVersion: "0.1.0"},
		{reason: "no version takes the highest tag (build metadata round-trips through _)", spec: helmspec.ChartSpec{Source: src}, wantVersion: "1.0.0+build.1"},
		{reason: "a constraint picks the highest matching tag", spec: helmspec.ChartSpec{Source: src, Version: "~0.1 || ~0.2"}, wantVersion: "0.2.0"},
		{reason: "repoURL oci:// plus a chart name", spec: helmspec.ChartSpec{Source: "simple", RepoURL: "oci://" + reg.host + "/charts", Version: "0.2.0"}, wantVersion: "0.2.0"},
		{reason: "a missing tag is not found", spec: helmspec.ChartSpec{Source: src, Version: "9.9.9"}, wantErr: "not found", notFound: true},
		{reason: "no tag matching the constraint", spec: helmspec.ChartSpec{Source: src, Version: ">=5"}, wantErr: "no tag matching", notFound: true},
		{reason: "a missing repository is not found", spec: helmspec.ChartSpec{Source: "oci://" + reg.host + "/charts/nope"}, wantErr: "oci://", notFound: true},
		{reason: "the tag belongs in version", spec: helmspec.ChartSpec{Source: src + ":0.1.0"}, wantErr: "put the tag in chart.version"},
	}
	f := NewFetcher(nil, WithPlainHTTPRegistries())
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ch, err := f.Fetch(context.Background(), "ns", tc.spec)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Equal(t, tc.notFound, errorsIs(err, helmspec.ErrChartNotFound), err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantVersion, ch.Chart.Metadata.Version)
			assert.Equal(t, "simple", ch.Chart.Name())
		})
	}
}

// TestFetchOCILoopbackWithoutPlainHTTPOption: Helm's pulls speak plain
// HTTP to a registry on the loopback address whatever the options
// (containerd's resolver), so tag listing must too: a version constraint
// or "latest" used to fail with an HTTPS error where an exact version
// worked.
func TestFetchOCILoopbackWithoutPlainHTTPOption(t *testing.T) {
	reg := newOCIRegistry(t, "", "")
	src := reg.push(t, packageChart(t, "simple", "0.1.0"), nil)
	reg.push(t, packageChart(t, "simple", "0.2.0"), nil)
	f := NewFetcher(nil)
	for _, tc := range []struct {
		reason, version, want string
	}{
		{reason: "an exact tag", version: "0.1.0", want: "0.1.0"},
		{reason: "no version lists the tags", version: "", want: "0.2.0"},
		{reason: "a constraint lists the tags", version: "~0.1", want: "0.1.0"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			ch, err := f.Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: src, Version: tc.version})
			require.NoError(t, err)
			assert.Equal(t, tc.want, ch.Chart.Metadata.Version)
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost:5000", true},
		{"localhost", true},
		{"127.0.0.1:36109", true},
		{"127.1.2.3", true},
		{"[::1]:5000", true},
		{"registry.example:5000", false},
		{"10.0.0.1:5000", false},
		{"localhost.example.com", false},
	} {
		assert.Equal(t, tc.want, isLoopback(tc.host), tc.host)
	}
}

// TestFetchOutboundPolicy: with the controller's outbound policy as its
// transport, repositories, chart URLs and OCI registries on loopback are
// refused unless allow-listed.
func TestFetchOutboundPolicy(t *testing.T) {
	repo := newRepoServer(t)
	file := repo.add(t, packageChart(t, "simple", "0.1.0"))
	reg := newOCIRegistry(t, "", "")
	src := reg.push(t, packageChart(t, "simple", "0.1.0"), nil)
	allowing, err := egress.New(egress.Config{Allow: []string{"127.0.0.1"}})
	require.NoError(t, err)
	specs := []struct {
		reason string
		spec   helmspec.ChartSpec
	}{
		{reason: "a repository", spec: helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL}},
		{reason: "a chart URL", spec: helmspec.ChartSpec{Source: repo.URL + "/charts/" + file}},
		{reason: "an OCI registry", spec: helmspec.ChartSpec{Source: src, Version: "0.1.0"}},
	}
	for _, tc := range specs {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := NewFetcher(nil, WithTransport(egress.Default().Transport(nil))).Fetch(context.Background(), "ns", tc.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "is a loopback address; oamflow does not connect to it unless an admin allow-lists it (--outbound-allow)")
			ch, err := NewFetcher(nil, WithTransport(allowing.Transport(nil))).Fetch(context.Background(), "ns", tc.spec)
			require.NoError(t, err)
			assert.Equal(t, "0.1.0", ch.Chart.Metadata.Version)
		})
	}
}
