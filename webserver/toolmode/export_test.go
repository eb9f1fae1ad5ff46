package toolmode

// ForgetOpenedLtiks empties the cache of opened ltiks, so a benchmark can measure the
// cold path of a request.
func ForgetOpenedLtiks(t *Tool) { t.ltiks = newLtikCache() }
