package auth

import (
	"crypto/sha256"
	"iter"
	"maps"
	"sync"
	"time"
)

// tokenCache remembers the tokens that passed every check, by the SHA-256
// of their text, so that the signature of a client's token is checked once
// and not with every request it sends (a signature check costs 75 µs to
// 2 ms on a small machine; a lookup, a few µs). Only the very same token
// hits; an entry lasts until the token expires (with the leeway) or ttl
// passes, whichever is first, so that a key withdrawn from the issuer
// stops working within ttl.
//
// It is bounded in entries (max), and in weight (entryWeight: the memory
// an entry and its decoded claims hold), in all (maxBytes) and per user
// (maxUserBytes), so that its worst case is maxBytes whatever the issuer
// puts in a token, and one user's tokens cannot push out the others'.
// Past a bound, expired entries go first, then arbitrary ones (Go's map
// order), of the user when it is the user's bound, down to three quarters
// of it; an entry heavier than a user's bound is not kept.
type tokenCache struct {
	mu      sync.Mutex
	entries map[tokenKey]*cachedToken
	byUser  map[User]*userEntries
	// weight is the weight of all entries.
	weight                 int64
	max                    int
	maxBytes, maxUserBytes int64
	ttl                    time.Duration
}

type tokenKey = [sha256.Size]byte

type cachedToken struct {
	user   User
	claims Claims
	until  time.Time
	weight int64
}

// userEntries are the keys of one user's entries, and their weight.
type userEntries struct {
	keys   map[tokenKey]struct{}
	weight int64
}

func newTokenCache(max int, maxBytes, maxUserBytes int64, ttl time.Duration) *tokenCache {
	if max <= 0 {
		return nil
	}
	return &tokenCache{entries: make(map[tokenKey]*cachedToken), byUser: make(map[User]*userEntries),
		max: max, maxBytes: maxBytes, maxUserBytes: min(maxUserBytes, maxBytes), ttl: ttl}
}

// get returns the user and claims of a cached token that is still valid at now.
func (c *tokenCache) get(token string, now time.Time) (User, Claims, bool) {
	if c == nil {
		return User{}, nil, false
	}
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return User{}, nil, false
	}
	if !now.Before(e.until) {
		c.remove(key)
		return User{}, nil, false
	}
	return e.user, e.claims, true
}

// put remembers a token that passed, valid until the earlier of expires
// and now+ttl, making room as the bounds want.
func (c *tokenCache) put(token string, u User, claims Claims, expires, now time.Time) {
	if c == nil {
		return
	}
	weight := entryWeight(u, claims)
	if weight > c.maxUserBytes {
		return
	}
	until := now.Add(c.ttl)
	if expires.Before(until) {
		until = expires
	}
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	userWeight := func() int64 {
		if mine := c.byUser[u]; mine != nil {
			return mine.weight
		}
		return 0
	}
	if mine := c.byUser[u]; mine != nil && mine.weight+weight > c.maxUserBytes {
		c.evict(maps.Keys(mine.keys), now,
			func() bool { return userWeight()+weight <= c.maxUserBytes },
			func() bool { return userWeight()+weight <= c.maxUserBytes*3/4 })
	}
	if len(c.entries) >= c.max || c.weight+weight > c.maxBytes {
		c.evict(maps.Keys(c.entries), now,
			func() bool { return len(c.entries) < c.max && c.weight+weight <= c.maxBytes },
			func() bool { return len(c.entries) < c.max*3/4 && c.weight+weight <= c.maxBytes*3/4 })
	}
	c.entries[key] = &cachedToken{user: u, claims: claims, until: until, weight: weight}
	c.weight += weight
	mine := c.byUser[u]
	if mine == nil {
		mine = &userEntries{keys: map[tokenKey]struct{}{}}
		c.byUser[u] = mine
	}
	mine.keys[key] = struct{}{}
	mine.weight += weight
}

// evict removes, of the entries keys names, the expired ones; then, unless
// that fits, arbitrary ones until enough. c.mu is held.
func (c *tokenCache) evict(keys iter.Seq[tokenKey], now time.Time, fits, enough func() bool) {
	var live []tokenKey
	for k := range keys {
		if now.Before(c.entries[k].until) {
			live = append(live, k)
		} else {
			c.remove(k)
		}
	}
	if fits() {
		return
	}
	for _, k := range live {
		if enough() {
			return
		}
		c.remove(k)
	}
}

// remove forgets the entry of key, if any. c.mu is held.
func (c *tokenCache) remove(key tokenKey) {
	e, ok := c.entries[key]
	if !ok {
		return
	}
	delete(c.entries, key)
	c.weight -= e.weight
	mine := c.byUser[e.user]
	delete(mine.keys, key)
	if mine.weight -= e.weight; len(mine.keys) == 0 {
		delete(c.byUser, e.user)
	}
}

// len returns the number of entries.
func (c *tokenCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// bytes returns the weight of u's entries, and of all.
func (c *tokenCache) bytes(u User) (user, total int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if mine := c.byUser[u]; mine != nil {
		user = mine.weight
	}
	return user, c.weight
}

// The weight of an entry: what it holds in memory, by an estimate that
// is never less than what encoding/json's decoding of a token's claims
// holds (TestWeighCoversDecodedClaims measures the shapes that cost the
// most a byte: objects of one member nested or side by side, empty
// objects and arrays, short strings, numbers, objects just past a
// growth of their table). A value costs what it allocates: an object its
// table (emptyMapBytes, smallMapBytes up to smallMapMembers members, else
// mapBytes and mapMemberBytes a member) and its members' names, an array
// sliceBytes and sliceValueBytes an element (its slot, with room to
// grow), a string stringBytes and its bytes, a number scalarBytes; an
// entry itself costs entryBytes.
const (
	entryBytes      = 256
	emptyMapBytes   = 64
	smallMapBytes   = 352
	smallMapMembers = 8
	mapBytes        = 256
	mapMemberBytes  = 96
	sliceBytes      = 48
	sliceValueBytes = 32
	stringBytes     = 16
	scalarBytes     = 8
)

// entryWeight is the weight of an entry for u with claims.
func entryWeight(u User, claims Claims) int64 {
	return entryBytes + int64(len(u.Issuer)+len(u.Subject)) + weigh(map[string]any(claims))
}

// weigh is the weight of a value decoded from JSON into Go's generic
// values.
func weigh(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		var w int64
		switch n := len(v); {
		case n == 0:
			w = emptyMapBytes
		case n <= smallMapMembers:
			w = smallMapBytes
		default:
			w = mapBytes + mapMemberBytes*int64(n)
		}
		for name, member := range v {
			w += allocated(len(name)) + weigh(member)
		}
		return w
	case []any:
		w := int64(sliceBytes)
		for _, e := range v {
			w += sliceValueBytes + weigh(e)
		}
		return w
	case string:
		return stringBytes + allocated(len(v))
	default:
		return scalarBytes
	}
}

// allocated is what n bytes take on the heap: a multiple of 8.
func allocated(n int) int64 { return int64((n + 7) &^ 7) }
