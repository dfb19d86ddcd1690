package auth

// CachedBytes returns the weight of u's tokens in the cache, and of all.
func (a *Authenticator) CachedBytes(u User) (user, total int64) {
	return a.cache.bytes(u)
}
