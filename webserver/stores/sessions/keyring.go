package sessions

import (
	"bytes"
	"compress/flate"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	kflate "github.com/klauspost/compress/flate"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"

	"github.com/ltiop/ltiop/internal/keyring"
)

// MaxTokenLength is the longest token Open looks at; anything longer is ErrInvalid without
// being parsed. An ltik of large launch claims stays well below it.
const MaxTokenLength = 64 << 10

// maxEnvelope bounds the inflated plaintext of a token (a deflate bomb would need our key,
// but the bound costs nothing).
const maxEnvelope = 1 << 20

// typPrefix starts the typ header of every sealed token: typ is "ltiop-" + purpose.
const typPrefix = "ltiop-"

// Keyring seals with the newest key whose NotBefore has passed and opens with any key it holds.
// It is safe for concurrent use; Replace swaps the whole key set atomically, and tokens sealed
// with a key that leaves the set no longer open. The zero value is an empty keyring. Attach,
// Ready and IDs are keyring.Keyring's.
type Keyring struct {
	ring
	// now is the clock of Seal (nil: time.Now); tests replace it.
	now func() time.Time
}

// ring is the part of Keyring every keyring of the service Secret has.
type ring = keyring.Keyring[keyring.SealingKey, *sealers, sealingKeys]

// sealingKeys are the keys of the sealing keyring, prepared as sealers.
type sealingKeys struct{ keyring.SealingKind }

// Name names the keyring in errors and logs.
func (sealingKeys) Name() string { return "sessions" }

// knownPurposes are those whose headers are encoded once per key set (and whose tokens
// Open splits without jwe.Parse); any other valid purpose works, at jwx's generic cost.
var knownPurposes = []string{PurposeLTIK, PurposeServiceKey, PurposeState, PurposeMessageHint, PurposePayload, PurposeDeepLinkReturn, PurposeListCursor,
	PurposePendingLaunch, PurposeRegistration, PurposeNoticeKey, PurposeServiceGrant, PurposeToolRegistration}

// protectedHeaders returns, as jwx headers, the protected header of a token of purpose
// sealed with key: kid, typ and zip (encodedHeader adds alg "dir" and enc "A256GCM", as
// jwe.Encrypt does).
func protectedHeaders(kid, purpose string) (jwe.Headers, error) {
	h := jwe.NewHeaders()
	if err := h.Set(jwe.KeyIDKey, kid); err != nil {
		return nil, err
	}
	if err := h.Set(jwe.TypeKey, typPrefix+purpose); err != nil {
		return nil, err
	}
	if err := h.Set(jwe.CompressionKey, jwa.Deflate()); err != nil {
		return nil, err
	}
	return h, nil
}

// NewKeyring returns a keyring holding keys. An empty keyring is allowed (it is not Ready,
// and Seal fails) so that the web server can be built before the service Secret is read.
func NewKeyring(keys []keyring.SealingKey) (*Keyring, error) {
	k := &Keyring{}
	if len(keys) == 0 {
		return k, nil
	}
	if err := k.Replace(keys); err != nil {
		return nil, err
	}
	return k, nil
}

// Replace swaps in a new key set (see keyring.Keyring.Replace), keeping its own copy of
// the secrets.
func (k *Keyring) Replace(keys []keyring.SealingKey) error {
	own := make([]keyring.SealingKey, len(keys))
	for i, key := range keys {
		key.Secret = bytes.Clone(key.Secret) // the keyring's own copy, never handed out
		own[i] = key
	}
	return k.ring.Replace(own)
}

// validPurpose keeps purposes short and plain: they go into a header and the envelope unescaped.
func validPurpose(p string) bool {
	if len(p) == 0 || len(p) > 32 {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Seal encrypts payload for purpose, valid for ttl from now. The token is a compact JWE:
// alg "dir", enc "A256GCM", zip "DEF", and a protected header with the key's kid and typ
// "ltiop-"+purpose. The encrypted envelope is
//
//	{"p":purpose,"exp":unix,"iat":unix,"jti":id,"d":payload}
//
// with the payload written verbatim as d: it is meant to be JSON (then the envelope is a
// JSON object), but any bytes come back exactly as sealed. The token id (jti) is 128 random
// bits, base64url; Open returns it for the replay store.
func (k *Keyring) Seal(purpose string, payload []byte, ttl time.Duration) (string, error) {
	return k.sealAt(purpose, payload, ttl, k.clock())
}

// WithClock makes k seal at the times now gives, for tests that move time; it returns k.
// Call it before k seals anything.
func (k *Keyring) WithClock(now func() time.Time) *Keyring {
	k.now = now
	return k
}

// clock is the time Seal and SealUntil seal at: k.now when a test set it.
func (k *Keyring) clock() time.Time {
	if k.now != nil {
		return k.now()
	}
	return time.Now()
}

// SealUntil is Seal for a token that must expire at exp, whenever it is sealed (a service
// key made on demand still expires a fixed time after its launch). exp must be at least a
// second away.
func (k *Keyring) SealUntil(purpose string, payload []byte, exp time.Time) (string, error) {
	at := k.clock()
	return k.sealAt(purpose, payload, exp.Sub(at), at)
}

func (k *Keyring) sealAt(purpose string, payload []byte, ttl time.Duration, now time.Time) (string, error) {
	if !validPurpose(purpose) {
		return "", fmt.Errorf("sessions: invalid purpose %q", purpose)
	}
	if ttl < time.Second {
		return "", fmt.Errorf("sessions: ttl %v is shorter than a second", ttl)
	}
	set := keyring.Keys(&k.ring)
	key, ok := set.Current(now)
	if !ok {
		return "", errors.New("sessions: the keyring has no keys yet")
	}
	// exp is rounded up to the second: a token never expires before now+ttl.
	exp := now.Add(ttl)
	expUnix := exp.Unix()
	if exp.Nanosecond() != 0 {
		expUnix++
	}

	sl := set.Data()
	header, err := sl.header(key.ID, purpose)
	if err != nil {
		return "", fmt.Errorf("sessions: encoding the header: %w", err)
	}

	z := deflaters.Get().(*deflater)
	defer z.release()
	z.env = appendEnvelope(z.env[:0], purpose, expUnix, now.Unix(), newTokenID(), payload)
	compressed, err := z.deflate()
	if err != nil {
		return "", fmt.Errorf("sessions: compressing: %w", err)
	}
	if n := compactLen(header, len(compressed)); n > MaxTokenLength {
		return "", fmt.Errorf("sessions: the sealed token would be %d bytes, more than Open accepts (%d)", n, MaxTokenLength)
	}
	// jwx's content cipher does not keep compressed, so z can go back to the pool
	// afterwards; the token is built in z's buffer too, and copied once into the string.
	tok, err := appendCompact(slices.Grow(z.tok[:0], compactLen(header, len(compressed))), sl.cipher, key.Secret, header, compressed)
	if err != nil {
		return "", fmt.Errorf("sessions: sealing: %w", err)
	}
	z.tok = tok
	return string(tok), nil
}

// newTokenID returns 128 random bits, base64url without padding (22 characters).
func newTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func appendEnvelope(dst []byte, purpose string, exp, iat int64, jti string, payload []byte) []byte {
	dst = append(dst, `{"p":"`...)
	dst = append(dst, purpose...)
	dst = append(dst, `","exp":`...)
	dst = strconv.AppendInt(dst, exp, 10)
	dst = append(dst, `,"iat":`...)
	dst = strconv.AppendInt(dst, iat, 10)
	dst = append(dst, `,"jti":"`...)
	dst = append(dst, jti...)
	dst = append(dst, `","d":`...)
	dst = append(dst, payload...)
	return append(dst, '}')
}

// deflater is a reusable raw DEFLATE compressor (RFC 1951, as "zip":"DEF" requires) at
// BestSpeed, jwx's level: a 4 KB claim set compresses to about 40%. It is klauspost's
// flate, not the standard library's: the same format at about half the CPU (an ltik's
// deflate was a sixth of a launch; compress/flate still inflates it). Envelopes
// below storeBelow are written as stored blocks instead: building the Huffman tables costs
// tens of µs whatever the size, and a login state (random ids mostly) would shrink by a
// few bytes only. Both are plain DEFLATE: every replica and jwe.Decrypt inflate either.
type deflater struct {
	env   []byte
	tok   []byte // the sealed token, before its copy into a string
	out   bytes.Buffer
	fast  *kflate.Writer
	store *kflate.Writer
}

// storeBelow is the envelope size under which deflate stores rather than compresses.
const storeBelow = 1024

var deflaters = sync.Pool{New: func() any {
	z := &deflater{}
	z.fast, _ = kflate.NewWriter(&z.out, kflate.BestSpeed) // only fails on a bad level
	z.store, _ = kflate.NewWriter(&z.out, kflate.NoCompression)
	return z
}}

// release returns z to the pool, unless a large payload made its buffers large.
func (z *deflater) release() {
	if cap(z.env) <= MaxTokenLength && z.out.Cap() <= MaxTokenLength && cap(z.tok) <= MaxTokenLength {
		deflaters.Put(z)
	}
}

// deflate compresses z.env. The result is z's buffer: valid until z goes back to the pool.
func (z *deflater) deflate() ([]byte, error) {
	w := z.fast
	if len(z.env) < storeBelow {
		w = z.store
	}
	z.out.Reset()
	w.Reset(&z.out)
	if _, err := w.Write(z.env); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return z.out.Bytes(), nil
}

// parseEnvelope reads the envelope appendEnvelope writes, in exactly that layout: the
// plaintext is authenticated, so anything else is not ours.
func parseEnvelope(env []byte, purpose string) (o Opened, ok bool) {
	s := env
	cut := func(prefix string) bool {
		if len(s) < len(prefix) || string(s[:len(prefix)]) != prefix {
			return false
		}
		s = s[len(prefix):]
		return true
	}
	number := func() (int64, bool) {
		n := 0
		for n < len(s) && n < 19 && '0' <= s[n] && s[n] <= '9' {
			n++
		}
		v, err := strconv.ParseInt(string(s[:n]), 10, 64)
		s = s[n:]
		return v, err == nil
	}
	if !cut(`{"p":"`) || !cut(purpose) || !cut(`","exp":`) {
		return o, false
	}
	exp, ok := number()
	if !ok || !cut(`,"iat":`) {
		return o, false
	}
	iat, ok := number()
	if !ok || !cut(`,"jti":"`) {
		return o, false
	}
	end := bytes.IndexByte(s, '"')
	if end <= 0 || !keyring.ValidID(string(s[:end])) {
		return o, false
	}
	o.ID = string(s[:end])
	s = s[end+1:]
	if !cut(`,"d":`) || len(s) == 0 || s[len(s)-1] != '}' {
		return o, false
	}
	o.Payload = s[: len(s)-1 : len(s)-1]
	o.IssuedAt, o.Expires = time.Unix(iat, 0), time.Unix(exp, 0)
	return o, true
}

// Opened is what a token carried.
type Opened struct {
	Payload  []byte
	ID       string // the token id (jti): feed it to a replay.Store with Expires
	KeyID    string // the sealing key that opened it: a cache of opened tokens checks Holds
	IssuedAt time.Time
	Expires  time.Time
}

// Open decrypts token and checks that it was sealed for purpose with a key the keyring
// holds and that it has not expired at now. It returns the payload and the token id.
// Errors are ErrExpired or ErrInvalid, nothing more specific.
func (k *Keyring) Open(purpose string, token string, now time.Time) (payload []byte, id string, err error) {
	o, err := k.OpenToken(purpose, token, now)
	if err != nil {
		return nil, "", err
	}
	return o.Payload, o.ID, nil
}

// OpenToken is Open returning the token's times as well: a single-use token (state) is
// remembered by a replay.Store until Expires.
//
// A token whose header is byte for byte one jwx encoded for us (see splitOwn) is split
// here; any other goes through jwx's parser (jwe.Parse) and its header is checked
// (sealedByUs). Either way jwx decrypts it (the A256GCM content cipher of jwx's jwebb
// building blocks, made once per key set, with the protected header as transmitted as the
// AAD, as RFC 7516 §5.2 says); the header is checked first and the DEF payload is
// inflated here with a reused decompressor. This is what jwe.Decrypt does, without what it
// costs on every call: a new 40 KB decompressor, header clones and merges. Every token Seal
// makes also opens with jwe.Decrypt, and every token jwe.Encrypt makes with our header
// opens here (see the tests).
func (k *Keyring) OpenToken(purpose string, token string, now time.Time) (Opened, error) {
	if len(token) > MaxTokenLength || !validPurpose(purpose) || !compactShape(token) {
		return Opened{}, ErrInvalid
	}
	set := keyring.Keys(&k.ring)
	sl := set.Data()
	if sl == nil { // the empty keyring opens nothing
		return Opened{}, ErrInvalid
	}
	var kid string
	var aad, iv, ct, tag []byte
	if own, a, i, c, t, ok := sl.splitOwn([]byte(token)); ok {
		if own.purpose != purpose {
			return Opened{}, ErrInvalid
		}
		kid, aad, iv, ct, tag = own.kid, a, i, c, t
	} else {
		msg, err := jwe.ParseString(token)
		if err != nil {
			return Opened{}, ErrInvalid
		}
		if kid, ok = sealedByUs(msg, typPrefix+purpose); !ok {
			return Opened{}, ErrInvalid
		}
		iv, ct, tag = msg.InitializationVector(), msg.CipherText(), msg.Tag()
		aad = []byte(token[:strings.IndexByte(token, '.')])
	}
	key, ok := set.Lookup(kid)
	if !ok {
		return Opened{}, ErrInvalid
	}
	// A256GCM's IV and tag have one size each; anything else is not ours (and jwx's cipher
	// would only turn GCM's panic on a bad nonce size into an error).
	if len(iv) != gcmIVSize || len(tag) != gcmTagSize {
		return Opened{}, ErrInvalid
	}
	compressed, err := sl.cipher.Decrypt(key.Secret, iv, ct, tag, aad)
	if err != nil {
		return Opened{}, ErrInvalid
	}
	env, err := inflate(compressed)
	if err != nil || len(env) == 0 {
		return Opened{}, ErrInvalid
	}
	o, ok := parseEnvelope(env, purpose)
	if !ok {
		return Opened{}, ErrInvalid
	}
	if !now.Before(o.Expires) {
		return Opened{}, ErrExpired
	}
	o.KeyID = kid
	return o, nil
}

// Holds reports whether the keyring still holds the key kid: a token sealed with a key
// since retired (or dropped from the Secret to revoke its tokens) no longer opens, and
// nothing opened with it may be served from a cache either.
func (k *Keyring) Holds(kid string) bool {
	_, ok := keyring.Keys(&k.ring).Lookup(kid)
	return ok
}

// compactShape reports whether token is shaped like a compact JWE of ours: five parts of
// canonical unpadded base64url (so that a token has exactly one spelling), the first one
// (the protected header, the AAD as it is) not empty.
func compactShape(token string) bool {
	for i := range 5 {
		part, rest, found := strings.Cut(token, ".")
		if i == 0 && part == "" || !canonicalBase64URL(part) || found != (i < 4) {
			return false
		}
		token = rest
	}
	return true
}

// canonicalBase64URL reports whether s is unpadded base64url whose unused trailing bits are
// zero (the decoder would ignore them, so another spelling would decode the same).
func canonicalBase64URL(s string) bool {
	var last byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z':
			last = c - 'A'
		case 'a' <= c && c <= 'z':
			last = c - 'a' + 26
		case '0' <= c && c <= '9':
			last = c - '0' + 52
		case c == '-':
			last = 62
		case c == '_':
			last = 63
		default:
			return false
		}
	}
	switch len(s) % 4 {
	case 1:
		return false
	case 2:
		return last&0x0f == 0
	case 3:
		return last&0x03 == 0
	}
	return true
}

// sealedByUs returns the kid of msg if its header is one Seal writes for typ: alg dir,
// enc A256GCM, zip DEF, no encrypted key, no crit.
func sealedByUs(msg *jwe.Message, typ string) (kid string, ok bool) {
	h := msg.ProtectedHeaders()
	if h == nil || h.Has(jwe.CriticalKey) {
		return "", false
	}
	if v, _ := h.Type(); v != typ {
		return "", false
	}
	if v, _ := h.Algorithm(); v != jwa.DIRECT() {
		return "", false
	}
	if v, _ := h.ContentEncryption(); v != jwa.A256GCM() {
		return "", false
	}
	if v, _ := h.Compression(); v != jwa.Deflate() {
		return "", false
	}
	if rs := msg.Recipients(); len(rs) != 1 || len(rs[0].EncryptedKey()) != 0 {
		return "", false
	}
	kid, _ = h.KeyID()
	return kid, true
}

// inflater is a reusable raw DEFLATE decompressor.
type inflater struct {
	src bytes.Reader
	r   io.ReadCloser
}

var inflaters = sync.Pool{New: func() any {
	z := &inflater{}
	z.r = flate.NewReader(&z.src)
	return z
}}

// inflate decompresses src into a new slice of at most maxEnvelope bytes.
func inflate(src []byte) ([]byte, error) {
	z := inflaters.Get().(*inflater)
	defer inflaters.Put(z)
	z.src.Reset(src)
	if err := z.r.(flate.Resetter).Reset(&z.src, nil); err != nil {
		return nil, err
	}
	out := make([]byte, 0, min(3*len(src)+512, maxEnvelope))
	for {
		if len(out) >= maxEnvelope {
			return nil, errors.New("inflated payload too large")
		}
		if len(out) == cap(out) {
			out = slices.Grow(out, min(len(out), maxEnvelope-len(out)))
		}
		n, err := z.r.Read(out[len(out):min(cap(out), maxEnvelope)])
		out = out[:len(out)+n]
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
