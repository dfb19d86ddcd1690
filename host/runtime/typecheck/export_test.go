package typecheck

import "github.com/tetratelabs/wazero/api"

// SetBeforeCheck makes c call f with each check's instance before the
// script is written into it.
func SetBeforeCheck(c *Checker, f func(api.Module)) { c.beforeCheck = f }

// SetBeforeLoad makes c call f in each load of definitions, before the
// definitions are written into the loader instance.
func SetBeforeLoad(c *Checker, f func()) { c.beforeLoad = f }
