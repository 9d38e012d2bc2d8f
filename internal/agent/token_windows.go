package agent

import "io/fs"

// openNonBlock: Windows has no FIFOs to wait on.
const openNonBlock = 0

// othersMay has nothing to say on Windows, whose file modes do not tell who may read a file
// (its ACLs do).
func othersMay(fs.FileInfo) string { return "" }
