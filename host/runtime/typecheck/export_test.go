package typecheck

import "github.com/tetratelabs/wazero/api"

// SetBeforeCheck makes c call f with each check's instance before the
// script is written into it.
func SetBeforeCheck(c *Checker, f func(api.Module)) { c.beforeCheck = f }
