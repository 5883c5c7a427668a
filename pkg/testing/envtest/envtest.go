// Package envtest gives controller tests a real kube-apiserver and etcd,
// started by controller-runtime's envtest from the binaries in bin/k8s
// (`make k8s-binaries`), never downloaded.
//
// Start one environment per package in TestMain:
//
//	var env *envtest.Environment
//
//	func TestMain(m *testing.M) {
//		os.Exit(envtest.Main(m, &env, envtest.WithCRDs("charts/oamflow/crds")))
//	}
//
// When the binaries are missing the package fails with a message saying to
// run `make k8s-binaries`; set OAMFLOW_SKIP_ENVTEST=1 to skip such packages
// on purpose instead.
package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/localcluster"
)

// SkipEnv, set to "1", makes Main and New skip instead of failing when the
// binaries are missing (and skip even when they are present).
const SkipEnv = "OAMFLOW_SKIP_ENVTEST"

// Environment is a running kube-apiserver + etcd.
type Environment struct {
	// Config reaches the kube-apiserver as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client using Scheme (no cache).
	Client client.Client
	// Scheme holds the client-go types and oamflow's, or WithScheme's.
	Scheme *runtime.Scheme

	env *crenvtest.Environment
}

// Option configures Start.
type Option func(*options)

type options struct {
	crdDirs []string
	scheme  *runtime.Scheme
	binDir  string
}

// WithCRDs installs the CustomResourceDefinitions found in dirs (YAML files)
// and waits until they are served. Relative dirs are taken from the module
// root (the directory of oamflow's go.mod); a missing directory fails Start.
func WithCRDs(dirs ...string) Option {
	return func(o *options) { o.crdDirs = append(o.crdDirs, dirs...) }
}

// WithScheme makes Client use s instead of a scheme with the client-go
// types and oamflow's (core.oam.dev/v1beta1).
func WithScheme(s *runtime.Scheme) Option {
	return func(o *options) { o.scheme = s }
}

// WithBinDir takes etcd and kube-apiserver from dir instead of BinDir().
func WithBinDir(dir string) Option {
	return func(o *options) { o.binDir = dir }
}

// BinDir returns the directory holding etcd and kube-apiserver:
// $OAMFLOW_K8S_BIN, else bin/k8s of the module found by walking up from the
// working directory. The error (a *localcluster.MissingBinariesError when
// binaries are missing) says to run `make k8s-binaries`.
func BinDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("envtest: %w", err)
	}
	dir, err := localcluster.ResolveBinDir("", os.Getenv(localcluster.BinDirEnv), wd)
	if err != nil {
		return "", fmt.Errorf("envtest: %w", err)
	}
	if err := localcluster.CheckBinaries(dir, localcluster.EnvtestBinaries()...); err != nil {
		return "", fmt.Errorf("envtest: %w", err)
	}
	return dir, nil
}

// Start starts kube-apiserver and etcd, installs the CRDs of WithCRDs and
// returns the environment; call Stop when done. Errors name what failed;
// missing binaries give a *localcluster.MissingBinariesError (wrapped).
func Start(opts ...Option) (*Environment, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	binDir := o.binDir
	if binDir == "" {
		var err error
		if binDir, err = BinDir(); err != nil {
			return nil, err
		}
	} else if err := localcluster.CheckBinaries(binDir, localcluster.EnvtestBinaries()...); err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	crdDirs, err := resolveDirs(o.crdDirs)
	if err != nil {
		return nil, err
	}
	scheme := o.scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return nil, fmt.Errorf("envtest: building scheme: %w", err)
		}
		if err := v1beta1.AddToScheme(scheme); err != nil {
			return nil, fmt.Errorf("envtest: building scheme: %w", err)
		}
	}
	env := &crenvtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// A 2-core machine running several envtest packages at once (go
		// test -p 2) can take well over controller-runtime's 20 s default
		// to bring kube-apiserver up.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("envtest: starting kube-apiserver and etcd from %s: %w", binDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("envtest: building client: %w", err)
	}
	return &Environment{Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// Stop stops kube-apiserver and etcd and removes their files.
func (e *Environment) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("envtest: stopping: %w", err)
	}
	return nil
}

// Main starts one environment, stores it in *env, runs the package's tests
// and stops it; it returns the exit code for os.Exit. If the environment
// cannot start (binaries missing included) it prints why and returns 1, so
// the package fails. With OAMFLOW_SKIP_ENVTEST=1 it runs no test and
// returns 0.
func Main(m *testing.M, env **Environment, opts ...Option) int {
	if os.Getenv(SkipEnv) == "1" {
		fmt.Fprintf(os.Stderr, "SKIP: %s=1: not running tests that need kube-apiserver and etcd\n", SkipEnv)
		return 0
	}
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		var me *localcluster.MissingBinariesError
		if errors.As(err, &me) {
			fmt.Fprintf(os.Stderr, "Build the binaries with `%s`, or set %s=1 to skip these tests.\n", localcluster.BuildCommand, SkipEnv)
		}
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// New starts an environment for one test and stops it when the test ends.
// It fails the test when the environment cannot start, and skips it with
// OAMFLOW_SKIP_ENVTEST=1.
func New(t testing.TB, opts ...Option) *Environment {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("%s=1: skipping a test that needs kube-apiserver and etcd", SkipEnv)
	}
	e, err := Start(opts...)
	if err != nil {
		t.Fatalf("%v (build the binaries with `%s`, or set %s=1 to skip)", err, localcluster.BuildCommand, SkipEnv)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return e
}

// resolveDirs makes relative dirs relative to the module root.
func resolveDirs(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	var root string
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			if root == "" {
				wd, err := os.Getwd()
				if err != nil {
					return nil, fmt.Errorf("envtest: %w", err)
				}
				if root, err = localcluster.FindModuleRoot(wd); err != nil {
					return nil, fmt.Errorf("envtest: resolving CRD directory %s: %w", d, err)
				}
			}
			d = filepath.Join(root, d)
		}
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("envtest: CRD directory: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}
