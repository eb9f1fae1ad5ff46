package toolmode

// ForgetOpenedLtiks empties the cache of opened ltiks, so a benchmark can measure the
// cold path of a request.
func ForgetOpenedLtiks(t *Tool) {
	c := t.ltiks
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.order {
		delete(c.entries, k)
	}
	c.order, c.next = c.order[:0], 0
}
