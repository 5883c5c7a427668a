package render

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// FuzzRender feeds arbitrary properties to every built-in component and
// trait: parsing and rendering may fail, but never panic or hang.
//
//	go test ./pkg/render -run '^$' -fuzz FuzzRender -fuzztime 60s
func FuzzRender(f *testing.F) {
	src, err := appfile.NewFSSource(definitions.FS, ".")
	if err != nil {
		f.Fatal(err)
	}
	comps := src.Names(appfile.KindComponent)
	traits := src.Names(appfile.KindTrait)
	sort.Strings(comps)
	sort.Strings(traits)
	seeds := []struct {
		comp, trait       uint8
		props, traitProps string
	}{
		{0, 0, `{"image":"nginx"}`, `{"replicas":2}`},
		{1, 3, `{"image":"nginx","ports":[{"port":80}]}`, `{"env":{"A":"b"}}`},
		{2, 7, `{"image":1}`, `{"x":null}`},
		{3, 11, `{"image":"x","cmd":["a"],"env":[{"name":"A"}]}`, `[]`},
		{4, 15, `{"image":"` + string(make([]byte, 300)) + `"}`, `{"labels":{"ünï":"cödé"}}`},
		{5, 19, `not json`, `{"operations":[{"op":"add","path":"/x","value":1}]}`},
		{6, 21, `{"objects":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}]}`, `{"a":{"b":{"c":{"d":[1,2,3]}}}}`},
		{7, 23, `{"schedule":"* * * * *","image":"x"}`, `{"replicas":-1}`},
	}
	for _, s := range seeds {
		f.Add(s.comp, s.trait, []byte(s.props), []byte(s.traitProps))
	}
	engine := cuex.NewEngine(cuex.WithLimits(cuex.Limits{Timeout: 5 * time.Second}))
	f.Fuzz(func(t *testing.T, comp, trait uint8, props, traitProps []byte) {
		app := &v1beta1.Application{}
		app.Name, app.Namespace = "fuzz", "default"
		c := common.ApplicationComponent{Name: "c", Type: comps[int(comp)%len(comps)]}
		if json.Valid(props) {
			c.Properties = &runtime.RawExtension{Raw: props}
		}
		if trait%4 != 0 {
			tr := common.ApplicationTrait{Type: traits[int(trait)%len(traits)]}
			if json.Valid(traitProps) {
				tr.Properties = &runtime.RawExtension{Raw: traitProps}
			}
			c.Traits = append(c.Traits, tr)
		}
		app.Spec.Components = []common.ApplicationComponent{c}
		ctx := appfile.WithEngine(context.Background(), engine)
		af, err := appfile.Parse(ctx, app, src)
		if err != nil {
			return
		}
		_, _ = RenderApplication(ctx, af, Options{})
	})
}
