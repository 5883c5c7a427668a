package workflow

import (
	"fmt"
	"io/fs"

	"github.com/oamflow/oamflow/pkg/definition"
)

// BuiltinTemplates reads the workflow-step definitions (KubeVela .cue
// definition format) under dir of fsys and returns their templates by
// name, for Options.Builtins. Files of other definition kinds are skipped;
// a file that does not parse is an error naming it.
func BuiltinTemplates(fsys fs.FS, dir string) (map[string]string, error) {
	files, err := fs.Glob(fsys, dir+"/*.cue")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		df, err := definition.ParseCUE(f, b)
		if err != nil {
			return nil, err
		}
		if df.Kind != definition.KindWorkflowStep {
			continue
		}
		out[df.Name] = df.Template
	}
	return out, nil
}
