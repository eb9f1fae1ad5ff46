package platformmode

// VerifiedTokens is the number of access tokens this platform remembers as verified.
func (p *Platform) VerifiedTokens() int { return p.verified.len() }

// ForgetVerifiedTokens empties the cache of verified access tokens (benchmarks).
func (p *Platform) ForgetVerifiedTokens() {
	p.verified.mu.Lock()
	clear(p.verified.m)
	p.verified.mu.Unlock()
}
