package sessions

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"

	"github.com/ltiop/ltiop/internal/keyring"
)

// Sealing and opening our own tokens without jwx's generic machinery: the protected
// header of every (key, purpose) is encoded once per key set, and each key's AES-256-GCM
// is made once, so a seal is a deflate, one AES-GCM pass and three base64 encodings. The
// tokens are the same compact JWE as jwx makes (jwe.Decrypt opens them; tests check), and
// tokens whose header is spelt otherwise still open through jwx (OpenToken).

// gcmIVSize and gcmTagSize are A256GCM's IV and tag lengths (RFC 7518 §5.3).
const (
	gcmIVSize  = 12
	gcmTagSize = 16
)

var b64 = base64.RawURLEncoding

// sealers is what a key set needs made once: for each key its cipher and encoded headers,
// and for each encoded header the key and purpose it stands for.
type sealers struct {
	byKID    map[string]*sealer
	byHeader map[string]headerOf
}

// ours returns what an encoded protected header names, if it is one of the set's (the
// empty set has no sealers).
func (s *sealers) ours(header string) (headerOf, bool) {
	if s == nil {
		return headerOf{}, false
	}
	h, ok := s.byHeader[header]
	return h, ok
}

// sealer is one key's AES-256-GCM and the encoded protected header of each known purpose.
type sealer struct {
	aead    cipher.AEAD
	headers map[string][]byte
}

// headerOf is what an encoded protected header of ours names.
type headerOf struct {
	kid, purpose string
	aead         cipher.AEAD
}

// prepareSealers makes the sealers of a key set.
func prepareSealers(keys []keyring.SealingKey) (*sealers, error) {
	s := &sealers{byKID: make(map[string]*sealer, len(keys)), byHeader: make(map[string]headerOf, len(keys)*len(knownPurposes))}
	for _, key := range keys {
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sl := &sealer{aead: aead, headers: make(map[string][]byte, len(knownPurposes))}
		for _, p := range knownPurposes {
			h := encodedHeader(key.ID, p)
			sl.headers[p] = h
			s.byHeader[string(h)] = headerOf{kid: key.ID, purpose: p, aead: aead}
		}
		s.byKID[key.ID] = sl
	}
	return s, nil
}

// encodedHeader is the protected header of a token of purpose sealed with key kid,
// base64url as it starts the token (and as the AAD). The JSON is byte for byte what jwx
// writes (members sorted); kid and purpose need no escaping (keyring.ValidID, validPurpose).
func encodedHeader(kid, purpose string) []byte {
	json := `{"alg":"dir","enc":"A256GCM","kid":"` + kid + `","typ":"` + typPrefix + purpose + `","zip":"DEF"}`
	return b64.AppendEncode(nil, []byte(json))
}

// appendCompact appends the compact JWE of plaintext (already deflated) under header:
// header..iv.ciphertext.tag, the encrypted key empty as "dir" wants. scratch is a
// buffer for the ciphertext; the grown buffer is returned with the token.
func appendCompact(dst []byte, header []byte, aead cipher.AEAD, plaintext, scratch []byte) (token, grown []byte) {
	var iv [gcmIVSize]byte
	_, _ = rand.Read(iv[:]) // crypto/rand.Read never fails (it crashes the program instead)
	sealed := aead.Seal(scratch[:0], iv[:], plaintext, header)
	ct, tag := sealed[:len(sealed)-gcmTagSize], sealed[len(sealed)-gcmTagSize:]
	dst = append(dst, header...)
	dst = append(dst, '.', '.')
	dst = b64.AppendEncode(dst, iv[:])
	dst = append(dst, '.')
	dst = b64.AppendEncode(dst, ct)
	dst = append(dst, '.')
	dst = b64.AppendEncode(dst, tag)
	return dst, sealed
}

// compactLen is the length of the token appendCompact makes.
func compactLen(header []byte, plaintext int) int {
	return len(header) + 2 + b64.EncodedLen(gcmIVSize) + 1 + b64.EncodedLen(plaintext) + 1 + b64.EncodedLen(gcmTagSize)
}

// openCompact decrypts a token of compactShape whose header (token[:dot]) is one of ours
// for aead. The encrypted key must be empty and the IV and tag of A256GCM's sizes.
func openCompact(aead cipher.AEAD, token string, dot int) ([]byte, bool) {
	rest := []byte(token[dot+1:]) // one copy; the parts below are slices of it
	var parts [4][]byte
	for i := range 3 {
		end := bytes.IndexByte(rest, '.')
		if end < 0 {
			return nil, false
		}
		parts[i], rest = rest[:end], rest[end+1:]
	}
	parts[3] = rest
	if len(parts[0]) != 0 || b64.DecodedLen(len(parts[1])) != gcmIVSize || b64.DecodedLen(len(parts[3])) != gcmTagSize {
		return nil, false
	}
	var iv [gcmIVSize]byte
	if _, err := b64.Decode(iv[:], parts[1]); err != nil {
		return nil, false
	}
	buf := make([]byte, b64.DecodedLen(len(parts[2]))+gcmTagSize)
	n, err := b64.Decode(buf, parts[2])
	if err != nil {
		return nil, false
	}
	if _, err := b64.Decode(buf[n:], parts[3]); err != nil {
		return nil, false
	}
	plain, err := aead.Open(buf[:0], iv[:], buf[:n+gcmTagSize], []byte(token[:dot]))
	return plain, err == nil
}
