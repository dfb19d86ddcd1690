//go:build unix

package sandboxio

import "golang.org/x/sys/unix"

// writable reports whether this process can create entries in dir, without
// creating any: access(2), which sees permissions and read-only mounts.
func writable(dir string) error {
	return unix.Access(dir, unix.W_OK|unix.X_OK)
}
