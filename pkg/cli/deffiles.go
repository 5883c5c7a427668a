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

// defFile is a definition file to read: named by the user, or found in a
// folder the user named.
type defFile struct {
	path     string
	inFolder bool
}

// expandDefinitionPaths replaces each folder among paths by the
// definition files under it (appfile.DefinitionFiles: walked recursively,
// .cue/.yaml/.yml/.json, sorted); files stay as given. A folder without
// definition files is an error. Errors are *UserError.
func expandDefinitionPaths(paths []string) ([]defFile, error) {
	var out []defFile
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			out = append(out, defFile{path: p}) // reading it reports the error
			continue
		}
		files, err := appfile.DefinitionFiles(p)
		if err != nil {
			return nil, &UserError{Err: err}
		}
		if len(files) == 0 {
			return nil, userErrorf("%s: no definition files (.cue, .yaml, .yml, .json) in this folder", p)
		}
		for _, f := range files {
			out = append(out, defFile{path: f, inFolder: true})
		}
	}
	return out, nil
}

// readDefFile reads the definitions of one file. A YAML file found in a
// folder that holds something else than definitions (an Application, the
// objects it renders) is skipped: skipped is true and err nil.
func readDefFile(f defFile) (defs []*appfile.Definition, skipped bool, err error) {
	defs, err = readDefinitionFS(os.DirFS(filepath.Dir(f.path)), filepath.Base(f.path), f.path)
	if err != nil && f.inFolder && errors.Is(err, definition.ErrNotDefinition) {
		return nil, true, nil
	}
	return defs, false, err
}

// readDefinitionFiles reads the definition objects of the files at the OS
// paths (as typed by the user: relative, absolute, with ..; a folder
// stands for the definition files under it, see expandDefinitionPaths and
// readDefFile), each through os.DirFS of its folder, in the order given.
// It returns how many files of folders were skipped as not definitions.
// Errors name the path and are *UserError.
func readDefinitionFiles(paths []string) ([]*appfile.Definition, int, error) {
	files, err := expandDefinitionPaths(paths)
	if err != nil {
		return nil, 0, err
	}
	var out []*appfile.Definition
	skipped := 0
	for _, f := range files {
		defs, skip, err := readDefFile(f)
		if err != nil {
			return nil, 0, err
		}
		if skip {
			skipped++
		}
		out = append(out, defs...)
	}
	return out, skipped, nil
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
