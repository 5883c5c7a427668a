package cuex

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"math"
	"sort"
	"sync"
)

// DefaultMemoEntries bounds the results an Engine remembers (or the
// Engines sharing one Memo): about twelve per Application of four
// components and traits (each component and trait render, each
// properties check, each status evaluation), so that a resync of 1,000
// such Applications finds every result it had at the previous one. A
// result is what a template yields, not CUE's graph: a few Kubernetes
// objects (package render keeps them packed, about their JSON size: a few
// KiB), or a status of a few bytes.
const DefaultMemoEntries = 12288

// Memo is a bounded store of evaluation results (Engine.Recall,
// Engine.Remember) that Engines can share (WithMemo): Engines checked out
// of a pool by turns then find each other's results, and the bound holds
// for all of them together.
type Memo struct{ l *lru }

// NewMemo returns a Memo keeping the entries most recently used results
// (DefaultMemoEntries when entries <= 0).
func NewMemo(entries int) *Memo {
	if entries <= 0 {
		entries = DefaultMemoEntries
	}
	return &Memo{l: newLRU(entries)}
}

// Len is the number of results kept.
func (m *Memo) Len() int {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	return m.l.order.Len()
}

// lru is a size-bounded least-recently-used map.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent; values are *lruEntry
	items map[string]*list.Element
}

type lruEntry struct {
	key string
	val any
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (l *lru) get(key string) (any, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.items[key]
	if !ok {
		return nil, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*lruEntry).val, true
}

func (l *lru) put(key string, val any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[key]; ok {
		el.Value.(*lruEntry).val = val
		l.order.MoveToFront(el)
		return
	}
	l.items[key] = l.order.PushFront(&lruEntry{key: key, val: val})
	for l.order.Len() > l.max {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry).key)
	}
}

// Recall returns a result stored with Remember under key. Evaluating CUE
// is a pure function of the template and the values filled in, so callers
// that put all of them in the key (see Key) may skip the evaluation. The
// value is shared: callers must not modify it (copy it first).
func (e *Engine) Recall(key string) (any, bool) { return e.memo.get(key) }

// Remember stores a result under key (the least recently used result is
// dropped beyond the Memo's bound, DefaultMemoEntries by default). Store only values nobody
// modifies afterwards.
func (e *Engine) Remember(key string, val any) { e.memo.put(key, val) }

// Key hashes JSON-like parts into a memo key: equal data gives equal keys
// (map keys are visited in sorted order; int64 and float64 stay distinct,
// as they are in CUE). Values of other types are hashed through their JSON
// encoding.
func Key(parts ...any) (string, error) {
	h := sha256.New()
	w := &hashWriter{h: h}
	for _, p := range parts {
		if err := w.value(p); err != nil {
			return "", err
		}
		w.byte(0xff)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type hashWriter struct {
	h   hash.Hash
	buf [9]byte
}

func (w *hashWriter) byte(b byte) { w.buf[0] = b; w.h.Write(w.buf[:1]) }

func (w *hashWriter) uint(tag byte, u uint64) {
	w.buf[0] = tag
	binary.LittleEndian.PutUint64(w.buf[1:], u)
	w.h.Write(w.buf[:9])
}

func (w *hashWriter) str(tag byte, s string) {
	w.uint(tag, uint64(len(s)))
	_, _ = io.WriteString(w.h, s) // a hash.Hash never returns an error
}

func (w *hashWriter) value(x any) error {
	switch v := x.(type) {
	case nil:
		w.byte('n')
	case bool:
		if v {
			w.byte('t')
		} else {
			w.byte('f')
		}
	case string:
		w.str('s', v)
	case int:
		w.uint('i', uint64(v))
	case int64:
		w.uint('i', uint64(v))
	case float64:
		w.uint('d', math.Float64bits(v))
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.uint('m', uint64(len(keys)))
		for _, k := range keys {
			w.str('k', k)
			if err := w.value(v[k]); err != nil {
				return err
			}
		}
	case map[string]string:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.uint('M', uint64(len(keys)))
		for _, k := range keys {
			w.str('k', k)
			w.str('s', v[k])
		}
	case []any:
		w.uint('l', uint64(len(v)))
		for _, e := range v {
			if err := w.value(e); err != nil {
				return err
			}
		}
	case []string:
		w.uint('L', uint64(len(v)))
		for _, e := range v {
			w.str('s', e)
		}
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		w.str('j', string(b))
	}
	return nil
}
