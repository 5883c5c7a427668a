package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/definition"
)

// readDefinitionFS reads the definition objects (no namespace set) of the
// file name (an fs.FS path: slash-separated, no leading slash) of fsys: a
// .cue definition file when name ends in .cue (any case), else YAML/JSON
// documents of definition objects. label names the file in errors and in
// the returned definitions' Origin and File (the path a user typed, or the
// path inside the embedded built-ins). Errors are *UserError.
func readDefinitionFS(fsys fs.FS, name, label string) ([]*appfile.Definition, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		// The fs.PathError repeats name, which label already says.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &UserError{Err: fmt.Errorf("reading %s: %w", label, err)}
	}
	if strings.EqualFold(path.Ext(name), ".cue") {
		f, err := definition.ParseCUE(label, data)
		if err != nil {
			return nil, &UserError{Err: err}
		}
		obj, err := f.Object("")
		if err != nil {
			return nil, &UserError{Err: fmt.Errorf("%s: %w", label, err)}
		}
		return []*appfile.Definition{{Kind: f.Kind, Name: f.Name, Origin: label, Object: obj,
			File: label, LineOffset: f.TemplateLineOffset, ImportLines: f.TemplateImportLines, ColumnOffset: f.TemplateIndent, ImportFirstLine: f.TemplateImportFirstLine}}, nil
	}
	objs, err := definition.DecodeYAML(label, data)
	if err != nil {
		return nil, &UserError{Err: err}
	}
	out := make([]*appfile.Definition, 0, len(objs))
	for _, obj := range objs {
		out = append(out, &appfile.Definition{Kind: definition.KindOf(obj), Name: obj.GetName(), Origin: label, Object: obj})
	}
	return out, nil
}

// readDefinitionFiles reads the definition objects of the files at the OS
// paths (as typed by the user: relative, absolute, with ..), each through
// os.DirFS of its folder, in the order given. Errors name the path and are
// *UserError.
func readDefinitionFiles(paths []string) ([]*appfile.Definition, error) {
	var out []*appfile.Definition
	for _, p := range paths {
		defs, err := readDefinitionFS(os.DirFS(filepath.Dir(p)), filepath.Base(p), p)
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	return out, nil
}

// readDefinitionTree reads every .cue file under the root of fsys, in
// lexical order (fs.WalkDir), each named by its fsys path. Errors name the
// file and are *UserError.
func readDefinitionTree(fsys fs.FS) ([]*appfile.Definition, error) {
	var out []*appfile.Definition
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &UserError{Err: fmt.Errorf("reading %s: %w", p, err)}
		}
		if d.IsDir() || !strings.EqualFold(path.Ext(p), ".cue") {
			return nil
		}
		defs, err := readDefinitionFS(fsys, p, p)
		if err != nil {
			return err
		}
		out = append(out, defs...)
		return nil
	})
	return out, err
}
