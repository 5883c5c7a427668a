package cuex

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// DefaultMemoEntries bounds the results an Engine remembers.
const DefaultMemoEntries = 4096

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

// Remember stores a result under key (the least recently used of
// DefaultMemoEntries results is dropped). Store only values nobody
// modifies afterwards.
func (e *Engine) Remember(key string, val any) { e.memo.put(key, val) }

// Key hashes JSON-encodable parts into a memo key (JSON encoding sorts map
// keys, so equal data gives equal keys).
func Key(parts ...any) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range parts {
		if err := enc.Encode(p); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
