package helm

import (
	"container/list"
	"sync"
)

// Cache keeps chart archives by content digest ("sha256:<hex>") with a
// bound on the total bytes held; the least recently used entries go first.
// Archives are cached, not loaded charts, because Helm mutates a chart while
// installing it. Safe for concurrent use.
type Cache struct {
	maxBytes int64

	mu    sync.Mutex
	size  int64
	order *list.List // front = most recently used; values are *cacheEntry
	items map[string]*list.Element
}

type cacheEntry struct {
	key  string
	data []byte
}

// DefaultCacheBytes bounds a Fetcher's archive cache (the controller's
// --chart-cache-bytes): a chart archive is typically tens to hundreds of
// KiB, so 32 MiB keeps a few hundred distinct charts while staying a small
// share of a 1 GiB controller pod.
const DefaultCacheBytes = 32 << 20

// NewCache returns a Cache holding at most maxBytes of archives. An archive
// larger than maxBytes is never cached; maxBytes <= 0 disables caching.
func NewCache(maxBytes int64) *Cache {
	return &Cache{maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns the archive stored under digest.
func (c *Cache) Get(digest string) ([]byte, bool) {
	if c == nil || digest == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[digest]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).data, true
}

// Put stores data under digest, evicting least recently used archives to
// stay within the bound. Callers must not modify data afterwards.
func (c *Cache) Put(digest string, data []byte) {
	if c == nil || digest == "" || int64(len(data)) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[digest]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.items[digest] = c.order.PushFront(&cacheEntry{key: digest, data: data})
	c.size += int64(len(data))
	for c.size > c.maxBytes {
		last := c.order.Back()
		e := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.items, e.key)
		c.size -= int64(len(e.data))
	}
}

// Len returns the number of archives and the bytes held.
func (c *Cache) Len() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.size
}
