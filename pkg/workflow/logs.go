package workflow

import (
	"errors"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LibraryLogger returns l for kubevela/workflow's logs (it logs through
// klog; SetupLibrary sends klog to it), with what the library would leak
// removed:
//
//   - a failed provider call's error carries the whole CUE value of the
//     call (kubevela/pkg's "function call error for <path>: <error>
//     (value: …)"): the step's parameters, such as the data of a Secret
//     given to apply-object. Errors and string values are logged as
//     readableMessage makes them, the error only; the step's name and type
//     stay in the library's key/values.
//   - a Secret logged as an object (corev1.Secret, or unstructured of kind
//     Secret) is logged with its data and stringData values redacted.
//
// Messages CUE itself composes may still quote a value (a conflict names
// both sides); the library does not log parameters otherwise.
func LibraryLogger(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return l.WithSink(redactingSink{l.GetSink()})
}

type redactingSink struct{ logr.LogSink }

func (s redactingSink) Info(level int, msg string, kv ...any) {
	s.LogSink.Info(level, readableMessage(msg), redactValues(kv)...)
}

func (s redactingSink) Error(err error, msg string, kv ...any) {
	s.LogSink.Error(redactError(err), readableMessage(msg), redactValues(kv)...)
}

func (s redactingSink) WithValues(kv ...any) logr.LogSink {
	return redactingSink{s.LogSink.WithValues(redactValues(kv)...)}
}

func (s redactingSink) WithName(name string) logr.LogSink {
	return redactingSink{s.LogSink.WithName(name)}
}

// WithCallDepth keeps the caller's position right (klog's calls add frames).
func (s redactingSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return redactingSink{cd.WithCallDepth(depth + 1)}
	}
	return s
}

func redactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := readableMessage(msg); r != msg {
		return errors.New(r)
	}
	return err
}

// redacted replaces each value of a Secret's data.
const redacted = "<redacted>"

func redactValues(kv []any) []any {
	if len(kv) == 0 {
		return kv
	}
	out := make([]any, len(kv))
	for i, v := range kv {
		out[i] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return readableMessage(x)
	case error:
		return redactError(x)
	case *corev1.Secret:
		if x == nil {
			return x
		}
		return redactSecret(x.DeepCopy())
	case corev1.Secret:
		return redactSecret(x.DeepCopy())
	case *unstructured.Unstructured:
		if x == nil || !strings.EqualFold(x.GetKind(), "Secret") {
			return x
		}
		c := x.DeepCopy()
		for _, f := range []string{"data", "stringData"} {
			if m, ok := c.Object[f].(map[string]any); ok {
				for k := range m {
					m[k] = redacted
				}
			}
		}
		return c
	}
	return v
}

func redactSecret(s *corev1.Secret) *corev1.Secret {
	for k := range s.Data {
		s.Data[k] = []byte(redacted)
	}
	for k := range s.StringData {
		s.StringData[k] = redacted
	}
	return s
}
