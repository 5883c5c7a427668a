package revision

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/placement"
)

// AnnoPlacement on an ApplicationRevision records the clusters its
// label-selecting topology policies matched when it was made
// (placement.Selection as JSON: policy → sorted cluster names). Revisions
// of Applications that select no cluster by labels do not carry it.
const AnnoPlacement = "oamflow.dev/placement"

// ReasonPlacementChanged: the clusters a topology policy selects by labels
// changed (a member joined, lost or gained labels, or was detached), so the
// Application is parsed again and deployed to the new set.
const ReasonPlacementChanged = "PlacementChanged"

// SetSelection records sel on rev (AnnoPlacement); an empty sel records
// nothing.
func SetSelection(rev *v1beta1.ApplicationRevision, sel placement.Selection) error {
	if len(sel) == 0 {
		return nil
	}
	b, err := json.Marshal(sel)
	if err != nil {
		return fmt.Errorf("recording the placement of %s: %w", rev.Name, err)
	}
	if rev.Annotations == nil {
		rev.Annotations = map[string]string{}
	}
	rev.Annotations[AnnoPlacement] = string(b)
	return nil
}

// SelectionOf returns the selection recorded on rev, and whether one is:
// a revision made before selections were recorded has none, and neither
// has one of an Application selecting no cluster by labels.
func SelectionOf(rev *v1beta1.ApplicationRevision) (placement.Selection, bool, error) {
	v, ok := rev.Annotations[AnnoPlacement]
	if !ok {
		return nil, false, nil
	}
	var sel placement.Selection
	if err := json.Unmarshal([]byte(v), &sel); err != nil {
		return nil, false, fmt.Errorf("ApplicationRevision %s: annotation %s: %w", rev.Name, AnnoPlacement, err)
	}
	return sel, true, nil
}

// RecordSelection records sel on an existing revision (one made before
// selections were recorded), with a metadata patch. Only rev's metadata
// takes the API server's answer: its spec stays as it was read (decoded;
// the stored one may be compressed, as KubeVela writes it), for the
// reconcile goes on rendering from it.
func (m *Manager) RecordSelection(ctx context.Context, rev *v1beta1.ApplicationRevision, sel placement.Selection) error {
	patched := rev.DeepCopy()
	if err := SetSelection(patched, sel); err != nil {
		return err
	}
	if err := m.writer.Patch(ctx, patched, client.MergeFrom(rev)); err != nil {
		return fmt.Errorf("recording the placement of ApplicationRevision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	rev.ObjectMeta = patched.ObjectMeta
	return nil
}
