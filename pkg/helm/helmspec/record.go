package helmspec

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
)

// Helm's release records as its "secret" storage driver keeps them (the
// default of the helm CLI, and the driver pkg/helm's Client uses): one
// Secret per release revision in the release namespace, labelled
// owner=helm, name=<release>, version=<revision> and
// status=<deployed|superseded|failed|pending-…>. Its data key "release"
// holds the release as base64 of (usually gzipped) JSON whose "manifest"
// is the rendered multi-document YAML. This is the one place oamflow
// reads them without Helm's SDK (the CLI's `status --tree` does, and does
// not link the SDK's storage package); pkg/helm's tests check it against
// records Helm's own driver wrote.
const (
	RecordLabelOwner   = "owner"
	RecordOwner        = "helm"
	RecordLabelName    = "name"
	RecordLabelVersion = "version"
	RecordLabelStatus  = "status"
	RecordDataKey      = "release"
	recordDeployed     = "deployed"

	// maxRecordBytes bounds a decompressed release record (a Secret holds
	// at most 1 MiB; charts compress well, but not 64 times).
	maxRecordBytes = 64 << 20
)

// ReleaseRecord is the part of a Helm release record oamflow reads.
type ReleaseRecord struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Manifest  string `json:"manifest"`
	// Chart is the chart the release was rendered from, as Helm keeps it:
	// metadata, templates, default values, schema and files, but not its
	// subcharts.
	Chart *chart.Chart `json:"chart,omitempty"`
}

// RecordLabels selects the release records of release name (list Secrets
// in the release namespace with them).
func RecordLabels(name string) map[string]string {
	return map[string]string{RecordLabelOwner: RecordOwner, RecordLabelName: name}
}

// LatestRecord picks, among the records of one release, the deployed one
// with the highest version, else the one with the highest version (a
// release whose install failed or is pending); nil when there is none.
func LatestRecord(secrets []corev1.Secret) *corev1.Secret {
	var best *corev1.Secret
	bestDeployed, bestVersion := false, -1
	for i := range secrets {
		s := &secrets[i]
		v, err := strconv.Atoi(s.Labels[RecordLabelVersion])
		if err != nil {
			v = 0
		}
		deployed := s.Labels[RecordLabelStatus] == recordDeployed
		if best == nil || (deployed && !bestDeployed) || (deployed == bestDeployed && v > bestVersion) {
			best, bestDeployed, bestVersion = s, deployed, v
		}
	}
	return best
}

// DecodeRecord decodes the release held by a record Secret.
func DecodeRecord(s *corev1.Secret) (*ReleaseRecord, error) {
	r, err := decodeRecordData(s.Data[RecordDataKey])
	if err != nil {
		return nil, fmt.Errorf("Helm release record Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return r, nil
}

// decodeRecordData decodes the "release" value of a record Secret (Secret
// data, i.e. already base64-decoded once by the API): base64 of JSON,
// gzipped or not. The decompressed size is bounded by maxRecordBytes.
func decodeRecordData(data []byte) (*ReleaseRecord, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("data.%s is empty", RecordDataKey)
	}
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("data.%s is not base64: %w", RecordDataKey, err)
	}
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("data.%s: gzip: %w", RecordDataKey, err)
		}
		raw, err = io.ReadAll(io.LimitReader(zr, maxRecordBytes+1))
		if err != nil {
			return nil, fmt.Errorf("data.%s: gzip: %w", RecordDataKey, err)
		}
		if len(raw) > maxRecordBytes {
			return nil, fmt.Errorf("data.%s: more than %d bytes decompressed", RecordDataKey, maxRecordBytes)
		}
	}
	r := &ReleaseRecord{}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("data.%s: not a Helm release (JSON): %w", RecordDataKey, err)
	}
	return r, nil
}
