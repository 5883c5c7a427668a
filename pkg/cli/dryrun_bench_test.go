package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchDefs copies the built-in definitions (and renamed copies of them)
// into a folder until it holds n files, like hack/bench/render/run.sh.
func benchDefs(b *testing.B, n int) string {
	b.Helper()
	files, err := filepath.Glob("../../definitions/*/*.cue")
	if err != nil || len(files) == 0 {
		b.Fatal("no built-in definitions", err)
	}
	dir := b.TempDir()
	count := 0
	for copy := 0; count < n; copy++ {
		for _, f := range files {
			if count >= n {
				break
			}
			src, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(f), ".cue")
			out := name
			if copy > 0 {
				out = name + "-copy" + string(rune('0'+copy))
				re := regexp.MustCompile(`(?m)^"?` + regexp.QuoteMeta(name) + `"?:\s*\{`)
				src = re.ReplaceAll(src, []byte(`"`+out+`": {`))
			}
			if err := os.WriteFile(filepath.Join(dir, out+".cue"), src, 0o644); err != nil {
				b.Fatal(err)
			}
			count++
		}
	}
	return dir
}

// BenchmarkDryRunOffline runs `oamflow dry-run --offline` in-process for one
// webservice with four traits and a -d folder of 90 definitions: the work
// of one CLI run without process start-up (see hack/bench/render/run.sh for
// the whole process).
func BenchmarkDryRunOffline(b *testing.B) {
	defs := benchDefs(b, 90)
	for i := 0; i < b.N; i++ {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetArgs([]string{"dry-run", "--offline", "-f", "../render/testdata/bench/one.yaml", "-d", defs})
		if err := root.ExecuteContext(context.Background()); err != nil {
			b.Fatal(err, errOut.String())
		}
	}
}
