package scriptcheck

// HasRule is hasRule, for the package's external tests.
var HasRule = hasRule

// TextsBuilt is how many times c wrote a docs' definitions text.
func TextsBuilt(c *Checker) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built
}
