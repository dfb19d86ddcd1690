package auth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// User is the identity a verified token names: its subject, as its issuer
// knows it. Two tokens name the same user exactly when both fields are
// equal. User is comparable, so it can key a map.
type User struct {
	Issuer  string
	Subject string
}

// MaxDirNameBytes bounds DirName: far below the 255 bytes most file systems
// allow in one name (eCryptfs allows 143).
const MaxDirNameBytes = 128

// The prefixes of DirName's two forms, which keep the forms apart.
const (
	readablePrefix = "u."
	hashedPrefix   = "h."
)

// DirName returns a name for the user's own directory (the hosted mode's
// io directory is <dir>/<DirName>) that no other user can ever get:
//
//   - "u." + escape(Subject) + "." + escape(Issuer) when that fits in
//     MaxDirNameBytes. escape keeps a-z, 0-9 and '-' and writes every other
//     byte as '_' and two lowercase hex digits, so the name can be decoded
//     back (ParseDirName) and two users cannot share it; it holds no upper
//     case letter, so case-insensitive file systems keep users apart too.
//   - otherwise "h." + the hex SHA-256 of both fields, each preceded by its
//     length: 66 bytes, distinct from every name of the first form by its
//     prefix, and from other long identities by SHA-256's collision
//     resistance.
//
// Either form is one path component of safe bytes: never empty, ".", ".."
// or a name with a slash, a NUL or a leading dot.
func (u User) DirName() string {
	sub, iss := escapeName(u.Subject), escapeName(u.Issuer)
	if len(readablePrefix)+len(sub)+1+len(iss) <= MaxDirNameBytes {
		return readablePrefix + sub + "." + iss
	}
	h := sha256.New()
	var n [8]byte
	for _, field := range []string{u.Subject, u.Issuer} {
		binary.BigEndian.PutUint64(n[:], uint64(len(field)))
		h.Write(n[:])
		h.Write([]byte(field))
	}
	return hashedPrefix + hex.EncodeToString(h.Sum(nil))
}

// ParseDirName returns the user a readable DirName names; ok is false for a
// hashed name or anything DirName does not produce.
func ParseDirName(name string) (u User, ok bool) {
	rest, found := strings.CutPrefix(name, readablePrefix)
	if !found || len(name) > MaxDirNameBytes {
		return User{}, false
	}
	sub, iss, found := strings.Cut(rest, ".")
	if !found {
		return User{}, false
	}
	if u.Subject, ok = unescapeName(sub); !ok {
		return User{}, false
	}
	if u.Issuer, ok = unescapeName(iss); !ok {
		return User{}, false
	}
	return u, true
}

// keptByte reports whether escapeName writes b as itself.
func keptByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-'
}

const hexDigits = "0123456789abcdef"

func escapeName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keptByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

func unescapeName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case keptByte(c):
			b.WriteByte(c)
		case c == '_' && i+2 < len(s) && isLowerHex(s[i+1]) && isLowerHex(s[i+2]):
			d := byte(strings.IndexByte(hexDigits, s[i+1])<<4 | strings.IndexByte(hexDigits, s[i+2]))
			if keptByte(d) {
				return "", false // escapeName never escapes it: not a name it wrote
			}
			b.WriteByte(d)
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func isLowerHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}

// userKey is the context key of the authenticated user.
type userKey struct{}

// WithUser returns a context that carries u, as the middleware does for
// every request it lets through.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user the request context carries; ok is false when
// the request was not authenticated (no middleware, or hosted mode without
// authentication).
func UserFrom(ctx context.Context) (u User, ok bool) {
	u, ok = ctx.Value(userKey{}).(User)
	return u, ok
}

// claimsKey is the context key of the authenticated token's claims.
type claimsKey struct{}

// WithClaims returns a context that carries a verified token's claims.
func WithClaims(ctx context.Context, c Claims) context.Context {
	return context.WithValue(ctx, claimsKey{}, c)
}

// ClaimsFrom returns the claims of the request's verified token, nil when
// there is none.
func ClaimsFrom(ctx context.Context) Claims {
	c, _ := ctx.Value(claimsKey{}).(Claims)
	return c
}
