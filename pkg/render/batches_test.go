package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBatches(t *testing.T) {
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		return u
	}
	a, b, c, ref := obj("a"), obj("b"), obj("c"), obj("ref")
	cases := []struct {
		reason string
		res    []Resource
		want   []Batch
	}{
		{"nothing rendered, nothing to apply", nil, nil},
		{"clusters in the order they first appear, objects in order",
			[]Resource{{Cluster: "east", Object: a}, {Cluster: "", Object: b}, {Cluster: "east", Object: c}},
			[]Batch{{Cluster: "east", Objects: []*unstructured.Unstructured{a, c}}, {Cluster: "", Objects: []*unstructured.Unstructured{b}}}},
		{"references are read, not applied",
			[]Resource{{Cluster: "", Object: ref, Reference: true}, {Cluster: "", Object: a}},
			[]Batch{{Cluster: "", Objects: []*unstructured.Unstructured{a}}}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, Batches(tc.res))
		})
	}
}
