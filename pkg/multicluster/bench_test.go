package multicluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkClients measures Registry.Clients per call:
//
//   - hub: "local", no lookup;
//   - hit/cachedReader: a member whose client is cached, the Secret read
//     from a controller-runtime cache of the system namespace (how the
//     controller should run it);
//   - hit/cachedReaderNoCopy: NewSecretCache (only cluster Secrets, no
//     deep copy), the reader to give the registry in the controller;
//   - hit/directReader: the same with the Secret read from the API server
//     (one GET per call; what the CLI does);
//   - miss/cachedReader: the entry dropped before each call, so the client
//     is rebuilt (parse, TLS, HTTP client; no network).
func BenchmarkClients(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	direct := newRegistry(b)
	join(b, direct, "member-a", map[string]string{"region": "east"})

	c, err := cache.New(hub.Config, cache.Options{Scheme: hub.Scheme, DefaultNamespaces: map[string]cache.Config{direct.namespace: {}}})
	require.NoError(b, err)
	go func() { _ = c.Start(ctx) }()
	require.True(b, c.WaitForCacheSync(ctx))
	cached, err := NewRegistry(hub.Client, hub.Config, WithSystemNamespace(direct.namespace), WithSecretReader(c))
	require.NoError(b, err)
	// Wait until the cache has the Secret.
	require.Eventually(b, func() bool { _, err := cached.Client(ctx, "member-a"); return err == nil }, 10e9, 10e6)

	nc, err := NewSecretCache(hub.Config, hub.Scheme, direct.namespace)
	require.NoError(b, err)
	go func() { _ = nc.Start(ctx) }()
	require.True(b, nc.WaitForCacheSync(ctx))
	noCopy, err := NewRegistry(hub.Client, hub.Config, WithSystemNamespace(direct.namespace), WithSecretReader(nc))
	require.NoError(b, err)
	require.Eventually(b, func() bool { _, err := noCopy.Client(ctx, "member-a"); return err == nil }, 10e9, 10e6)

	bench := func(name string, r *Registry, cluster string, before func()) {
		b.Run(name, func(b *testing.B) {
			var cl client.Client
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if before != nil {
					before()
				}
				var err error
				if cl, _, err = r.Clients(ctx, cluster); err != nil {
					b.Fatal(err)
				}
			}
			_ = cl
		})
	}
	bench("hub", cached, "local", nil)
	bench("hit/cachedReader", cached, "member-a", nil)
	bench("hit/cachedReaderNoCopy", noCopy, "member-a", nil)
	bench("hit/directReader", direct, "member-a", nil)
	bench("miss/cachedReader", cached, "member-a", func() { cached.drop("member-a") })
}
