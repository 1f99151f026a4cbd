package vfs

import "sync"

// contentCache keeps recently read or written contents by SHA-256, so that
// opening a file whose listed hash is cached reads no content from the
// store. It is content-addressed, so an entry is never stale: freshness
// comes from the listing (a file's hash is at most Config.Refresh old).
// Eviction is first-in first-out once maxBytes is exceeded.
type contentCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	bySHA    map[string]string
	order    []string
}

func newContentCache(maxBytes int) *contentCache {
	return &contentCache{maxBytes: maxBytes, bySHA: map[string]string{}}
}

func (c *contentCache) get(sha string) (string, bool) {
	if c == nil || sha == "" {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.bySHA[sha]
	return s, ok
}

func (c *contentCache) put(sha, content string) {
	if c == nil || sha == "" || len(content) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.bySHA[sha]; ok {
		return
	}
	c.bySHA[sha] = content
	c.order = append(c.order, sha)
	c.bytes += len(content)
	for c.bytes > c.maxBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.bySHA[old])
		delete(c.bySHA, old)
	}
}
