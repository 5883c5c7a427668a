package helmspec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"github.com/oamflow/oamflow/pkg/errclass"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Limits bound what a chart may contain before Helm sees it. Helm 3.16 has
// known denial-of-service and traversal issues with hostile archives, so
// every chart (fetched or bundled) is read through these checks first.
type Limits struct {
	// MaxArchiveBytes bounds the compressed .tgz (default 10 MiB).
	MaxArchiveBytes int64
	// MaxFiles bounds the number of files (default 2000).
	MaxFiles int
	// MaxDecompressedBytes bounds the sum of file sizes (default 50 MiB).
	MaxDecompressedBytes int64
	// MaxFileBytes bounds any one file (default 5 MiB).
	MaxFileBytes int64
}

// DefaultLimits are the Limits used when a field is zero.
var DefaultLimits = Limits{
	MaxArchiveBytes:      10 << 20,
	MaxFiles:             2000,
	MaxDecompressedBytes: 50 << 20,
	MaxFileBytes:         5 << 20,
}

// WithDefaults returns l with each zero or negative field set from
// DefaultLimits.
func (l Limits) WithDefaults() Limits {
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = DefaultLimits.MaxArchiveBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultLimits.MaxFiles
	}
	if l.MaxDecompressedBytes <= 0 {
		l.MaxDecompressedBytes = DefaultLimits.MaxDecompressedBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	return l
}

// ErrUnsafeChart marks a chart refused by a security guard (Limits, links,
// path traversal). It is terminal: retrying the same chart cannot succeed.
var ErrUnsafeChart = errclass.Sentinel("unsafe chart")

// UnsafeChartf returns an error wrapping ErrUnsafeChart with the formatted
// reason.
func UnsafeChartf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsafeChart, fmt.Sprintf(format, args...))
}

// ReadBounded reads all of r, failing when it has more than max bytes.
func ReadBounded(r io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > max {
		return nil, UnsafeChartf("%s is larger than %d bytes", what, max)
	}
	return data, nil
}

// LoadArchive loads a packaged chart (.tgz bytes) after checking it against
// limits: compressed size, file count, per-file and total decompressed size,
// only regular files and directories (no symlinks, hard links or devices),
// no absolute paths or ".." segments, and one top-level folder. Errors wrap
// ErrUnsafeChart for refused archives. Helm panics are returned as errors.
func LoadArchive(data []byte, limits Limits) (*chart.Chart, error) {
	limits = limits.WithDefaults()
	if int64(len(data)) > limits.MaxArchiveBytes {
		return nil, UnsafeChartf("archive is %d bytes, more than the limit of %d", len(data), limits.MaxArchiveBytes)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("chart archive is not gzip: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)

	var (
		files []*loader.BufferedFile
		total int64
		top   string
	)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read chart archive: %w", err)
		}
		name, err := cleanArchivePath(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		case tar.TypeSymlink, tar.TypeLink:
			return nil, UnsafeChartf("archive entry %q is a link; links are refused", hdr.Name)
		default:
			return nil, UnsafeChartf("archive entry %q has type %q; only files and folders are allowed", hdr.Name, string(hdr.Typeflag))
		}
		if len(files) >= limits.MaxFiles {
			return nil, UnsafeChartf("archive has more than %d files", limits.MaxFiles)
		}
		if hdr.Size > limits.MaxFileBytes {
			return nil, UnsafeChartf("archive entry %q is %d bytes, more than the limit of %d", hdr.Name, hdr.Size, limits.MaxFileBytes)
		}
		content, err := ReadBounded(tr, limits.MaxFileBytes, fmt.Sprintf("archive entry %q", hdr.Name))
		if err != nil {
			return nil, err
		}
		total += int64(len(content))
		if total > limits.MaxDecompressedBytes {
			return nil, UnsafeChartf("archive decompresses to more than %d bytes", limits.MaxDecompressedBytes)
		}
		first, rest, _ := strings.Cut(name, "/")
		if rest == "" {
			return nil, UnsafeChartf("archive entry %q is not inside the chart folder", hdr.Name)
		}
		if top == "" {
			top = first
		} else if first != top {
			return nil, UnsafeChartf("archive has more than one top-level folder (%q and %q)", top, first)
		}
		files = append(files, &loader.BufferedFile{Name: rest, Data: content})
	}
	// The gzip stream may hide data after the tar end marker; drain it within bounds.
	if _, err := ReadBounded(gz, limits.MaxDecompressedBytes-total, "archive trailer"); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("chart archive is empty")
	}
	return loadFiles(files)
}

// cleanArchivePath refuses absolute paths, backslashes and ".." segments
// and returns the slash-separated clean name.
func cleanArchivePath(name string) (string, error) {
	if strings.Contains(name, `\`) {
		return "", UnsafeChartf("archive entry %q contains a backslash", name)
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", UnsafeChartf("archive entry %q has an absolute path", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return "", UnsafeChartf("archive entry %q escapes the chart folder", name)
		}
	}
	return strings.TrimPrefix(path.Clean(name), "./"), nil
}

// LoadDir loads an unpacked chart from dir under the same limits as
// LoadArchive; any symlink inside dir is refused.
func LoadDir(dir string, limits Limits) (*chart.Chart, error) {
	limits = limits.WithDefaults()
	var (
		files int
		total int64
	)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return UnsafeChartf("chart file %q is a symlink; links are refused", d.Name())
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return UnsafeChartf("chart file %q is not a regular file", d.Name())
		}
		if files >= limits.MaxFiles {
			return UnsafeChartf("chart has more than %d files", limits.MaxFiles)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > limits.MaxFileBytes {
			return UnsafeChartf("chart file %q is %d bytes, more than the limit of %d", d.Name(), info.Size(), limits.MaxFileBytes)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		content, err := ReadBounded(f, limits.MaxFileBytes, fmt.Sprintf("chart file %q", d.Name()))
		if err != nil {
			return err
		}
		total += int64(len(content))
		if total > limits.MaxDecompressedBytes {
			return UnsafeChartf("chart is larger than %d bytes", limits.MaxDecompressedBytes)
		}
		files++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load chart folder: %w", err)
	}
	// The folder passed the guards; Helm's own loader applies .helmignore.
	var ch *chart.Chart
	err = Safely("load chart", func() error {
		var lerr error
		ch, lerr = loader.LoadDir(dir)
		return lerr
	})
	if err != nil {
		return nil, fmt.Errorf("load chart folder: %w", err)
	}
	return ch, nil
}

// loadFiles hands checked files to Helm's loader, honouring .helmignore,
// and turns a loader panic into an error.
func loadFiles(files []*loader.BufferedFile) (ch *chart.Chart, err error) {
	err = Safely("load chart", func() error {
		var lerr error
		ch, lerr = loader.LoadFiles(files)
		return lerr
	})
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return ch, nil
}
