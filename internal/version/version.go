// Package version holds the build's identity, set by the linker at release time.
package version

import "runtime"

// Set with -ldflags "-X github.com/kubectl-netbench/kubectl-netbench/internal/version.Version=…".
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
	// AgentDigest pins a release's agent image (the digest hack/agent-image.sh printed for it).
	AgentDigest = ""
)

// DefaultImageRepo is where released agent images live; the image tag is the plugin version.
const DefaultImageRepo = "ghcr.io/kubectl-netbench/agent"

// AgentImage is the agent image this build of the plugin uses by default: exactly its own
// version, pinned by digest in a release (a tag can be moved, a digest cannot).
func AgentImage() string {
	img := DefaultImageRepo + ":" + Version
	if AgentDigest != "" {
		img += "@" + AgentDigest
	}
	return img
}

// GoVersion is the Go toolchain the binary was built with.
func GoVersion() string { return runtime.Version() }
