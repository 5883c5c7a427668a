package workflow

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// contextStore is the client kubevela/workflow uses during one pass of an
// Application's workflow. It passes everything through, except that the
// workflow context ConfigMap is written only when it holds something: the
// library creates it empty when a run starts and writes it again when a
// step commits, so an Application whose steps keep nothing (no variables,
// no suspend timestamps, no side-effect results) would cost a create and a
// patch for an object nobody reads. Instead, while the ConfigMap does not
// exist, creating it empty is a no-op and reading it answers NotFound
// without a request; the first commit holding something creates it whole.
// The next pass finds no ConfigMap and starts from an empty context, which
// is what the ConfigMap would have held.
type contextStore struct {
	client.Client
	key client.ObjectKey
	// creating, when set, is called before the ConfigMap is created
	// (whatever the create's outcome, it may exist after).
	creating func()

	// assumed: the ConfigMap was taken as absent without reading it (a new
	// run's first pass, or a pass after one of this engine's that ended
	// without it; see Engine.Execute). The run's context is empty whatever
	// the API server holds: a ConfigMap found there was left by a pass
	// whose status was never stored or by a deleted namesake, and the
	// run's first commit replaces it.
	assumed bool

	mu sync.Mutex
	// absent: the ConfigMap is known not to exist (read NotFound, or its
	// empty create was skipped) and nothing created it since.
	absent bool
}

func (s *contextStore) isContext(obj client.Object) bool {
	_, ok := obj.(*corev1.ConfigMap)
	return ok && obj.GetName() == s.key.Name && obj.GetNamespace() == s.key.Namespace
}

func (s *contextStore) setAbsent(v bool) {
	s.mu.Lock()
	s.absent = v
	s.mu.Unlock()
}

func (s *contextStore) isAbsent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.absent
}

func (s *contextStore) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key != s.key {
		return s.Client.Get(ctx, key, obj, opts...)
	}
	if _, ok := obj.(*corev1.ConfigMap); ok && s.isAbsent() {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	err := s.Client.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) {
		s.setAbsent(true)
	}
	return err
}

func (s *contextStore) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if !s.isContext(obj) {
		return s.Client.Create(ctx, obj, opts...)
	}
	if emptyContext(obj.(*corev1.ConfigMap)) {
		s.setAbsent(true)
		return nil
	}
	if s.creating != nil {
		s.creating()
	}
	// Made, made by someone else, or maybe made (a timeout): not known
	// absent any more.
	s.setAbsent(false)
	err := s.Client.Create(ctx, obj, opts...)
	if !s.assumed || !apierrors.IsAlreadyExists(err) {
		return err
	}
	left := &corev1.ConfigMap{}
	if err := s.Client.Get(ctx, s.key, left); err != nil {
		return err
	}
	cm := obj.(*corev1.ConfigMap)
	cm.ResourceVersion = left.ResourceVersion
	return s.Client.Update(ctx, cm)
}

// emptyContext reports whether cm holds nothing: no binary data and only
// blank values (the library writes its empty variables as "" or "\n").
func emptyContext(cm *corev1.ConfigMap) bool {
	if len(cm.BinaryData) > 0 {
		return false
	}
	for _, v := range cm.Data {
		if strings.TrimSpace(v) != "" {
			return false
		}
	}
	return true
}
