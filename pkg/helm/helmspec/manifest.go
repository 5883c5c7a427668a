package helmspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ParseManifest splits a multi-document YAML manifest into objects in
// document order, skipping empty documents. An object without kind or
// apiVersion is an error.
func ParseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("manifest document %d: %w", i, err)
		}
		if t := strings.TrimSpace(string(raw)); t == "" || t == "null" || t == "{}" {
			continue
		}
		// Unstructured's JSON decoding keeps integers as int64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("manifest document %d: %w", i, err)
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("manifest document %d has no kind or apiVersion", i)
		}
		out = append(out, u)
	}
}
