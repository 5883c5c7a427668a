package render

import (
	"encoding/binary"
	"errors"
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// frozen is a rendered state as the render memo keeps it (cuex.Memo):
// each object packed into one byte slice (pack) instead of a tree of maps,
// several times smaller, and thawed into fresh maps on every recall. The
// memo holds about a dozen such states per Application (a component's
// render, and its workload again after each trait), so this is most of
// the memo's memory.
type frozen struct {
	output      []byte // nil: no output
	outputs     map[string][]byte
	outputOrder []string
	traitRes    []Resource // Object nil; see traitObjs
	traitObjs   [][]byte
	traitIdx    []int
}

// freeze packs st; false when it holds a value pack does not know (then
// it is not memoized).
func freeze(st *rendered) (*frozen, bool) {
	f := &frozen{outputOrder: append([]string(nil), st.outputOrder...), traitIdx: append([]int(nil), st.traitIdx...)}
	var err error
	if st.output != nil {
		if f.output, err = pack(st.output); err != nil {
			return nil, false
		}
	}
	f.outputs = make(map[string][]byte, len(st.outputs))
	for k, v := range st.outputs {
		if f.outputs[k], err = pack(v); err != nil {
			return nil, false
		}
	}
	for _, r := range st.traitRes {
		b, err := pack(r.Object.Object)
		if err != nil {
			return nil, false
		}
		r.Object = nil
		f.traitRes = append(f.traitRes, r)
		f.traitObjs = append(f.traitObjs, b)
	}
	return f, true
}

// thaw returns a fresh rendered state, which the caller may modify.
func (f *frozen) thaw() *rendered {
	st := &rendered{outputOrder: append([]string(nil), f.outputOrder...), outputs: make(map[string]map[string]any, len(f.outputs)),
		traitIdx: append([]int(nil), f.traitIdx...)}
	if f.output != nil {
		st.output = unpackMap(f.output)
	}
	for k, b := range f.outputs {
		st.outputs[k] = unpackMap(b)
	}
	for i, r := range f.traitRes {
		r.Object = &unstructured.Unstructured{Object: unpackMap(f.traitObjs[i])}
		st.traitRes = append(st.traitRes, r)
	}
	return st
}

// Tags of pack's encoding: a tag byte, then for strings, maps and lists a
// uvarint length (map entries are key string, value), for integers a
// varint, for floats their 8 IEEE 754 bytes. int and int64 stay distinct,
// as CUE's decoding and the memo keys (cuex.Key) keep them.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagString
	tagInt
	tagInt64
	tagFloat
	tagMap
	tagList
)

var errUnpackable = errors.New("a value of a type the render memo does not pack")

// pack encodes JSON-like data (nil, bool, string, int, int64, float64,
// map[string]any, []any).
func pack(v any) ([]byte, error) {
	b, err := appendPacked(make([]byte, 0, 1024), v)
	if err != nil {
		return nil, err
	}
	// Kept for long: no spare capacity.
	return append([]byte(nil), b...), nil
}

func appendPacked(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		if x {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case string:
		return appendString(append(b, tagString), x), nil
	case int:
		return binary.AppendVarint(append(b, tagInt), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(b, tagInt64), x), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(x)), nil
	case map[string]any:
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(x)))
		for k, e := range x {
			b = appendString(b, k)
			if b, err = appendPacked(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		for _, e := range x {
			if b, err = appendPacked(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, errUnpackable
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// unpackMap decodes what pack made of a map.
func unpackMap(b []byte) map[string]any {
	u := unpacker{b: b}
	m, _ := u.value().(map[string]any)
	return m
}

// unpacker reads pack's encoding; the input is always pack's own, so it
// is not checked beyond what keeps it from panicking.
type unpacker struct {
	b []byte
	i int
}

func (u *unpacker) uvarint() uint64 {
	v, n := binary.Uvarint(u.b[u.i:])
	u.i += n
	return v
}

func (u *unpacker) str() string {
	n := int(u.uvarint())
	s := string(u.b[u.i : u.i+n])
	u.i += n
	return s
}

func (u *unpacker) value() any {
	tag := u.b[u.i]
	u.i++
	switch tag {
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagString:
		return u.str()
	case tagInt, tagInt64:
		v, n := binary.Varint(u.b[u.i:])
		u.i += n
		if tag == tagInt {
			return int(v)
		}
		return v
	case tagFloat:
		v := math.Float64frombits(binary.LittleEndian.Uint64(u.b[u.i:]))
		u.i += 8
		return v
	case tagMap:
		n := int(u.uvarint())
		m := make(map[string]any, n)
		for range n {
			k := u.str()
			m[k] = u.value()
		}
		return m
	case tagList:
		n := int(u.uvarint())
		l := make([]any, n)
		for i := range l {
			l[i] = u.value()
		}
		return l
	}
	return nil
}
