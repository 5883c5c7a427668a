package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	// BinDirEnv overrides where the control-plane binaries are looked up.
	BinDirEnv = "OAMFLOW_K8S_BIN"
	// HomeEnv overrides the state directory (default ~/.oamflow).
	HomeEnv = "OAMFLOW_HOME"
	// BuildCommand builds the binaries into bin/k8s of the repository.
	BuildCommand = "make k8s-binaries"
	// modulePath identifies the repository's go.mod when looking for bin/k8s.
	modulePath = "github.com/oamflow/oamflow"
	// stampFile in the binary directory records the versions it was built at.
	stampFile = "VERSION"
)

// Names of the binaries in the binary directory.
const (
	BinEtcd                  = "etcd"
	BinKubeAPIServer         = "kube-apiserver"
	BinKubeControllerManager = "kube-controller-manager"
	BinKubeScheduler         = "kube-scheduler"
	BinKwok                  = "kwok"
	BinKwokctl               = "kwokctl"
)

// ClusterBinaries lists the binaries a local cluster needs, in start order,
// with kwokctl last.
func ClusterBinaries() []string {
	return []string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager, BinKubeScheduler, BinKwok, BinKwokctl}
}

// EnvtestBinaries lists the binaries controller-runtime's envtest starts.
func EnvtestBinaries() []string {
	return []string{BinEtcd, BinKubeAPIServer}
}

// MissingBinariesError says which binaries are missing from which directory
// and how to build them.
type MissingBinariesError struct {
	// Dir is the directory that was searched.
	Dir string
	// Missing are the binary names not found there as executable files.
	Missing []string
}

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("missing %s in %s: build them with `%s` (or set $%s / --k8s-bin to a directory that has them)",
		strings.Join(e.Missing, ", "), e.Dir, BuildCommand, BinDirEnv)
}

// CheckBinaries returns a *MissingBinariesError naming every one of names that
// is not an executable regular file in dir, or nil when all are present.
func CheckBinaries(dir string, names ...string) error {
	var missing []string
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &MissingBinariesError{Dir: dir, Missing: missing}
	}
	return nil
}

// ResolveBinDir picks the binary directory: flagValue if set, else the
// $OAMFLOW_K8S_BIN value env, else bin/k8s in the oamflow repository found by
// walking up from each of starts (typically the working directory and the
// executable's directory). The result is absolute; it is not checked for
// binaries (see CheckBinaries). The error says where it looked and what to set.
func ResolveBinDir(flagValue, env string, starts ...string) (string, error) {
	for _, v := range []string{flagValue, env} {
		if v != "" {
			return filepath.Abs(v)
		}
	}
	for _, s := range starts {
		if s == "" {
			continue
		}
		if root, err := FindModuleRoot(s); err == nil {
			return filepath.Join(root, "bin", "k8s"), nil
		}
	}
	return "", fmt.Errorf("cannot locate bin/k8s: no go.mod of module %s above %s; run from the repository, or set $%s / --k8s-bin (build the binaries with `%s`)",
		modulePath, strings.Join(starts, " or "), BinDirEnv, BuildCommand)
}

// FindModuleRoot walks up from start to the directory whose go.mod declares
// module github.com/oamflow/oamflow and returns it (absolute).
func FindModuleRoot(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", start, err)
	}
	for {
		if isOurModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or above", modulePath, start)
		}
		dir = parent
	}
}

// isOurModule reports whether the go.mod at path declares modulePath.
func isOurModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}

// ReadStamp returns the first line of the VERSION stamp in dir, or "" when
// there is none.
func ReadStamp(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// DefaultHome returns the state directory: the $OAMFLOW_HOME value env when
// set, else .oamflow in the user's home directory.
func DefaultHome(env string) (string, error) {
	if env != "" {
		return filepath.Abs(env)
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for the default state dir (set $%s): %w", HomeEnv, err)
	}
	if h == "" {
		return "", errors.New("empty home directory: set $" + HomeEnv)
	}
	return filepath.Join(h, ".oamflow"), nil
}
