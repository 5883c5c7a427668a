package helmspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// LabelDigest is the release label holding the desired-state digest of the
// revision: a hex SHA-256 prefix (40 characters, a valid label value) over
// the chart digest, release name and namespace, and merged values.
const LabelDigest = "helm.oamflow.dev/digest"

// ReleaseDigest returns the desired-state digest. Values are encoded as
// JSON, whose map keys are sorted, so equal values give equal digests.
func ReleaseDigest(chartDigest, name, namespace string, values map[string]any) (string, error) {
	vals, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encode values: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "chart=%s\x00release=%s/%s\x00values=", chartDigest, namespace, name)
	h.Write(vals)
	return hex.EncodeToString(h.Sum(nil))[:40], nil
}
