package platformmode

// VerifiedTokens is the number of access tokens this platform remembers as verified.
func (p *Platform) VerifiedTokens() int { return p.verified.len() }
