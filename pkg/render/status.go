package render

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"cuelang.org/go/cue"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// StatusResult is the outcome of a definition's status CUE.
type StatusResult struct {
	// Healthy is `isHealth` of status.healthPolicy (true when there is no
	// policy; false when the policy cannot decide yet because the live
	// objects lack the fields it reads).
	Healthy bool
	// Message is `message` of status.customStatus ("" without one).
	Message string
	// Details are the top-level fields of status.details, as strings
	// (non-string values JSON-encoded).
	Details map[string]string
}

// EvalStatus evaluates a definition's status CUE against live objects. The
// CUE sees `context` = cctx plus `output` (liveOutput, the main workload as
// read from the cluster) and `outputs` (liveOutputs by output name), and
// `parameter` (the component's or trait's properties). CUE standard-library
// imports are allowed. The engine comes from ctx (appfile.WithEngine) so
// that status CUE is compiled once; without one a new engine is made.
// cctx["name"] (the component) names the CUE in errors.
//
// Errors are returned for CUE that does not compile or that conflicts; a
// policy whose result is incomplete (reads a field the object lacks) gives
// Healthy false and no error.
func EvalStatus(ctx context.Context, st *common.Status, parameter map[string]any, liveOutput map[string]any, liveOutputs map[string]map[string]any, cctx map[string]any) (StatusResult, error) {
	res := StatusResult{Healthy: true}
	if st == nil || (strings.TrimSpace(st.HealthPolicy) == "" && strings.TrimSpace(st.CustomStatus) == "" && strings.TrimSpace(st.Details) == "") {
		return res, nil
	}
	engine := appfile.EngineFrom(ctx)
	if engine == nil {
		engine = cuex.NewEngine()
	}
	full := make(map[string]any, len(cctx)+2)
	for k, v := range cctx {
		full[k] = v
	}
	if liveOutput != nil {
		full["output"] = liveOutput
	}
	outs := make(map[string]any, len(liveOutputs))
	for k, v := range liveOutputs {
		outs[k] = v
	}
	full["outputs"] = outs
	if parameter == nil {
		parameter = map[string]any{}
	}
	fills := map[string]any{"context": full, "parameter": parameter}
	name, _ := cctx["name"].(string)
	// A result is a pure function of the templates and what they read of
	// the fills: a resync finding the live objects as they were (the
	// fields the CUE reads, not their resourceVersion) evaluates nothing.
	compiled := map[string]*cuex.Template{}
	key := statusKey(engine, st, name, fills, compiled)
	if key != "" {
		if r, ok := engine.Recall(key); ok {
			return r.(StatusResult).copy(), nil
		}
	}
	res, err := evalStatus(ctx, engine, st, name, fills, compiled)
	if err == nil && key != "" {
		engine.Remember(key, res.copy())
	}
	return res, err
}

// statusKey is the memo key of a status evaluation: each template's hash
// with the part of context it reads, and the parameter; "" when a
// template does not compile (the evaluation reports it). The templates
// compiled are left in compiled by kind, for the evaluation to use.
func statusKey(engine *cuex.Engine, st *common.Status, name string, fills map[string]any, compiled map[string]*cuex.Template) string {
	parts := []any{"status"}
	for _, f := range []struct{ kind, text string }{
		{"health policy", st.HealthPolicy}, {"custom status", st.CustomStatus}, {"status details", st.Details},
	} {
		if strings.TrimSpace(f.text) == "" {
			parts = append(parts, "")
			continue
		}
		t, err := engine.Compile(cuex.Source{Kind: f.kind, Name: name}, f.text)
		if err != nil {
			return ""
		}
		compiled[f.kind] = t
		parts = append(parts, t.Hash(), t.Context(fills["context"].(map[string]any)))
	}
	key, err := cuex.Key(append(parts, fills["parameter"])...)
	if err != nil {
		return ""
	}
	return key
}

// copy returns r with its own Details.
func (r StatusResult) copy() StatusResult {
	if r.Details != nil {
		r.Details = maps.Clone(r.Details)
	}
	return r
}

// evalStatus evaluates st's CUE with fills, using the templates of
// compiled (by kind) where statusKey compiled them.
func evalStatus(ctx context.Context, engine *cuex.Engine, st *common.Status, name string, fills map[string]any, compiled map[string]*cuex.Template) (StatusResult, error) {
	res := StatusResult{Healthy: true}

	if strings.TrimSpace(st.HealthPolicy) != "" {
		src := cuex.Source{Kind: "health policy", Name: name}
		err := evalField(ctx, engine, compiled[src.Kind], src, st.HealthPolicy, fills, func(v cue.Value) error {
			h := v.LookupPath(cue.MakePath(cue.Str("isHealth")))
			if !h.Exists() {
				return &cuex.Error{Source: src, Message: "the health policy does not define isHealth"}
			}
			b, err := h.Bool()
			if err != nil {
				if isIncomplete(h) {
					res.Healthy = false
					return nil
				}
				return cuex.Translate(src, err, "")
			}
			res.Healthy = b
			return nil
		})
		if err != nil {
			return StatusResult{}, err
		}
	}
	if strings.TrimSpace(st.CustomStatus) != "" {
		src := cuex.Source{Kind: "custom status", Name: name}
		err := evalField(ctx, engine, compiled[src.Kind], src, st.CustomStatus, fills, func(v cue.Value) error {
			m := v.LookupPath(cue.MakePath(cue.Str("message")))
			if !m.Exists() {
				return nil
			}
			s, err := m.String()
			if err != nil {
				if isIncomplete(m) {
					return nil
				}
				return cuex.Translate(src, err, "")
			}
			res.Message = s
			return nil
		})
		if err != nil {
			return StatusResult{}, err
		}
	}
	if strings.TrimSpace(st.Details) != "" {
		src := cuex.Source{Kind: "status details", Name: name}
		err := evalField(ctx, engine, compiled[src.Kind], src, st.Details, fills, func(v cue.Value) error {
			it, err := v.Fields()
			if err != nil {
				return cuex.Translate(src, err, "")
			}
			for it.Next() {
				k := it.Selector().Unquoted()
				if k == "context" || k == "parameter" {
					continue
				}
				fv := it.Value()
				if s, err := fv.String(); err == nil {
					if res.Details == nil {
						res.Details = map[string]string{}
					}
					res.Details[k] = s
					continue
				}
				if fv.Validate(cue.Concrete(true)) != nil {
					continue // not known yet
				}
				var x any
				if err := fv.Decode(&x); err != nil {
					continue
				}
				b, err := json.Marshal(x)
				if err != nil {
					continue
				}
				if res.Details == nil {
					res.Details = map[string]string{}
				}
				res.Details[k] = string(b)
			}
			return nil
		})
		if err != nil {
			return StatusResult{}, err
		}
	}
	return res, nil
}

// evalField evaluates text (t when it is already compiled) with fills.
func evalField(ctx context.Context, engine *cuex.Engine, t *cuex.Template, src cuex.Source, text string, fills map[string]any, fn func(cue.Value) error) error {
	if t == nil {
		var err error
		if t, err = engine.Compile(src, text); err != nil {
			return err
		}
	}
	if err := engine.Eval(ctx, t, fills, fn); err != nil {
		return fmt.Errorf("evaluating status: %w", err)
	}
	return nil
}

// isIncomplete reports whether v lacks a value only because data is missing.
func isIncomplete(v cue.Value) bool {
	err := v.Validate(cue.Concrete(true))
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "incomplete") || strings.Contains(msg, "undefined field") || strings.Contains(msg, "non-concrete")
}
