package helmspec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ParseManifest splits a multi-document YAML manifest (Helm's layout:
// documents separated by "---", each usually after a "# Source:" comment)
// into objects in document order. Empty and comment-only documents are
// skipped and v1 Lists are flattened into their items. A document that is
// not YAML, or holds something other than an object with apiVersion, kind
// and metadata.name, is an error naming its position (1-based, as an
// editor counts).
func ParseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifest document %d: %w", doc, err)
		}
		objs, err := documentObjects(b)
		if err != nil {
			return nil, fmt.Errorf("manifest document %d: %w", doc, err)
		}
		out = append(out, objs...)
	}
}

// documentObjects decodes one YAML document: none when it is empty, the
// items of a List, else the object itself. JSON decoding through
// Unstructured keeps integers as int64.
func documentObjects(b []byte) ([]*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(j)); t == "" || t == "null" || t == "{}" {
		return nil, nil
	}
	if !strings.HasPrefix(strings.TrimSpace(string(j)), "{") {
		return nil, errors.New("not an object with apiVersion, kind and metadata.name")
	}
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	objs := []*unstructured.Unstructured{o}
	if o.IsList() {
		l, err := o.ToList()
		if err != nil {
			return nil, err
		}
		objs = objs[:0]
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	}
	for _, o := range objs {
		if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			return nil, errors.New("not an object with apiVersion, kind and metadata.name")
		}
	}
	return objs, nil
}
