package sessions

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"
	"github.com/lestrrat-go/jwx/v3/jwe/jwebb"

	"github.com/ltiop/ltiop/internal/keyring"
)

// Sealing our own tokens through jwx's building blocks rather than jwe.Encrypt: every JOSE
// operation is jwx's (the protected headers are jwx's jwe.Headers, marshalled by jwx; the
// content is encrypted by jwx's A256GCM content cipher from jwebb), but what jwe.Encrypt
// redoes on every call is done once per key set: the headers of every (key, purpose) are
// built and encoded once, and the content cipher is made once. A seal is then a deflate,
// one jwx content encryption and the base64 of the three parts it returns. The tokens are
// the compact JWE jwe.Encrypt makes (same header bytes; jwe.Decrypt opens them; tests check).

// gcmIVSize and gcmTagSize are A256GCM's IV and tag lengths (RFC 7518 §5.3).
const (
	gcmIVSize  = 12
	gcmTagSize = 16
)

var b64 = base64.RawURLEncoding

// contentCipher is jwx's content cipher as this package uses it. jwebb.CreateContentCipher
// declares only Decrypt; the value it returns (jwx's AES content cipher) encrypts too, with
// the IV drawn by jwx, and newContentCipher checks that it does.
type contentCipher interface {
	Encrypt(cek, plaintext, aad []byte) (iv, ciphertext, tag []byte, err error)
	Decrypt(cek, iv, ciphertext, tag, aad []byte) ([]byte, error)
}

// newContentCipher returns jwx's A256GCM content cipher.
func newContentCipher() (contentCipher, error) {
	c, err := jwebb.CreateContentCipher(jwa.A256GCM().String())
	if err != nil {
		return nil, fmt.Errorf("jwx has no A256GCM content cipher: %w", err)
	}
	cc, ok := c.(contentCipher)
	if !ok {
		// Only a jwx upgrade can get here; the tests catch it before a release does.
		return nil, fmt.Errorf("jwx's A256GCM content cipher (%T) does not encrypt", c)
	}
	return cc, nil
}

// sealers is what a key set needs made once: jwx's content cipher, and for each key the
// encoded protected header of each known purpose.
type sealers struct {
	cipher  contentCipher
	headers map[string]map[string][]byte // kid -> purpose -> base64url header
	// owned is the reverse of headers: a token that starts with one of these exact bytes
	// carries a header jwx wrote for us, so Open need not parse it again (see openOwn).
	owned map[string]ownedHeader
}

// ownedHeader is the key and purpose an encoded header of ours was made for.
type ownedHeader struct{ kid, purpose string }

// Prepare makes the sealers of a key set.
func (sealingKeys) Prepare(keys []keyring.SealingKey) (*sealers, error) {
	c, err := newContentCipher()
	if err != nil {
		return nil, err
	}
	s := &sealers{cipher: c, headers: make(map[string]map[string][]byte, len(keys)),
		owned: make(map[string]ownedHeader, len(keys)*len(knownPurposes))}
	for _, key := range keys {
		byPurpose := make(map[string][]byte, len(knownPurposes))
		for _, p := range knownPurposes {
			if byPurpose[p], err = encodedHeader(key.ID, p); err != nil {
				return nil, err
			}
			s.owned[string(byPurpose[p])] = ownedHeader{kid: key.ID, purpose: p}
		}
		s.headers[key.ID] = byPurpose
	}
	return s, nil
}

// header returns the encoded protected header of a token of purpose sealed with key kid:
// made once per key set for the known purposes, by jwx on the spot for another one.
func (s *sealers) header(kid, purpose string) ([]byte, error) {
	if h := s.headers[kid][purpose]; h != nil {
		return h, nil
	}
	return encodedHeader(kid, purpose)
}

// encodedHeader is the protected header of a token of purpose sealed with key kid as jwx
// writes it (JSON, then base64url) at the start of the token, which is also the AAD
// (RFC 7516 §5.1). It holds alg and enc as well as what protectedHeaders sets, as the
// header jwe.Encrypt writes does.
func encodedHeader(kid, purpose string) ([]byte, error) {
	h, err := protectedHeaders(kid, purpose)
	if err != nil {
		return nil, err
	}
	if err := h.Set(jwe.AlgorithmKey, jwa.DIRECT()); err != nil {
		return nil, err
	}
	if err := h.Set(jwe.ContentEncryptionKey, jwa.A256GCM()); err != nil {
		return nil, err
	}
	return h.Encode()
}

// appendCompact appends the compact JWE of plaintext (already deflated) under header, the
// content encrypted by jwx's content cipher c with cek: header..iv.ciphertext.tag, the
// encrypted key empty as "dir" wants (RFC 7516 §7.1).
func appendCompact(dst []byte, c contentCipher, cek, header, plaintext []byte) ([]byte, error) {
	iv, ct, tag, err := c.Encrypt(cek, plaintext, header)
	if err != nil {
		return nil, err
	}
	if len(iv) != gcmIVSize || len(tag) != gcmTagSize {
		return nil, errors.New("jwx's A256GCM returned an IV or a tag of another size")
	}
	dst = append(dst, header...)
	dst = append(dst, '.', '.')
	dst = b64.AppendEncode(dst, iv)
	dst = append(dst, '.')
	dst = b64.AppendEncode(dst, ct)
	dst = append(dst, '.')
	return b64.AppendEncode(dst, tag), nil
}

// compactLen is the length of the token appendCompact makes.
func compactLen(header []byte, plaintext int) int {
	return len(header) + 2 + b64.EncodedLen(gcmIVSize) + 1 + b64.EncodedLen(plaintext) + 1 + b64.EncodedLen(gcmTagSize)
}

// splitOwn splits a token of ours with a header made by sealingKeys.Prepare: header..iv.ct.tag,
// the header one of s.owned's exact bytes. It reports false for any other token, which
// then goes through jwe.Parse and sealedByUs: the header bytes are authenticated as the
// AAD, so recognising them byte for byte accepts exactly the headers jwx wrote for us, and
// skips jwx's generic header decoding (most of what opening a small token cost). token has
// passed compactShape: five parts of canonical base64url.
func (s *sealers) splitOwn(token []byte) (h ownedHeader, aad, iv, ct, tag []byte, ok bool) {
	aad, rest, _ := bytes.Cut(token, []byte{'.'})
	if h, ok = s.owned[string(aad)]; !ok {
		return h, nil, nil, nil, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte{'.'}); !ok { // "dir": no encrypted key
		return h, nil, nil, nil, nil, false
	}
	ivPart, rest, _ := bytes.Cut(rest, []byte{'.'})
	ctPart, tagPart, _ := bytes.Cut(rest, []byte{'.'})
	if b64.DecodedLen(len(ivPart)) != gcmIVSize || b64.DecodedLen(len(tagPart)) != gcmTagSize {
		return h, nil, nil, nil, nil, false
	}
	// One buffer for the three parts: the cipher reads them and keeps none.
	buf := make([]byte, 0, gcmIVSize+gcmTagSize+b64.DecodedLen(len(ctPart)))
	var err error
	for _, part := range [][]byte{ivPart, tagPart, ctPart} {
		if buf, err = b64.AppendDecode(buf, part); err != nil {
			return h, nil, nil, nil, nil, false
		}
	}
	return h, aad, buf[:gcmIVSize], buf[gcmIVSize+gcmTagSize:], buf[gcmIVSize : gcmIVSize+gcmTagSize], true
}
