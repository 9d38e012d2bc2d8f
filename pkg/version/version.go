// Package version holds the build's identity, set by the linker at release time.
package version

import "runtime"

// Set with -ldflags "-X github.com/kubectl-netbench/kubectl-netbench/pkg/version.Version=…".
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
)

// DefaultImageRepo is where released agent images live; the image tag is the plugin version.
const DefaultImageRepo = "ghcr.io/kubectl-netbench/agent"

// AgentImage is the agent image this build of the plugin uses by default: exactly its own version.
func AgentImage() string { return DefaultImageRepo + ":" + Version }

// GoVersion is the Go toolchain the binary was built with.
func GoVersion() string { return runtime.Version() }
