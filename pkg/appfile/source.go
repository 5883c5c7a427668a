package appfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/oamflow/oamflow/pkg/definition"
)

// ErrDefinitionNotFound is wrapped by DefinitionSource.Get when no
// definition of that kind and name exists.
var ErrDefinitionNotFound = errors.New("definition not found")

// DefinitionSource finds definitions by kind and name.
type DefinitionSource interface {
	// Get returns the definition of kind ("component"|"trait"|"policy"|
	// "workflow-step") and name, or an error wrapping ErrDefinitionNotFound.
	// A name may pin a revision: "webservice@v2".
	Get(ctx context.Context, kind DefinitionKind, name string) (*Definition, error)
}

// DefinitionError says a definition exists but cannot be used: its file
// does not parse, its header is wrong, its attributes do not fit the spec.
// Parse reports it as a validation error where the definition is used.
type DefinitionError struct {
	// Origin is where the definition was read from.
	Origin string
	Err    error
}

func (e *DefinitionError) Error() string { return e.Err.Error() }
func (e *DefinitionError) Unwrap() error { return e.Err }

// SplitRevision splits "name@vN" into name and N (0 without a pin).
func SplitRevision(typ string) (string, int64, error) {
	name, rev, ok := strings.Cut(typ, "@")
	if !ok {
		return typ, 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(rev, "v"), 10, 64)
	if err != nil || !strings.HasPrefix(rev, "v") || n <= 0 {
		return "", 0, fmt.Errorf("%q: a revision pin is written name@vN with N ≥ 1", typ)
	}
	return name, n, nil
}

// chain is a DefinitionSource that asks each source in order.
type chain []DefinitionSource

// Chain returns a source asking each source in order; the first hit wins.
// Errors other than not-found stop the search.
func Chain(sources ...DefinitionSource) DefinitionSource { return chain(sources) }

func (c chain) Get(ctx context.Context, kind DefinitionKind, name string) (*Definition, error) {
	for _, s := range c {
		if s == nil {
			continue
		}
		d, err := s.Get(ctx, kind, name)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, ErrDefinitionNotFound) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s %q: %w", kind, name, ErrDefinitionNotFound)
}

// LocalSource serves definitions from files: KubeVela-format .cue
// definition files and definition CRD YAML (.yaml, .yml, .json). Loading
// only indexes names and kinds; a definition is read fully (and its header
// evaluated) the first time it is asked for, so a folder of many
// definitions, including workflow steps that import provider packages,
// loads fast and never fails because of a definition an app does not use.
// When two files define the same kind and name, the one read later (paths
// in argument order, files in lexical order) wins.
type LocalSource struct {
	mu      sync.Mutex
	entries map[DefinitionKind]map[string]*localEntry
	// skipped are the files inside folders that could not be indexed.
	skipped []error
}

type localEntry struct {
	origin string
	read   func() ([]byte, error)
	cue    bool
	def    *Definition
	err    error
}

// NewLocalSource indexes the given files and folders (walked recursively).
// Files other than .cue, .yaml, .yml and .json are skipped inside folders
// and an error when named directly; so are definition files whose name and
// kind cannot be read (see Skipped).
func NewLocalSource(paths ...string) (*LocalSource, error) {
	s := &LocalSource{entries: map[DefinitionKind]map[string]*localEntry{}}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading definitions: %w", err)
		}
		if !info.IsDir() {
			if !isDefinitionFile(p) {
				return nil, fmt.Errorf("%s: not a definition file (want .cue, .yaml, .yml or .json)", p)
			}
			if err := s.addOS(p); err != nil {
				return nil, err
			}
			continue
		}
		files, err := DefinitionFiles(p)
		if err != nil {
			return nil, err
		}
		for _, fp := range files {
			// A file found in a folder that cannot even be indexed (its
			// name and kind unreadable) is skipped, not fatal: an app
			// that does not use it must still render. Skipped says which.
			if err := s.addOS(fp); err != nil {
				s.skipped = append(s.skipped, err)
			}
		}
	}
	return s, nil
}

// Skipped returns the errors of the files found in folders that could not
// be indexed (each names its file), in the order they were read. Files
// named directly are never skipped: NewLocalSource fails on them.
func (s *LocalSource) Skipped() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.skipped...)
}

// NewFSSource indexes the definition files under root of fsys (walked
// recursively), like NewLocalSource. It serves the embedded built-ins.
func NewFSSource(fsys fs.FS, root string) (*LocalSource, error) {
	s := &LocalSource{entries: map[DefinitionKind]map[string]*localEntry{}}
	if root == "" {
		root = "."
	}
	var files []string
	if err := fs.WalkDir(fsys, root, collectDefinitionFiles(&files)); err != nil {
		return nil, fmt.Errorf("reading definitions under %s: %w", root, err)
	}
	sort.Strings(files)
	for _, fp := range files {
		data, err := fs.ReadFile(fsys, fp)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", fp, err)
		}
		if err := s.add(fp, data); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// DefinitionFiles returns the definition files under the folder root,
// walked recursively: .cue definition files and definition YAML/JSON
// (.yaml, .yml, .json), sorted. Other files are left out.
func DefinitionFiles(root string) ([]string, error) {
	var files []string
	if err := filepath.WalkDir(root, collectDefinitionFiles(&files)); err != nil {
		return nil, fmt.Errorf("reading definitions under %s: %w", root, err)
	}
	sort.Strings(files)
	return files, nil
}

// collectDefinitionFiles is the walk function both folder readers use: it
// appends every definition file (see isDefinitionFile) to files.
func collectDefinitionFiles(files *[]string) fs.WalkDirFunc {
	return func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && isDefinitionFile(fp) {
			*files = append(*files, fp)
		}
		return nil
	}
}

func isDefinitionFile(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".cue", ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func (s *LocalSource) addOS(p string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	return s.add(p, data)
}

// add indexes one file: for .cue only the header label and type are read.
func (s *LocalSource) add(origin string, data []byte) error {
	if strings.EqualFold(path.Ext(origin), ".cue") {
		name, kind, err := definition.ScanCUE(origin, data)
		if err != nil {
			return err
		}
		s.put(kind, name, &localEntry{origin: origin, cue: true, read: func() ([]byte, error) { return data, nil }})
		return nil
	}
	objs, err := definition.DecodeYAML(origin, data)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		d, err := fromObject(obj, origin)
		if err != nil {
			return err
		}
		s.put(d.Kind, d.Name, &localEntry{origin: origin, def: d})
	}
	return nil
}

func (s *LocalSource) put(kind DefinitionKind, name string, e *localEntry) {
	if s.entries[kind] == nil {
		s.entries[kind] = map[string]*localEntry{}
	}
	s.entries[kind][name] = e
}

// Names lists the indexed definitions of kind, sorted.
func (s *LocalSource) Names(kind DefinitionKind) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.entries[kind]))
	for n := range s.entries[kind] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get implements DefinitionSource. A "@vN" pin is ignored: local files hold
// one version of each definition.
func (s *LocalSource) Get(_ context.Context, kind DefinitionKind, name string) (*Definition, error) {
	base, _, err := SplitRevision(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[kind][base]
	if !ok {
		return nil, fmt.Errorf("%s %q: %w", kind, base, ErrDefinitionNotFound)
	}
	if e.def != nil || e.err != nil {
		return e.def, e.err
	}
	data, err := e.read()
	if err != nil {
		e.err = fmt.Errorf("reading %s: %w", e.origin, err)
		return nil, e.err
	}
	f, err := definition.LoadCUE(e.origin, data)
	if err != nil {
		e.err = &DefinitionError{Origin: e.origin, Err: err}
		return nil, e.err
	}
	obj, err := f.Object("")
	if err != nil {
		e.err = &DefinitionError{Origin: e.origin, Err: fmt.Errorf("%s: %w", e.origin, err)}
		return nil, e.err
	}
	e.def = &Definition{
		Kind:            f.Kind,
		Name:            f.Name,
		Origin:          e.origin,
		Object:          obj,
		File:            e.origin,
		LineOffset:      f.TemplateLineOffset,
		ImportLines:     f.TemplateImportLines,
		ColumnOffset:    f.TemplateIndent,
		ImportFirstLine: f.TemplateImportFirstLine,
	}
	return e.def, nil
}
