package scriptcheck

// HasRule is hasRule, for the package's external tests.
var HasRule = hasRule
