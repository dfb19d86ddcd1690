//go:build !unix

package hosted

// fileLimit returns 0: the descriptor limit is not known here.
func fileLimit() uint64 { return 0 }
