package testtree

import (
	"fmt"
	"io/fs"
	"syscall"
)

// changeTime is an entry's change time and inode.
func changeTime(info fs.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" ctime=%d.%d ino=%d", st.Ctim.Sec, st.Ctim.Nsec, st.Ino)
}
