package render

import (
	"fmt"
	"strings"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// AppliesToWarnings returns the warnings for traits of components whose
// workload kind is only known once rendered (k8s-objects, ref-objects:
// appfile.Validate cannot judge them) attached against their definition's
// appliesToWorkloads to the kind res renders. As with other workloads
// (appfile.AppliesToWarning), the traits are rendered anyway.
func AppliesToWarnings(af *appfile.AppFile, res []Resource) []string {
	var out []string
	for _, c := range af.Components {
		if c.Definition == nil || !c.Definition.IsAutodetect() {
			continue
		}
		var workload *Resource
		for i := range res {
			if res[i].Component == c.Name && res[i].IsWorkload() && !res[i].Reference {
				workload = &res[i]
				break
			}
		}
		if workload == nil {
			continue
		}
		apiVersion, kind := workload.Object.GetAPIVersion(), workload.Object.GetKind()
		kindNames := appfile.KindNames(apiVersion, kind)
		names := append([]string{appfile.AutodetectWorkload, c.Definition.Name}, kindNames...)
		for j, tr := range c.Traits {
			if tr.Definition == nil {
				continue
			}
			spec := tr.Definition.TraitSpec()
			if spec == nil || len(spec.AppliesToWorkloads) == 0 || appfile.AppliesTo(spec.AppliesToWorkloads, names) {
				continue
			}
			out = append(out, appfile.AppliesToWarning(fmt.Sprintf("%s.traits[%d]", specPath(af, c.Name), j), c.Name, tr.Type, spec.AppliesToWorkloads,
				fmt.Sprintf("the %s %s this %s component renders (matching names: %s)", apiVersion, kind, c.Definition.Name, strings.Join(kindNames, ", "))))
		}
	}
	return out
}

// specPath is spec.components[i] of the component named name.
func specPath(af *appfile.AppFile, name string) string {
	if af.App != nil {
		for i, c := range af.App.Spec.Components {
			if c.Name == name {
				return fmt.Sprintf("spec.components[%d]", i)
			}
		}
	}
	return "spec.components"
}
