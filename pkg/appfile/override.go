package appfile

import (
	"regexp"
	"sort"
	"strings"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// OverrideEntry is one element of an override policy's
// properties.components: which components it changes (Name, Type) and how.
type OverrideEntry struct {
	// Name selects components by name; "*" is a wildcard (`web-*`); empty
	// selects every component (of Type, when set).
	Name string
	// Type, with an empty Name, selects the components of that type; with a
	// Name, a matching component of another type is replaced by the entry,
	// and a Name matching no component adds a component of this type.
	Type       string
	Properties map[string]any
	// Traits are the entry's trait patches ({type, properties, disable}).
	Traits []any
}

// OverrideEntries reads properties.components of an override policy;
// entries that are not objects are skipped (the policy's own schema
// reports them).
func OverrideEntries(props map[string]any) []OverrideEntry {
	list, _ := props["components"].([]any)
	out := make([]OverrideEntry, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		entry := OverrideEntry{}
		entry.Name, _ = m["name"].(string)
		entry.Type, _ = m["type"].(string)
		entry.Properties, _ = m["properties"].(map[string]any)
		entry.Traits, _ = m["traits"].([]any)
		out = append(out, entry)
	}
	return out
}

// SelectsByName reports whether the entry names components (rather than
// selecting all of them, or all of a type).
func (e OverrideEntry) SelectsByName() bool { return e.Name != "" && e.Name != "*" }

// Matches reports whether the entry applies to a component of that name
// and type. An entry naming components matches them whatever their type
// (KubeVela then replaces a component of another type); one without a name
// matches every component, or those of its type.
func (e OverrideEntry) Matches(name, typ string) bool {
	if !e.SelectsByName() {
		return e.Type == "" || e.Type == typ
	}
	if !strings.Contains(e.Name, "*") {
		return e.Name == name
	}
	parts := strings.Split(e.Name, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	re, err := regexp.Compile("^" + strings.Join(parts, ".*") + "$")
	return err == nil && re.MatchString(name)
}

// Adds reports whether the entry adds a component when no component of
// the application matches it: it names one component (no wildcard) and
// gives its type.
func (e OverrideEntry) Adds() bool {
	return e.SelectsByName() && !strings.Contains(e.Name, "*") && e.Type != ""
}

// overrideSupplied returns, for component c, the dotted property keys the
// Application's override policies set for it: a required property they set
// is not missing when parsing the Application as written (it is checked
// on the overridden copy each deploy step renders).
func overrideSupplied(policies []common.AppPolicy, c *common.ApplicationComponent) []string {
	seen := map[string]bool{}
	for _, pol := range policies {
		if pol.Type != PolicyOverride {
			continue
		}
		props, err := DecodeProperties(pol.Properties)
		if err != nil {
			continue
		}
		for _, e := range OverrideEntries(props) {
			if e.Matches(c.Name, c.Type) {
				leafKeys(e.Properties, "", seen)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// leafKeys adds the dotted paths of the non-object values under m.
func leafKeys(m map[string]any, prefix string, out map[string]bool) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			leafKeys(sub, prefix+k+".", out)
			continue
		}
		out[prefix+k] = true
	}
}
