package helm

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func TestCache(t *testing.T) {
	cases := []struct {
		reason   string
		max      int64
		puts     []string // keys; each value is 4 bytes
		gets     []string // touched in order after the puts
		put2     []string // then these are put
		want     []string // present at the end
		notWant  []string
		entries  int
		sizeWant int64
	}{
		{reason: "within the bound everything stays", max: 12, puts: []string{"a", "b", "c"}, want: []string{"a", "b", "c"}, entries: 3, sizeWant: 12},
		{reason: "the least recently used goes first", max: 8, puts: []string{"a", "b"}, gets: []string{"a"}, put2: []string{"c"},
			want: []string{"a", "c"}, notWant: []string{"b"}, entries: 2, sizeWant: 8},
		{reason: "an archive larger than the bound is never cached", max: 3, puts: []string{"a"}, notWant: []string{"a"}},
		{reason: "a zero bound disables the cache", max: 0, puts: []string{"a"}, notWant: []string{"a"}},
		{reason: "putting a key twice keeps one copy", max: 100, puts: []string{"a", "a"}, want: []string{"a"}, entries: 1, sizeWant: 4},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			c := NewCache(tc.max)
			for _, k := range tc.puts {
				c.Put(k, []byte("data"))
			}
			for _, k := range tc.gets {
				c.Get(k)
			}
			for _, k := range tc.put2 {
				c.Put(k, []byte("data"))
			}
			for _, k := range tc.want {
				_, ok := c.Get(k)
				assert.True(t, ok, k)
			}
			for _, k := range tc.notWant {
				_, ok := c.Get(k)
				assert.False(t, ok, k)
			}
			n, size := c.Len()
			assert.Equal(t, tc.entries, n)
			assert.Equal(t, tc.sizeWant, size)
		})
	}
}
