package manager_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// env is one kube-apiserver + etcd shared by the package's tests; only one
// manager runs at a time (the workflow library is process-wide).
var env *envtest.Environment

// logs holds everything the package's managers log (controller-runtime's
// logger and klog, which kubevela/workflow logs through), for tests that
// check what is never logged.
var logs = &syncBuffer{}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain(m *testing.M) {
	logger := zap.New(zap.WriteTo(io.MultiWriter(os.Stderr, logs)), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	scheme, err := manager.Scheme()
	if err != nil {
		panic(err)
	}
	os.Exit(envtest.Main(m, &env, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(scheme)))
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testOptions are manager options for tests: endpoints off unless set,
// quick re-checks.
func testOptions() manager.Options {
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.UnhealthyRequeuePeriod = 2 * time.Second
	o.MaxStepRetries = 3
	return o
}

// startManager runs manager.Run until stop is called or the test ends,
// and checks that it stopped cleanly.
func startManager(t *testing.T, o manager.Options) (stop func()) {
	t.Helper()
	return startManagerAs(t, env.Config, o)
}

// startManagerAs is startManager reaching the API server with cfg.
func startManagerAs(t *testing.T, cfg *rest.Config, o manager.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, cfg, o) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err, "manager.Run")
			case <-time.After(30 * time.Second):
				t.Error("the manager did not stop within 30 s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// writeKubeconfig writes a kubeconfig reaching env as its administrator.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "default"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
