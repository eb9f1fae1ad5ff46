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
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"
	"github.com/lestrrat-go/jwx/v3/jwe/jwebb"
)

// KeySize is the length of a sealing key: A256GCM takes a 256-bit key.
const KeySize = 32

// MaxTokenLength is the longest token Open looks at; anything longer is ErrInvalid without
// being parsed. An ltik of large launch claims stays well below it.
const MaxTokenLength = 64 << 10

// maxEnvelope bounds the inflated plaintext of a token (a deflate bomb would need our key,
// but the bound costs nothing).
const maxEnvelope = 1 << 20

// typPrefix starts the typ header of every sealed token: typ is "ltiop-" + purpose.
const typPrefix = "ltiop-"

// Key is one sealing key: 32 random bytes for A256GCM, an id, and the time from which it may seal.
type Key struct {
	// ID names the key in the kid header of the tokens it seals.
	ID string
	// Secret is the A256GCM key, KeySize bytes.
	Secret []byte
	// NotBefore is when the key starts sealing. Until then it only opens: every replica
	// learns a new key before any replica seals with it.
	NotBefore time.Time
	// Created is when the key was generated.
	Created time.Time
}

// Keyring seals with the newest key whose NotBefore has passed and opens with any key it holds.
// It is safe for concurrent use; Replace swaps the whole key set atomically. The zero value
// is an empty keyring.
type Keyring struct {
	ring atomic.Pointer[ring]
	// now is the clock of Seal (nil: time.Now); tests replace it.
	now func() time.Time
}

var emptyRing = &ring{}

// load returns the current key set.
func (k *Keyring) load() *ring {
	if r := k.ring.Load(); r != nil {
		return r
	}
	return emptyRing
}

// ring is one immutable key set.
type ring struct {
	keys []*ringKey // in sealing order: NotBefore, then Created, then ID
	byID map[string]*ringKey
}

type ringKey struct {
	id        string
	secret    []byte // private copy, never handed out
	notBefore time.Time
	created   time.Time
	headers   map[string]jwe.Headers // protected headers of the known purposes, read-only
}

var knownPurposes = []string{PurposeLTIK, PurposeServiceKey, PurposeState, PurposeMessageHint, PurposePayload, PurposeDeepLinkReturn}

// protectedHeaders returns the protected header of a token of purpose sealed with key:
// kid, typ and zip ("dir" and "enc" are added by jwx).
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
func NewKeyring(keys []Key) (*Keyring, error) {
	k := &Keyring{}
	r, err := newRing(keys)
	if err != nil {
		return nil, err
	}
	k.ring.Store(r)
	return k, nil
}

// Replace swaps in a new key set. Tokens sealed with a key that is not in keys no longer
// open. An empty key set is refused: keys are retired, never cleared.
func (k *Keyring) Replace(keys []Key) error {
	if len(keys) == 0 {
		return errors.New("sessions: refusing to replace the keyring with no keys")
	}
	r, err := newRing(keys)
	if err != nil {
		return err
	}
	k.ring.Store(r)
	return nil
}

// Ready reports whether the keyring has a key to seal with.
func (k *Keyring) Ready() bool { return len(k.load().keys) > 0 }

// IDs returns the ids of the keys held, in sealing order (the last active one seals).
func (k *Keyring) IDs() []string {
	r := k.load()
	ids := make([]string, len(r.keys))
	for i, key := range r.keys {
		ids[i] = key.id
	}
	return ids
}

func newRing(keys []Key) (*ring, error) {
	r := &ring{keys: make([]*ringKey, 0, len(keys)), byID: make(map[string]*ringKey, len(keys))}
	for i, key := range keys {
		if err := ValidateKey(key); err != nil {
			return nil, fmt.Errorf("sessions: key %d: %w", i, err)
		}
		if _, dup := r.byID[key.ID]; dup {
			return nil, fmt.Errorf("sessions: key %d: duplicate id %q", i, key.ID)
		}
		rk := &ringKey{id: key.ID, secret: bytes.Clone(key.Secret), notBefore: key.NotBefore, created: key.Created,
			headers: make(map[string]jwe.Headers, len(knownPurposes))}
		for _, p := range knownPurposes {
			h, err := protectedHeaders(key.ID, p)
			if err != nil {
				return nil, err
			}
			rk.headers[p] = h
		}
		r.keys = append(r.keys, rk)
		r.byID[key.ID] = rk
	}
	slices.SortFunc(r.keys, func(a, b *ringKey) int {
		return compareKeys(a.notBefore, a.created, a.id, b.notBefore, b.created, b.id)
	})
	return r, nil
}

// SortKeys puts keys in sealing order, the order the keyring uses: by NotBefore, then
// Created, then ID. The last key whose NotBefore has passed is the one that seals.
func SortKeys(keys []Key) {
	slices.SortFunc(keys, func(a, b Key) int {
		return compareKeys(a.NotBefore, a.Created, a.ID, b.NotBefore, b.Created, b.ID)
	})
}

func compareKeys(aNB, aCreated time.Time, aID string, bNB, bCreated time.Time, bID string) int {
	if c := aNB.Compare(bNB); c != 0 {
		return c
	}
	if c := aCreated.Compare(bCreated); c != 0 {
		return c
	}
	return strings.Compare(aID, bID)
}

// sealer returns the key that seals at now: the newest one whose NotBefore has passed. When
// none has (the keyring was just created and this replica's clock is behind the
// controller's), the earliest key seals: there is no older key anyone could prefer.
func (r *ring) sealer(now time.Time) *ringKey {
	for i := len(r.keys) - 1; i >= 0; i-- {
		if !r.keys[i].notBefore.After(now) {
			return r.keys[i]
		}
	}
	if len(r.keys) > 0 {
		return r.keys[0]
	}
	return nil
}

// ValidateKey checks that key can be used in a keyring.
func ValidateKey(key Key) error {
	if !validID(key.ID) {
		return fmt.Errorf("id must be 1 to 64 characters of A-Z a-z 0-9 - _")
	}
	if len(key.Secret) != KeySize {
		return fmt.Errorf("key %s: secret must be %d bytes, not %d", key.ID, KeySize, len(key.Secret))
	}
	if key.NotBefore.IsZero() {
		return fmt.Errorf("key %s: notBefore is missing", key.ID)
	}
	return nil
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
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
// bits, base64url; Open returns it for the replay cache.
func (k *Keyring) Seal(purpose string, payload []byte, ttl time.Duration) (string, error) {
	now := time.Now
	if k.now != nil {
		now = k.now
	}
	return k.sealAt(purpose, payload, ttl, now())
}

func (k *Keyring) sealAt(purpose string, payload []byte, ttl time.Duration, now time.Time) (string, error) {
	if !validPurpose(purpose) {
		return "", fmt.Errorf("sessions: invalid purpose %q", purpose)
	}
	if ttl < time.Second {
		return "", fmt.Errorf("sessions: ttl %v is shorter than a second", ttl)
	}
	key := k.load().sealer(now)
	if key == nil {
		return "", errors.New("sessions: the keyring has no keys yet")
	}
	// exp is rounded up to the second: a token never expires before now+ttl.
	exp := now.Add(ttl)
	expUnix := exp.Unix()
	if exp.Nanosecond() != 0 {
		expUnix++
	}

	z := deflaters.Get().(*deflater)
	defer z.release()
	z.env = appendEnvelope(z.env[:0], purpose, expUnix, now.Unix(), newTokenID(), payload)
	compressed, err := z.deflate()
	if err != nil {
		return "", fmt.Errorf("sessions: compressing: %w", err)
	}

	h := key.headers[purpose]
	if h == nil {
		if h, err = protectedHeaders(key.id, purpose); err != nil {
			return "", err
		}
	}
	// The envelope is already deflated, and "zip":"DEF" is in the protected header: jwx
	// encrypts it as it is, and jwe.Decrypt inflates it like any DEF token. (jwx's own
	// WithCompress allocates a new flate.Writer — about 1.2 MB — per call: 450 µs a seal.)
	// Encrypt does not keep compressed, so z can go back to the pool afterwards.
	tok, err := jwe.Encrypt(compressed,
		jwe.WithKey(jwa.DIRECT(), key.secret),
		jwe.WithContentEncryption(jwa.A256GCM()),
		jwe.WithProtectedHeaders(h),
	)
	if err != nil {
		return "", fmt.Errorf("sessions: sealing: %w", err)
	}
	if len(tok) > MaxTokenLength {
		return "", fmt.Errorf("sessions: the sealed token would be %d bytes, more than Open accepts (%d)", len(tok), MaxTokenLength)
	}
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
// BestSpeed, jwx's level: a 4 KB claim set compresses to about 40% in ~30 µs.
type deflater struct {
	env []byte
	out bytes.Buffer
	w   *flate.Writer
}

var deflaters = sync.Pool{New: func() any {
	z := &deflater{}
	z.w, _ = flate.NewWriter(&z.out, flate.BestSpeed) // only fails on a bad level
	return z
}}

// release returns z to the pool, unless a large payload made its buffers large.
func (z *deflater) release() {
	if cap(z.env) <= MaxTokenLength && z.out.Cap() <= MaxTokenLength {
		deflaters.Put(z)
	}
}

// deflate compresses z.env. The result is z's buffer: valid until z goes back to the pool.
func (z *deflater) deflate() ([]byte, error) {
	z.out.Reset()
	z.w.Reset(&z.out)
	if _, err := z.w.Write(z.env); err != nil {
		return nil, err
	}
	if err := z.w.Close(); err != nil {
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
	if end <= 0 || !validID(string(s[:end])) {
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
	ID       string // the token id (jti): feed it to a ReplayCache with Expires
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
// remembered by a ReplayCache until Expires.
//
// jwx parses the token (jwe.Parse) and decrypts it (the A256GCM content cipher of jwx's
// jwebb building blocks, with the protected header as transmitted as the AAD, as
// RFC 7516 §5.2 says); the header is checked first and the DEF payload is inflated here
// with a reused decompressor. This is what jwe.Decrypt does, without what it costs on
// every call: a new 40 KB decompressor, header clones and merges (70 µs instead of ~35 µs
// for a 4 KB ltik). Every token Seal makes also opens with jwe.Decrypt (see the tests).
func (k *Keyring) OpenToken(purpose string, token string, now time.Time) (Opened, error) {
	if len(token) > MaxTokenLength || !validPurpose(purpose) || !compactShape(token) {
		return Opened{}, ErrInvalid
	}
	dot := strings.IndexByte(token, '.')
	msg, err := jwe.ParseString(token)
	if err != nil {
		return Opened{}, ErrInvalid
	}
	key := k.load().keyFor(msg, typPrefix+purpose)
	if key == nil {
		return Opened{}, ErrInvalid
	}
	compressed, err := a256gcm.Decrypt(key.secret, msg.InitializationVector(), msg.CipherText(), msg.Tag(), []byte(token[:dot]))
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
	return o, nil
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

// a256gcm is jwx's A256GCM content cipher. It holds no state: one serves every call.
var a256gcm = func() interface {
	Decrypt(cek, iv, ciphertext, tag, aad []byte) ([]byte, error)
} {
	c, err := jwebb.CreateContentCipher(jwa.A256GCM().String())
	if err != nil {
		panic(fmt.Sprintf("sessions: jwx has no A256GCM: %v", err))
	}
	return c
}()

// keyFor returns the key that opens msg if its header is one Seal writes for typ: alg dir,
// enc A256GCM, zip DEF, no encrypted key, no crit, and the kid of a key held.
func (r *ring) keyFor(msg *jwe.Message, typ string) *ringKey {
	h := msg.ProtectedHeaders()
	if h == nil || h.Has(jwe.CriticalKey) {
		return nil
	}
	if v, _ := h.Type(); v != typ {
		return nil
	}
	if v, _ := h.Algorithm(); v != jwa.DIRECT() {
		return nil
	}
	if v, _ := h.ContentEncryption(); v != jwa.A256GCM() {
		return nil
	}
	if v, _ := h.Compression(); v != jwa.Deflate() {
		return nil
	}
	if rs := msg.Recipients(); len(rs) != 1 || len(rs[0].EncryptedKey()) != 0 {
		return nil
	}
	kid, _ := h.KeyID()
	return r.byID[kid]
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
