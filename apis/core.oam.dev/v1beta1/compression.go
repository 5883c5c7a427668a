package v1beta1

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// CompressionType names how a Compression's data is compressed. The values
// are KubeVela's (its ZstdResourceTracker / GzipResourceTracker and
// ZstdApplicationRevision / GzipApplicationRevision feature gates).
type CompressionType string

// Compression types.
const (
	// CompressionNone (empty) means the record is stored in plain fields.
	CompressionNone CompressionType = ""
	// CompressionZstd is base64 of zstd-compressed JSON.
	CompressionZstd CompressionType = "zstd"
	// CompressionGzip is base64 of gzip-compressed JSON.
	CompressionGzip CompressionType = "gzip"
)

// Compression holds a record's fields compressed, as KubeVela stores
// ResourceTracker managedResources and ApplicationRevision specs. oamflow
// reads it (DecodeTracker, DecodeRevision) and always writes plain fields,
// with no compression, which KubeVela reads too.
type Compression struct {
	// Type is zstd, gzip or empty (not compressed).
	// +optional
	Type CompressionType `json:"type,omitempty"`
	// Data is the base64 of the compressed JSON.
	// +optional
	Data string `json:"data,omitempty"`
}

// maxDecompressed bounds what one compressed record may expand to: a stored
// object is at most a few MiB (etcd's limit), so more than this is not a
// record but an attack or corruption.
const maxDecompressed = 64 << 20

// decompress returns the JSON held by c (nil when c holds nothing).
func (c *Compression) decompress() ([]byte, error) {
	if c == nil || c.Type == CompressionNone {
		return nil, nil
	}
	raw, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return nil, fmt.Errorf("compression.data: not base64: %w", err)
	}
	var r io.Reader
	switch c.Type {
	case CompressionZstd:
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
		if err != nil {
			return nil, fmt.Errorf("compression.data: zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("compression.data: gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("compression.type: unsupported %q, expected zstd, gzip or empty", c.Type)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("compression.data: %s: %w", c.Type, err)
	}
	if len(out) > maxDecompressed {
		return nil, fmt.Errorf("compression.data: expands beyond %d bytes", maxDecompressed)
	}
	return out, nil
}

// DecodeError says a stored ResourceTracker or ApplicationRevision could not
// be decoded; whoever reads it must leave its Application alone.
// +kubebuilder:object:generate=false
type DecodeError struct {
	// Kind and Name identify the record.
	Kind, Name string
	Err        error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s %s cannot be decoded (%v); its Application is left untouched until the record is repaired or deleted", e.Kind, e.Name, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeTracker puts rt in oamflow's plain form, in place: a compressed
// spec (KubeVela's spec.compression) is expanded into
// spec.managedResources, and each entry's KubeVela-named copy of the object
// (raw) becomes Data. A plain tracker is left as it is. On error rt is
// unchanged and the error is a *DecodeError. It is the one place trackers
// are decoded: every reader of ResourceTrackers calls it.
func DecodeTracker(rt *ResourceTracker) error {
	if rt.Spec.Compression != nil && rt.Spec.Compression.Type != CompressionNone {
		b, err := rt.Spec.Compression.decompress()
		if err != nil {
			return &DecodeError{Kind: "ResourceTracker", Name: rt.Name, Err: err}
		}
		var entries []ManagedResource
		if err := json.Unmarshal(b, &entries); err != nil {
			return &DecodeError{Kind: "ResourceTracker", Name: rt.Name, Err: fmt.Errorf("compressed spec.managedResources: %w", err)}
		}
		rt.Spec.ManagedResources = append(rt.Spec.ManagedResources, entries...)
	}
	rt.Spec.Compression = nil
	for i := range rt.Spec.ManagedResources {
		e := &rt.Spec.ManagedResources[i]
		if e.Data == nil && e.Raw != nil {
			e.Data = e.Raw
		}
		e.Raw = nil
	}
	return nil
}

// DecodeRevision puts rev in oamflow's plain form, in place: a compressed
// spec (KubeVela's spec.compression) replaces the placeholder fields it
// stands for. On error rev is unchanged and the error is a *DecodeError.
func DecodeRevision(rev *ApplicationRevision) error {
	if rev.Spec.Compression == nil || rev.Spec.Compression.Type == CompressionNone {
		rev.Spec.Compression = nil
		return nil
	}
	b, err := rev.Spec.Compression.decompress()
	if err != nil {
		return &DecodeError{Kind: "ApplicationRevision", Name: rev.Namespace + "/" + rev.Name, Err: err}
	}
	var spec ApplicationRevisionSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return &DecodeError{Kind: "ApplicationRevision", Name: rev.Namespace + "/" + rev.Name, Err: fmt.Errorf("compressed spec: %w", err)}
	}
	spec.Compression = nil
	rev.Spec = spec
	return nil
}
